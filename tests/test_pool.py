"""Pooling, interpolation, padding modes, BatchNorm2d and Dropout2d.

With torch: forward values, indices and gradients over tables of configurations (float64 and
float32), error types and key phrases, module reprs, BatchNorm2d's running statistics.  Without
torch: hand-computed values and central differences.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn
from tapegrad.nn import functional as F



def close(actual, desired, dtype):
    """float64 to 1e-10; float32 to 1e-5 of the largest magnitude."""
    desired = np.asarray(desired)
    scale = max(float(np.abs(desired).max()) if desired.size else 1.0, 1.0)
    if dtype == np.float32:
        np.testing.assert_allclose(actual, desired, rtol=1e-4, atol=1e-5 * scale)
    else:
        np.testing.assert_allclose(actual, desired, rtol=1e-10, atol=1e-12 * scale)


@pytest.fixture
def torch(torch):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(threads)


def parity(torch, name, x, kwargs, dtype=np.float64, seed=0):
    """F.<name>(x, **kwargs) in both libraries: output (and indices), gradient of x."""
    x = x.astype(dtype)
    xt = torch.tensor(x, requires_grad=True)
    xg = tg.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yt = getattr(torch.nn.functional, name)(xt, **kwargs)
    yg = getattr(F, name)(xg, **kwargs)
    if isinstance(yt, tuple):
        np.testing.assert_array_equal(yg[1].numpy(), yt[1].numpy())
        assert yg[1].dtype == tg.int64
        yt, yg = yt[0], yg[0]
    assert tuple(yg.shape) == tuple(yt.shape)
    close(yg.detach().numpy(), yt.detach().numpy(), dtype)
    up = np.random.default_rng(seed).standard_normal(tuple(yt.shape)).astype(dtype)
    yt.backward(torch.tensor(up))
    (yg * tg.tensor(up)).sum().backward()
    close(xg.grad.numpy(), xt.grad.numpy(), dtype)


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


MAX_POOL_CASES = [
    ((2, 3, 8, 8), dict(kernel_size=2)),
    ((1, 2, 7, 9), dict(kernel_size=3, stride=2, padding=1)),
    ((2, 2, 9, 7), dict(kernel_size=(3, 2), stride=(2, 1), dilation=(2, 1), ceil_mode=True)),
    ((1, 3, 5, 6), dict(kernel_size=2, stride=2, ceil_mode=True, return_indices=True)),
    ((2, 1, 6, 6), dict(kernel_size=3, stride=1, padding=1, return_indices=True)),   # overlaps
    ((3, 5, 5), dict(kernel_size=2, stride=1)),                                       # unbatched
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape,kw", MAX_POOL_CASES)
def test_max_pool2d_matches_torch(torch, shape, kw, dtype):
    parity(torch, "max_pool2d", _x(*shape), kw, dtype)


@pytest.mark.parametrize("shape,kw", [
    ((2, 3, 9), dict(kernel_size=2)),
    ((1, 2, 10), dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True,
                      return_indices=True)),
    ((3, 7), dict(kernel_size=3, stride=1)),
])
def test_max_pool1d_matches_torch(torch, shape, kw):
    parity(torch, "max_pool1d", _x(*shape), kw)


AVG_POOL_CASES = [
    ((2, 3, 8, 8), dict(kernel_size=2)),
    ((1, 2, 7, 9), dict(kernel_size=3, stride=2, padding=1)),
    ((1, 2, 7, 9), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ((2, 2, 5, 6), dict(kernel_size=(3, 2), stride=2, padding=1, ceil_mode=True)),
    ((2, 2, 5, 6), dict(kernel_size=(3, 2), stride=2, padding=1, ceil_mode=True,
                        count_include_pad=False)),
    ((1, 2, 6, 6), dict(kernel_size=3, stride=1, divisor_override=2)),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape,kw", AVG_POOL_CASES)
def test_avg_pool2d_matches_torch(torch, shape, kw, dtype):
    parity(torch, "avg_pool2d", _x(*shape), kw, dtype)


def test_avg_pool1d_matches_torch(torch):
    parity(torch, "avg_pool1d", _x(2, 3, 9), dict(kernel_size=3, stride=2, padding=1,
                                                 ceil_mode=True, count_include_pad=False))


@pytest.mark.parametrize("name,shape,out", [
    ("adaptive_avg_pool2d", (2, 3, 7, 9), (3, 4)),
    ("adaptive_avg_pool2d", (2, 3, 5, 5), 1),
    ("adaptive_avg_pool2d", (3, 4, 6), (None, 4)),
    ("adaptive_avg_pool1d", (2, 3, 10), 4),
    ("adaptive_max_pool2d", (2, 3, 7, 9), (3, 4)),
    ("adaptive_max_pool1d", (2, 3, 10), 3),
])
def test_adaptive_pools_match_torch(torch, name, shape, out):
    parity(torch, name, _x(*shape), dict(output_size=out))


def test_adaptive_max_pool2d_indices_match_torch(torch):
    parity(torch, "adaptive_max_pool2d", _x(1, 2, 5, 7), dict(output_size=(2, 3),
                                                              return_indices=True))


@pytest.mark.parametrize("kw", [
    dict(scale_factor=2), dict(size=(5, 7)), dict(scale_factor=0.5), dict(size=(3, 10)),
    dict(scale_factor=2, mode="bilinear"), dict(size=(5, 7), mode="bilinear", align_corners=True),
    dict(size=(3, 11), mode="bilinear", align_corners=False),
    dict(scale_factor=1.5, mode="nearest-exact"), dict(size=(3, 2), mode="area"),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_interpolate_matches_torch(torch, kw, dtype):
    parity(torch, "interpolate", _x(2, 3, 4, 6), kw, dtype)


def test_interpolate_linear_1d_matches_torch(torch):
    parity(torch, "interpolate", _x(2, 3, 5), dict(size=8, mode="linear", align_corners=True))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", [((2, 3, 5, 6), (1, 2, 3, 0)), ((2, 3, 5), (2, 1))])
def test_pad_modes_match_torch(torch, mode, shape, pad):
    parity(torch, "pad", _x(*shape), dict(pad=pad, mode=mode))


def test_pool_values_by_hand():
    x = tg.arange(16.0).reshape(1, 1, 4, 4)
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), [[[[5, 7], [13, 15]]]])
    np.testing.assert_array_equal(idx.numpy(), [[[[5, 7], [13, 15]]]])
    np.testing.assert_array_equal(F.avg_pool2d(x, 2).numpy(), [[[[2.5, 4.5], [10.5, 12.5]]]])
    # count_include_pad=False divides the corner window (one real element) by 1.
    np.testing.assert_array_equal(
        F.avg_pool2d(x, 2, stride=2, padding=1, count_include_pad=False).numpy()[0, 0, 0],
        [0.0, 1.5, 3.0])
    np.testing.assert_array_equal(F.adaptive_avg_pool2d(x, 1).numpy(), [[[[7.5]]]])
    up = F.interpolate(tg.tensor([[[1.0, 3.0]]]), size=3, mode="linear", align_corners=True)
    np.testing.assert_array_equal(up.numpy(), [[[1.0, 2.0, 3.0]]])
    np.testing.assert_array_equal(F.pad(tg.tensor([[[1.0, 2.0, 3.0]]]), (2, 1), mode="reflect")
                                  .numpy(), [[[3, 2, 1, 2, 3, 2]]])



@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape,kw", [((2, 3, 6, 8), {}), ((1, 2, 7, 5), {}),
                                      ((1, 2, 7, 5), {"ceil_mode": True})])
def test_max_pool2d_2x2_ties_and_nans_match_torch(torch, dtype, shape, kw):
    """The 2x2 / stride-2 path (odd planes drop or, with ceil_mode, clip the last row/column):
    ties keep the first position, a NaN wins, the last NaN of a window is the one reported."""
    x = np.round(_x(*shape, seed=4)).astype(dtype)      # many ties among small integers
    x.flat[::7] = np.nan
    x.flat[1::11] = np.nan
    xt, xg = torch.tensor(x), tg.tensor(x)
    yt, it = torch.nn.functional.max_pool2d(xt, 2, return_indices=True, **kw)
    yg, ig = F.max_pool2d(xg, 2, return_indices=True, **kw)
    np.testing.assert_array_equal(yg.numpy(), yt.numpy())
    np.testing.assert_array_equal(ig.numpy(), it.numpy())


def _max_pool_matches_torch(torch, x, rng, **kw):
    """max_pool2d of x (values with their signs, indices, a weighted gradient) equals PyTorch's."""
    xt, xg = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
    yt, it = torch.nn.functional.max_pool2d(xt, return_indices=True, **kw)
    yg, ig = F.max_pool2d(xg, return_indices=True, **kw)
    np.testing.assert_array_equal(yg.detach().numpy(), yt.detach().numpy())
    np.testing.assert_array_equal(np.signbit(yg.detach().numpy()), np.signbit(yt.detach().numpy()))
    np.testing.assert_array_equal(ig.numpy(), it.numpy())
    w = rng.standard_normal(yt.shape).astype(x.dtype)
    (yt * torch.tensor(w)).sum().backward()
    (yg * tg.tensor(w)).sum().backward()
    np.testing.assert_array_equal(xg.grad.numpy(), xt.grad.numpy())


