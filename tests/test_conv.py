"""Convolutions (F.conv1d/conv2d/conv_transpose1d/conv_transpose2d, nn.Conv*, unfold/fold).

With torch: forward values and the gradients of input, weight and bias over a table of
configurations, in float64 and float32; second derivatives; error types and key phrases; the
modules' repr, init and state dicts; a small LeNet trained a few steps from identical weights.
Without torch: hand-computed values and central differences.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn
from tapegrad.nn import functional as F


@pytest.fixture
def torch(torch):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(threads)


def close(actual, desired, dtype):
    """float64 to 1e-10; float32 to 1e-5 of the largest magnitude (sums of hundreds of products
    in a different order cancel differently)."""
    desired = np.asarray(desired)
    scale = float(np.abs(desired).max()) if desired.size else 1.0
    if dtype == np.float32:
        np.testing.assert_allclose(actual, desired, rtol=1e-4, atol=1e-5 * max(scale, 1.0))
    else:
        np.testing.assert_allclose(actual, desired, rtol=1e-10, atol=1e-12 * max(scale, 1.0))


def parity(torch, name, arrays, kwargs, dtype=np.float64, seed=0):
    """Run F.<name> in both libraries on the same arrays and upstream gradient; compare the
    output and every input's gradient."""
    rng = np.random.default_rng(seed)
    arrays = [a.astype(dtype) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    gs = [tg.tensor(a, requires_grad=True) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # both libraries' note on 'same' with even kernels
        yt = getattr(torch.nn.functional, name)(*ts, **kwargs)
        yg = getattr(F, name)(*gs, **kwargs)
    assert tuple(yg.shape) == tuple(yt.shape)
    assert yg.dtype == getattr(tg, str(yt.dtype).split(".")[1])
    close(yg.detach().numpy(), yt.detach().numpy(), dtype)
    up = rng.standard_normal(tuple(yt.shape)).astype(dtype)
    yt.backward(torch.tensor(up))
    (yg * tg.tensor(up)).sum().backward()
    for g, t in zip(gs, ts):
        close(g.grad.numpy(), t.grad.numpy(), dtype)


def _arrays(xshape, wshape, bias, seed=0):
    rng = np.random.default_rng(seed)
    arrs = [rng.standard_normal(xshape), rng.standard_normal(wshape)]
    if bias:
        arrs.append(rng.standard_normal(bias))
    return arrs


CONV2D_CASES = [
    # (x shape, weight shape, kwargs)
    ((2, 3, 7, 7), (4, 3, 3, 3), {}),
    ((1, 1, 28, 28), (6, 1, 5, 5), {}),
    ((2, 4, 8, 9), (6, 2, 3, 2), dict(stride=2, padding=1, dilation=2, groups=2)),
    ((2, 4, 6, 6), (4, 1, 3, 3), dict(groups=4, padding="same")),           # depthwise
    ((2, 2, 9, 8), (3, 2, 4, 4), dict(padding="same", dilation=2)),          # even kernel
    ((2, 2, 9, 7), (3, 2, 2, 3), dict(stride=(2, 3), padding=(0, 1))),
    ((1, 3, 5, 5), (2, 3, 5, 5), dict(padding="valid")),                     # kernel = input
    ((3, 2, 6, 5), (8, 1, 3, 1), dict(groups=2, stride=(1, 2), dilation=(2, 1))),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("xs,ws,kw", CONV2D_CASES)
def test_conv2d_matches_torch(torch, xs, ws, kw, dtype):
    parity(torch, "conv2d", _arrays(xs, ws, ws[0]), kw, dtype)


def test_conv2d_without_bias_and_unbatched_matches_torch(torch):
    parity(torch, "conv2d", _arrays((2, 3, 6, 6), (4, 3, 3, 3), None), dict(stride=2))
    parity(torch, "conv2d", _arrays((3, 6, 6), (4, 3, 3, 3), 4), dict(padding=1))


@pytest.mark.parametrize("xs,ws,kw", [
    ((2, 3, 10), (4, 3, 3), {}),
    ((1, 4, 11), (6, 2, 3), dict(stride=2, padding=1, dilation=2, groups=2)),
    ((2, 2, 9), (3, 2, 4), dict(padding="same")),
    ((3, 10), (2, 3, 5), dict(stride=3)),                                     # unbatched
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_conv1d_matches_torch(torch, xs, ws, kw, dtype):
    parity(torch, "conv1d", _arrays(xs, ws, ws[0]), kw, dtype)


@pytest.mark.parametrize("xs,ws,kw", [
    ((2, 4, 5, 5), (4, 3, 3, 3), dict(stride=2, padding=1, output_padding=1, groups=2)),
    ((2, 2, 5, 4), (2, 3, 3, 3), dict(stride=3, dilation=2, padding=2, output_padding=1)),
    ((1, 2, 4, 4), (2, 3, 3, 3), dict(stride=2, dilation=3, output_padding=2)),  # op >= stride
    ((2, 3, 3, 3), (3, 2, 2, 2), dict(stride=2)),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_conv_transpose2d_matches_torch(torch, xs, ws, kw, dtype):
    groups = kw.get("groups", 1)
    parity(torch, "conv_transpose2d", _arrays(xs, ws, ws[1] * groups), kw, dtype)


def test_conv_transpose1d_matches_torch(torch):
    parity(torch, "conv_transpose1d", _arrays((2, 3, 5), (3, 2, 3), 2),
           dict(stride=2, padding=1, output_padding=1))


def test_conv2d_values_by_hand():
    # A 1x1x3x3 input, a 2x2 kernel of ones: each output is its window's sum.
    x = tg.arange(9.0).reshape(1, 1, 3, 3)
    w = tg.ones(1, 1, 2, 2)
    out = F.conv2d(x, w, tg.tensor([0.5]))
    np.testing.assert_array_equal(out.numpy(), [[[[8.5, 12.5], [20.5, 24.5]]]])
    # stride 2 with padding 1 reads the corners of the zero-padded image.
    out = F.conv2d(x, w, stride=2, padding=1)
    np.testing.assert_array_equal(out.numpy(), [[[[0.0, 3.0], [9.0, 24.0]]]])
    # conv_transpose2d spreads each input value over a kernel-sized patch.
    up = F.conv_transpose2d(tg.ones(1, 1, 2, 2), tg.ones(1, 1, 2, 2), stride=1)
    np.testing.assert_array_equal(up.numpy(), [[[[1, 2, 1], [2, 4, 2], [1, 2, 1]]]])


@pytest.mark.parametrize("fn,xs,ws,kw", [
    (F.conv2d, (2, 4, 5, 6), (4, 2, 3, 2), dict(stride=2, padding=1, dilation=(1, 2), groups=2)),
    (F.conv1d, (2, 2, 7), (3, 2, 3), dict(padding="same", dilation=2)),
    (F.conv_transpose2d, (1, 2, 3, 3), (2, 2, 2, 3), dict(stride=2, output_padding=1)),
])
def test_conv_finite_differences(gradcheck, fn, xs, ws, kw):
    x, w, b = _arrays(xs, ws, ws[0] if fn is not F.conv_transpose2d else ws[1])
    gradcheck(lambda x, w, b: fn(x, w, b, **kw) ** 2, x, w, b)


def test_conv2d_second_derivative_matches_torch(torch):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 7, 7))
    w = rng.standard_normal((6, 2, 3, 3))
    kw = dict(stride=2, padding=1, groups=2)

    def run(lib, fn):
        xt = lib.tensor(x, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True)
        loss = (fn(xt, wt, **kw) ** 2).sum()
        gx, gw = lib.autograd.grad(loss, (xt, wt), create_graph=True)
        ((gx ** 2).sum() + (gw ** 3).sum() + (gx * xt).sum()).backward()
        return xt.grad.numpy(), wt.grad.numpy()

    for a, b in zip(run(tg, F.conv2d), run(torch, torch.nn.functional.conv2d)):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_conv_transpose2d_second_derivative_matches_torch(torch):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 2, 4, 4))
    w = rng.standard_normal((2, 3, 3, 3))

    def run(lib, fn):
        xt = lib.tensor(x, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True)
        gx, gw = lib.autograd.grad(fn(xt, wt, stride=2).pow(2).sum(), (xt, wt),
                                   create_graph=True)
        ((gx * gx).sum() + (gw * wt).sum()).backward()
        return xt.grad.numpy(), wt.grad.numpy()

    for a, b in zip(run(tg, F.conv_transpose2d), run(torch, torch.nn.functional.conv_transpose2d)):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_plain_backward_records_nothing():
    x = tg.randn(1, 2, 5, 5, requires_grad=True)
    w = tg.randn(3, 2, 3, 3, requires_grad=True)
    gx, = tg.autograd.grad(F.conv2d(x, w).sum(), (x,))
    assert gx.grad_fn is None and not gx.requires_grad


# -- bad input ---------------------------------------------------------------------------------

ERROR_CASES = [
    # (call on a library module, exception type, key phrase)
    (lambda m: m.nn.functional.conv2d(m.randn(2, 3, 8, 8), m.randn(4, 2, 3, 3)),
     RuntimeError, "expected input[2, 3, 8, 8] to have 2 channels, but got 3 channels instead"),
    (lambda m: m.nn.functional.conv2d(m.randn(2, 3, 8, 8), m.randn(4, 3, 9, 9)),
     RuntimeError, "Kernel size can't be greater than actual input size"),
    (lambda m: m.nn.functional.conv2d(m.randn(2, 3, 8, 8), m.randn(4, 3, 3, 3).double()),
     RuntimeError, "should be the same"),
    (lambda m: m.nn.functional.conv2d(m.randn(2, 3, 8, 8), m.randn(4, 3, 3, 3), m.randn(5)),
     RuntimeError, "expected bias to be 1-dimensional with 4 elements"),
    (lambda m: m.nn.functional.conv2d(m.randn(2, 3, 8, 8), m.randn(4, 3, 3, 3), padding=-1),
     RuntimeError, "negative padding is not supported"),
    (lambda m: m.nn.functional.conv2d(m.randn(2, 3, 8, 8), m.randn(4, 3, 3, 3), stride=0),
     RuntimeError, "non-positive stride is not supported"),
    (lambda m: m.nn.functional.conv2d(m.randn(2, 3, 8, 8), m.randn(4, 3, 3, 3), groups=2),
     RuntimeError, "to have 6 channels"),
    (lambda m: m.nn.functional.conv2d(m.randn(2, 3, 8, 8), m.randn(4, 3, 3, 3), stride=2,
                                      padding="same"),
     RuntimeError, "padding='same' is not supported for strided convolutions"),
    (lambda m: m.nn.functional.conv2d(m.randn(2, 3, 8, 8), m.randn(4, 3, 3, 3), padding="foo"),
     RuntimeError, "Invalid padding string: 'foo'"),
    (lambda m: m.nn.functional.conv2d(m.randn(8, 8), m.randn(4, 3, 3, 3)),
     RuntimeError, "Expected 3D (unbatched) or 4D (batched) input to conv2d"),
    (lambda m: m.nn.functional.conv1d(m.randn(2, 3, 8, 8), m.randn(4, 3, 3)),
     RuntimeError, "Expected 2D (unbatched) or 3D (batched) input to conv1d"),
    (lambda m: m.nn.functional.conv_transpose2d(m.randn(2, 3, 8, 8), m.randn(3, 2, 3, 3),
                                                stride=2, output_padding=2),
     RuntimeError, "output padding must be smaller than either stride or dilation"),
    (lambda m: m.nn.functional.conv_transpose2d(m.randn(2, 3, 8, 8), m.randn(4, 2, 3, 3)),
     RuntimeError, "Given transposed=1, weight of size [4, 2, 3, 3], expected input[2, 3, 8, 8] "
                   "to have 4 channels"),
    (lambda m: m.nn.functional.fold(m.randn(2, 26, 64), (8, 8), 3, padding=1),
     RuntimeError, "to be divisible by the product of kernel_size"),
    (lambda m: m.nn.functional.fold(m.randn(2, 27, 63), (8, 8), 3, padding=1),
     RuntimeError, "match the calculated number of sliding blocks 8 * 8 = 64"),
    (lambda m: m.nn.Conv2d(3, 4, 3, groups=2), ValueError,
     "in_channels must be divisible by groups"),
    (lambda m: m.nn.Conv2d(4, 3, 3, groups=2), ValueError,
     "out_channels must be divisible by groups"),
    (lambda m: m.nn.Conv2d(4, 3, 3, padding="same", stride=2), ValueError,
     "padding='same' is not supported for strided convolutions"),
    (lambda m: m.nn.Conv2d(4, 3, 3, padding_mode="foo"), ValueError, "padding_mode must be one of"),
    (lambda m: m.nn.ConvTranspose2d(4, 3, 3, padding_mode="reflect"), ValueError,
     'Only "zeros" padding mode is supported for ConvTranspose2d'),
    (lambda m: m.nn.ConvTranspose2d(3, 3, 3, stride=2)(m.randn(2, 3, 8, 8), output_size=(20, 20)),
     ValueError, "but valid sizes range from [17, 17] to [18, 18]"),
    (lambda m: m.nn.Conv2d(4, 3, 3, device="cuda"), AssertionError, "not compiled with CUDA"),
]


@pytest.mark.parametrize("case", range(len(ERROR_CASES)))
def test_errors(case):
    call, exc, phrase = ERROR_CASES[case]
    with pytest.raises(exc) as info:
        call(tg)
    assert phrase in str(info.value)


@pytest.mark.parametrize("case", range(len(ERROR_CASES)))
def test_errors_match_torch(torch, case):
    call, exc, phrase = ERROR_CASES[case]
    with pytest.raises(exc) as info:
        call(torch)
    assert phrase in str(info.value)


# -- unfold / fold ------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(kernel_size=3), dict(kernel_size=(2, 3), stride=(2, 1),
                                                          padding=1, dilation=(1, 2))])