def _specials(x, rng, nan=0.05):
    """x with NaNs, -infs and -0.0s sprinkled in (with its small integers: many ties)."""
    pick = rng.random(x.shape)
    x[pick < nan] = np.nan
    x[(pick > 0.3) & (pick < 0.4)] = -np.inf
    x[(pick > 0.5) & (pick < 0.6)] = -0.0
    return x


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_max_pool2d_2x2_vector_and_tail_windows_match_torch(torch, dtype):
    """A row of 11 windows runs the vector form of the 2x2 path (4 float / 2 double windows at
    a time) and the scalar tail: the same values (signed zeros included), indices and gradients
    as PyTorch, with -inf as the first tap, ties of 0.0 and -0.0, and NaNs."""
    rng = np.random.default_rng(7)
    x = _specials(rng.integers(-2, 3, size=(3, 4, 9, 23)).astype(dtype), rng)
    x[0, 0, 0, :4] = [-np.inf, -np.inf, -np.inf, -np.inf]     # a window of -inf only
    x[0, 0, 0, 4:6], x[0, 0, 1, 4:6] = [-0.0, 0.0], [0.0, -0.0]
    _max_pool_matches_torch(torch, x, rng, kernel_size=2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("geom", [dict(kernel_size=3, stride=2, padding=1),
                                  dict(kernel_size=3, stride=1, padding=1, dilation=2),
                                  dict(kernel_size=(2, 3), stride=(1, 3), padding=(0, 1)),
                                  dict(kernel_size=4, stride=1)])
def test_max_pool2d_general_vector_windows_match_torch(torch, dtype, geom):
    """The general path runs the windows wholly inside a row's width 4 (float) / 2 (double) at a
    time and the edge windows one by one: the same values, indices and gradients as PyTorch,
    with -inf, 0.0/-0.0 ties and NaNs."""
    rng = np.random.default_rng(11)
    x = _specials(rng.integers(-2, 3, size=(2, 3, 15, 29)).astype(dtype), rng, nan=0.04)
    _max_pool_matches_torch(torch, x, rng, **geom)


def test_max_pool2d_2x2_ties_and_nans_by_hand():
    x = tg.tensor([[[[1.0, 1.0, float("nan"), 2.0], [0.0, 1.0, 3.0, float("nan")]]]])
    y, i = F.max_pool2d(x, 2, return_indices=True)
    assert y[0, 0, 0, 0].item() == 1.0 and np.isnan(y[0, 0, 0, 1].item())
    np.testing.assert_array_equal(i.numpy(), [[[[0, 7]]]])

def test_max_pool_gradient_goes_to_the_max():
    x = tg.tensor([[[[1.0, 9.0], [3.0, 2.0]]]], requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[[[0, 1], [0, 0]]]])