def test_unfold_fold_match_torch(torch, kw):
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 6))
    parity(torch, "unfold", [x], kw)
    cols = F.unfold(tg.tensor(x), **kw).numpy()
    parity(torch, "fold", [cols], dict(output_size=(7, 6), **kw))


def test_fold_is_unfold_adjoint(gradcheck):
    x = np.random.default_rng(1).standard_normal((1, 2, 4, 5))
    gradcheck(lambda x: F.unfold(x, 2, padding=1, stride=(1, 2)) ** 2, x)
    cols = F.unfold(tg.ones(1, 1, 3, 3), 2)
    # Each pixel of a 3x3 image is in as many 2x2 windows as fold counts back.
    np.testing.assert_array_equal(F.fold(cols, (3, 3), 2).numpy()[0, 0],
                                  [[1, 2, 1], [2, 4, 2], [1, 2, 1]])


# -- modules ------------------------------------------------------------------------------------

def test_module_reprs():
    assert repr(nn.Conv2d(1, 6, 5)) == "Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))"
    assert repr(nn.Conv2d(3, 6, (3, 5), stride=2, padding=1, dilation=2, groups=3, bias=False,
                          padding_mode="reflect")) == (
        "Conv2d(3, 6, kernel_size=(3, 5), stride=(2, 2), padding=(1, 1), dilation=(2, 2), "
        "groups=3, bias=False, padding_mode=reflect)")
    assert repr(nn.Conv1d(2, 3, 3, padding="same")) == \
        "Conv1d(2, 3, kernel_size=(3,), stride=(1,), padding=same)"
    assert repr(nn.ConvTranspose2d(3, 2, 3, stride=2, output_padding=1)) == \
        "ConvTranspose2d(3, 2, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))"
    assert repr(nn.Unfold(3)) == "Unfold(kernel_size=3, dilation=1, padding=0, stride=1)"


def test_default_init_bounds_and_shapes():
    tg.manual_seed(0)
    conv = nn.Conv2d(4, 8, 3, groups=2)
    assert conv.weight.shape == (8, 2, 3, 3) and conv.bias.shape == (8,)
    bound = 1 / math.sqrt(2 * 3 * 3)            # kaiming_uniform(a=sqrt(5)) = 1/sqrt(fan_in)
    assert np.abs(conv.weight.detach().numpy()).max() <= bound
    assert np.abs(conv.weight.detach().numpy()).max() > 0.8 * bound
    assert np.abs(conv.bias.detach().numpy()).max() <= bound
    convt = nn.ConvTranspose2d(4, 6, 3, groups=2, dtype=tg.float64)
    assert convt.weight.shape == (4, 3, 3, 3) and convt.weight.dtype == tg.float64


@pytest.mark.parametrize("make", [
    lambda m: m.Conv2d(3, 4, 3, stride=2, padding=1),
    lambda m: m.Conv2d(3, 6, 3, groups=3, padding=2, padding_mode="reflect"),
    lambda m: m.Conv2d(3, 4, (3, 2), padding="same", padding_mode="circular"),
    lambda m: m.Conv2d(3, 4, 3, padding=1, padding_mode="replicate", bias=False),
    lambda m: m.Conv1d(3, 4, 3, padding=1, padding_mode="reflect"),
    lambda m: m.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1),
    lambda m: m.ConvTranspose1d(3, 4, 3, stride=2),
])
def test_modules_load_torch_state_dict(torch, make):
    tmod, gmod = make(torch.nn).double(), make(nn)
    gmod.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in tmod.state_dict().items()})
    nd = 1 if "1d" in type(gmod).__name__ else 2
    x = np.random.default_rng(0).standard_normal((2, 3) + (7,) * nd)
    xt = torch.tensor(x, requires_grad=True)
    xg = tg.tensor(x, requires_grad=True)
    yt, yg = tmod(xt), gmod.double()(xg)
    np.testing.assert_allclose(yg.detach().numpy(), yt.detach().numpy(), rtol=1e-10)
    yt.pow(2).sum().backward()
    yg.pow(2).sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(gmod.weight.grad.numpy(), tmod.weight.grad.numpy(), rtol=1e-10)