@pytest.mark.parametrize("fn", [
    lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
    lambda x: F.avg_pool2d(x, (2, 3), stride=(1, 2), padding=1, count_include_pad=False),
    lambda x: F.adaptive_avg_pool2d(x, (2, 3)),
    lambda x: F.adaptive_max_pool2d(x, (3, 2)),
    lambda x: F.interpolate(x, scale_factor=1.7, mode="bilinear"),
    lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"),
])
def test_finite_differences(gradcheck, fn):
    gradcheck(lambda x: fn(x) ** 2, _x(1, 2, 5, 6, seed=5))


def test_pool_second_derivative_matches_torch(torch):
    x = _x(1, 2, 6, 6, seed=2)

    def run(lib):
        f = lib.nn.functional
        xt = lib.tensor(x, requires_grad=True)
        y = f.avg_pool2d(f.max_pool2d(xt, 2, stride=1) ** 2, 2)
        g, = lib.autograd.grad(y.sum(), (xt,), create_graph=True)
        (g * xt).sum().backward()
        return xt.grad.numpy()

    np.testing.assert_allclose(run(tg), run(torch), rtol=1e-12)


ERROR_CASES = [
    (lambda m: m.nn.functional.max_pool2d(m.randn(2, 3, 8, 8), 9),
     RuntimeError, "Output size is too small"),
    (lambda m: m.nn.functional.max_pool2d(m.randn(2, 3, 8, 8), 3, padding=2),
     RuntimeError, "pad should be at most half of effective kernel size"),
    (lambda m: m.nn.functional.avg_pool2d(m.randn(2, 3, 8, 8), 3, padding=2),
     RuntimeError, "pad should be at most half of effective kernel size"),
    (lambda m: m.nn.functional.max_pool2d(m.randn(2, 3, 8, 8), 2, stride=0),
     RuntimeError, "stride should not be zero"),
    (lambda m: m.nn.functional.max_pool2d(m.randn(8, 8), 2),
     RuntimeError, "non-empty 3D or 4D (batch mode) tensor expected for input"),
    (lambda m: m.nn.functional.avg_pool2d(m.randn(2, 3, 8, 8), 2, divisor_override=0),
     RuntimeError, "divisor must be not zero"),
    (lambda m: m.nn.functional.adaptive_avg_pool2d(m.randn(2, 3, 0, 3), 2),
     RuntimeError, "Expected input to have non-zero size for non-batch dimensions"),
    (lambda m: m.nn.functional.interpolate(m.randn(1, 2, 4, 4), mode="nearest"),
     ValueError, "either size or scale_factor should be defined"),
    (lambda m: m.nn.functional.interpolate(m.randn(1, 2, 4, 4), size=4, scale_factor=2),
     ValueError, "only one of size or scale_factor should be defined"),
    (lambda m: m.nn.functional.interpolate(m.randn(2, 4, 4), size=4, mode="bilinear"),
     NotImplementedError, "Got 3D input, but bilinear mode needs 4D input"),
    (lambda m: m.nn.functional.interpolate(m.randn(1, 2, 4, 4), size=4, align_corners=True),
     ValueError, "align_corners option can only be set with the interpolating modes"),
    (lambda m: m.nn.functional.pad(m.randn(1, 2, 3), (3, 3), mode="reflect"),
     RuntimeError, "Padding size should be less than the corresponding input dimension"),
    (lambda m: m.nn.BatchNorm2d(3)(m.randn(3, 4, 4)), ValueError,
     "expected 4D input (got 3D input)"),
    (lambda m: m.nn.BatchNorm2d(3)(m.randn(1, 3, 1, 1)),
     ValueError, "Expected more than 1 value per channel when training"),
    (lambda m: m.nn.functional.dropout2d(m.randn(2, 3, 4, 4), 1.5),
     ValueError, "dropout probability has to be between 0 and 1, but got 1.5"),
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


def test_module_reprs(torch):
    makers = [
        lambda m: m.MaxPool2d(2),
        lambda m: m.MaxPool2d((2, 3), stride=1, padding=1, dilation=2, return_indices=True,
                              ceil_mode=True),
        lambda m: m.MaxPool1d(2), lambda m: m.AvgPool2d(2), lambda m: m.AvgPool1d(3),
        lambda m: m.AvgPool2d(3, divisor_override=2), lambda m: m.AdaptiveAvgPool2d((1, 1)),
        lambda m: m.AdaptiveAvgPool1d(3), lambda m: m.AdaptiveMaxPool2d(2),
        lambda m: m.BatchNorm2d(4), lambda m: m.BatchNorm2d(4, momentum=None, affine=False),
        lambda m: m.Dropout2d(), lambda m: m.Dropout1d(0.2), lambda m: m.Upsample(scale_factor=2),
        lambda m: m.Upsample(size=3, mode="bilinear", align_corners=True),
        lambda m: m.Fold((4, 4), 2), lambda m: m.Flatten(), lambda m: m.Flatten(0, 2),
    ]
    for make in makers:
        assert repr(make(nn)) == repr(make(torch.nn))


def test_modules_match_torch(torch):
    x = _x(2, 3, 9, 8)
    for make in [lambda m: m.MaxPool2d(3, stride=2, ceil_mode=True),
                 lambda m: m.AvgPool2d(2, padding=1), lambda m: m.AdaptiveAvgPool2d((2, 3)),
                 lambda m: m.AdaptiveMaxPool2d(3), lambda m: m.Upsample(scale_factor=2),
                 lambda m: m.Upsample(size=(4, 5), mode="bilinear", align_corners=True),
                 lambda m: m.Flatten(), lambda m: m.Flatten(2)]:
        yg, yt = make(nn)(tg.tensor(x)), make(torch.nn)(torch.tensor(x))
        close(yg.numpy(), yt.numpy(), np.float64)


@pytest.mark.parametrize("kwargs", [dict(), dict(momentum=None), dict(affine=False),
                                    dict(track_running_stats=False), dict(momentum=0.3)])
def test_batchnorm2d_matches_torch(torch, kwargs):
    gm, tm = nn.BatchNorm2d(3, **kwargs).double(), torch.nn.BatchNorm2d(3, **kwargs).double()
    if gm.affine:
        w, b = _x(3, seed=1), _x(3, seed=2)
        gm.load_state_dict({**gm.state_dict(), "weight": tg.tensor(w), "bias": tg.tensor(b)})
        with torch.no_grad():
            tm.weight.copy_(torch.tensor(w))
            tm.bias.copy_(torch.tensor(b))
    for step in range(3):
        x = _x(4, 3, 5, 6, seed=10 + step) * (step + 1) + step
        xg, xt = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        yg, yt = gm(xg), tm(xt)
        close(yg.detach().numpy(), yt.detach().numpy(), np.float64)
        (yg * yg).sum().backward()
        (yt * yt).sum().backward()
        close(xg.grad.numpy(), xt.grad.numpy(), np.float64)
        if gm.affine:
            close(gm.weight.grad.numpy(), tm.weight.grad.numpy(), np.float64)
    for name, buf in tm.named_buffers():
        np.testing.assert_allclose(getattr(gm, name).numpy(), buf.numpy(), rtol=1e-12)
    gm.eval()
    tm.eval()
    x = _x(2, 3, 4, 4, seed=99)
    close(gm(tg.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(), np.float64)


def test_batch_norm_functional_matches_torch(torch):
    x = _x(4, 3, 5, 5)
    rm, rv = np.zeros(3), np.ones(3)
    gm, gv, tm_, tv = tg.tensor(rm), tg.tensor(rv), torch.tensor(rm), torch.tensor(rv)
    yg = F.batch_norm(tg.tensor(x), gm, gv, training=True, momentum=0.2)
    yt = torch.nn.functional.batch_norm(torch.tensor(x), tm_, tv, training=True, momentum=0.2)
    close(yg.numpy(), yt.numpy(), np.float64)
    close(gm.numpy(), tm_.numpy(), np.float64)
    close(gv.numpy(), tv.numpy(), np.float64)


def test_batchnorm2d_normalises_each_channel():
    bn = nn.BatchNorm2d(2)
    # (float32 like the layer's parameters: PyTorch refuses a float64 input for them)
    x = tg.tensor(_x(8, 2, 3, 3) * 5 + 3, dtype=tg.float32)
    y = bn(x).detach().numpy()
    np.testing.assert_allclose(y.mean(axis=(0, 2, 3)), 0, atol=1e-6)
    np.testing.assert_allclose(y.var(axis=(0, 2, 3)), 1, rtol=1e-3)
    assert int(bn.num_batches_tracked.item()) == 1


def test_dropout2d_zeroes_whole_channels_and_scales():
    tg.manual_seed(0)
    x = tg.ones(16, 8, 3, 3)
    y = F.dropout2d(x, 0.5).numpy()
    per_channel = y.reshape(16, 8, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    assert 0.3 < (per_channel[..., 0] == 0).mean() < 0.7
    assert F.dropout2d(x, 0.5, training=False) is x
    drop = nn.Dropout2d(0.5)
    drop.eval()
    np.testing.assert_array_equal(drop(x).numpy(), x.numpy())
    x = tg.ones(2, 4, 3, 3, requires_grad=True)
    y = F.dropout2d(x, 0.25)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())


def test_unused_dims_warn_like_torch():
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(tg.ones(2, 3, 4), 0.5)


def test_max_unpool_matches_torch(torch):
    x = _x(2, 3, 5, 7)
    yt, it = torch.nn.functional.max_pool2d(torch.tensor(x), 2, return_indices=True)
    yg, ig = F.max_pool2d(tg.tensor(x), 2, return_indices=True)
    vt = yt.detach().clone().requires_grad_(True)
    vg = tg.tensor(yg.numpy(), requires_grad=True)
    ut = torch.nn.functional.max_unpool2d(vt, it, 2, output_size=(5, 7))
    ug = F.max_unpool2d(vg, ig, 2, output_size=(5, 7))
    np.testing.assert_array_equal(ug.detach().numpy(), ut.detach().numpy())
    up = _x(2, 3, 5, 7, seed=1)
    ut.backward(torch.tensor(up))
    (ug * tg.tensor(up)).sum().backward()
    np.testing.assert_array_equal(vg.grad.numpy(), vt.grad.numpy())
    y1, i1 = F.max_pool1d(tg.tensor(_x(2, 3, 7)), 2, return_indices=True)
    assert nn.MaxUnpool1d(2)(y1, i1).shape == (2, 3, 6)
    assert repr(nn.MaxUnpool2d(2)) == repr(torch.nn.MaxUnpool2d(2))


@pytest.mark.parametrize("call,exc,phrase", [
    (lambda m, y, i: m.nn.functional.max_unpool2d(y, i * 10, 2), RuntimeError,
     "Found an invalid max index"),
    (lambda m, y, i: m.nn.functional.max_unpool2d(y, i, 2, output_size=(9, 9)), ValueError,
     "must be between 2 and 6"),
    (lambda m, y, i: m.nn.functional.max_unpool2d(y, i[..., :1], 2), RuntimeError,
     "Expected shape of indices to be same as that of the input tensor"),
])
def test_max_unpool_errors(call, exc, phrase):
    y, i = F.max_pool2d(tg.randn(1, 2, 4, 5), 2, return_indices=True)
    with pytest.raises(exc, match=phrase):
        call(tg, y, i)


def test_linear_interpolation_keeps_an_unchanged_axis(torch):
    # PyTorch copies an axis whose size stays the same, whatever scale_factor says.
    parity(torch, "interpolate", _x(1, 2, 3, 4), dict(scale_factor=(1.3, 1.5), mode="bilinear"))
    parity(torch, "interpolate", _x(1, 2, 3), dict(scale_factor=1.3, mode="linear"))


# -- integer average pooling -----------------------------------------------------------------------
# PyTorch's CPU average pools accept int64 (an AvgPool2d over torch.randint images in tutorials):
# the window sum divided in integer arithmetic, truncated toward zero; other integer dtypes and
# bool raise NotImplementedError naming the kernel.

INT_POOL_CASES = [
    (name, kw) for name, nd in (("avg_pool1d", 1), ("avg_pool2d", 2), ("avg_pool3d", 3))
    for kw in ({"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
               {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
               {"kernel_size": 2, "stride": 2, "ceil_mode": True},
               {"kernel_size": 3, "stride": 1, "padding": 1, "divisor_override": 4},
               {"kernel_size": 2, "divisor_override": -3})
    if nd > 1 or "divisor_override" not in kw
]


@pytest.mark.parametrize("name,kw", INT_POOL_CASES)
def test_int64_avg_pool_truncates_like_torch(torch, name, kw):
    nd = int(name[-2])
    rng = np.random.RandomState(nd)
    a = rng.randint(-40, 40, size=(2, 3) + (5,) * nd).astype(np.int64)
    for x in (a, a[0]):      # batched and unbatched
        expected = getattr(torch.nn.functional, name)(torch.from_numpy(x), **kw)
        actual = getattr(F, name)(tg.from_numpy(x), **kw)
        assert actual.dtype == tg.int64
        np.testing.assert_array_equal(actual.numpy(), expected.numpy())


def test_int64_avg_pool_by_hand():
    x = tg.tensor([[[-5, 0, 1, 2], [0, 0, 0, 7]]])
    # windows [-5, 0, 0, 0] and [1, 2, 0, 7]: -5 / 4 truncates to -1, 10 / 4 to 2
    assert F.avg_pool2d(x, 2).tolist() == [[[-1, 2]]]
    assert F.avg_pool1d(x, 2).tolist() == [[[-2, 1], [0, 3]]]
    assert nn.AvgPool2d(2, 2)(x.unsqueeze(0)).dtype == tg.int64


@pytest.mark.parametrize("dtype", ["int32", "int16", "int8", "uint8", "bool"])
def test_other_integer_avg_pools_raise_not_implemented(dtype):
    type_name = {"int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                 "bool": "Bool"}[dtype]
    for name, shape, kernel in (("avg_pool1d", (1, 2, 4), 2), ("avg_pool2d", (1, 1, 4, 4), 2),
                                ("avg_pool3d", (1, 1, 2, 4, 4), (1, 2, 2))):
        kernel_name = "avg_pool3d_out_frame" if name == "avg_pool3d" else "avg_pool2d"
        with pytest.raises(NotImplementedError, match=f'"{kernel_name}" not implemented for '
                                                      f"'{type_name}'"):
            getattr(F, name)(tg.zeros(shape, dtype=getattr(tg, dtype)), kernel)