def test_conv_transpose_output_size(torch):
    gm, tm = nn.ConvTranspose2d(2, 2, 3, stride=2), torch.nn.ConvTranspose2d(2, 2, 3, stride=2)
    assert gm(tg.randn(1, 2, 4, 4), output_size=(10, 10)).shape == (1, 2, 10, 10)
    assert tm(torch.randn(1, 2, 4, 4), output_size=(10, 10)).shape == (1, 2, 10, 10)


class _LeNet:
    """The 60-minute blitz's network, built on either library."""

    @staticmethod
    def build(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = lib.nn.Conv2d(1, 6, 5)
                self.conv2 = lib.nn.Conv2d(6, 16, 5)
                self.fc1 = lib.nn.Linear(16 * 5 * 5, 32)
                self.fc2 = lib.nn.Linear(32, 10)

            def forward(self, x):
                f = lib.nn.functional
                x = f.max_pool2d(f.relu(self.conv1(x)), (2, 2))
                x = f.max_pool2d(f.relu(self.conv2(x)), 2)
                x = lib.flatten(x, 1)
                return self.fc2(f.relu(self.fc1(x)))
        return Net()


def test_lenet_trains_like_torch(torch):
    tg.manual_seed(0)
    gnet = _LeNet.build(tg)
    tnet = _LeNet.build(torch)
    tnet.load_state_dict({k: torch.tensor(v.detach().numpy())
                          for k, v in gnet.state_dict().items()})
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 1, 32, 32)).astype(np.float32)
    y = rng.integers(0, 10, 8)
    for _ in range(4):
        losses = []
        for lib, net in ((tg, gnet), (torch, tnet)):
            net.zero_grad()
            loss = lib.nn.functional.cross_entropy(net(lib.tensor(x)), lib.tensor(y))
            loss.backward()
            with lib.no_grad():         # plain SGD (torch.optim's first import costs seconds)
                for p in net.parameters():
                    p -= 0.05 * p.grad
            losses.append(loss.item())
        assert losses[0] == pytest.approx(losses[1], rel=1e-4)
    assert losses[0] < 2.3


def test_compile_replays_conv_as_eager():
    conv = nn.Conv2d(1, 2, 3, bias=False)
    loss = lambda x: F.max_pool2d(conv(x), 2).sum()
    step = tg.compile(loss)
    for _ in range(3):
        x = tg.randn(2, 1, 8, 8)
        step(x).backward()
        replayed = conv.weight.grad.numpy().copy()
        conv.weight.grad = None
        loss(x).backward()
        assert np.array_equal(conv.weight.grad.numpy(), replayed)
        conv.weight.grad = None
    assert step.stats["replays"] == 2 and step.explain().startswith("replayed")
