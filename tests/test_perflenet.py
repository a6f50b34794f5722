"""A replay folds a convolution into the relu + max pooling that alone reads its output (issue
19, LeNet-5 step): for the 2x2 / stride 2 pooling one C pass computes the convolution block by
block and relus and pools each block's rows while they are in cache (_conv2d_relu_max_pool2d_fused),
keeping relu's gradient test as a byte per window; other poolings run the two steps' kernels in
turn.  Either way the fused step equals the separate ones bit for bit, values and gradients,
float32 and float64, over calls with changing inputs."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _core
from tapegrad.nn import _pool_ops
from tapegrad.nn._conv_ops import Geometry, _geom_tuple


def _bits(a):
    a = np.asarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _conv_geom(N, C, H, W, k, pad, stride, groups=1):
    Ho, Wo = (H + 2 * pad - k) // stride + 1, (W + 2 * pad - k) // stride + 1
    g = Geometry((H, W), (Ho, Wo), (k, k), (stride, stride), (pad,) * 4, (1, 1), groups)
    return g, _geom_tuple(g, N, C)


# (N, C, H, W, O, k, pad, stride, groups): LeNet's two layers (smaller batch), odd output sizes
# (the pooling drops a row and a column), widths below one vector (masked tails), a strided and
# a grouped convolution, and one whose K is large enough that a block holds fewer rows than the
# plane (rows rounded down to an even count, and to 2 from 3)
SHAPES = [(4, 1, 28, 28, 6, 5, 2, 1, 1), (4, 6, 14, 14, 16, 5, 0, 1, 1),
          (3, 2, 11, 9, 5, 3, 1, 1, 1), (2, 3, 13, 7, 4, 2, 0, 2, 1),
          (2, 4, 9, 12, 6, 3, 0, 1, 2), (2, 16, 12, 29, 3, 5, 0, 1, 1),
          (2, 16, 13, 34, 5, 5, 0, 1, 1), (1, 1, 2, 2, 1, 1, 0, 1, 1)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_fused_kernel_equals_conv_then_relu_pool(dtype, shape):
    N, C, H, W, O, k, pad, stride, groups = shape
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal((N, C, H, W)).astype(dtype)
    w = rng.standard_normal((O, C // groups, k, k)).astype(dtype)
    b = rng.standard_normal(O).astype(dtype)
    g, geom = _conv_geom(N, C, H, W, k, pad, stride, groups)
    Ho, Wo = g.out_hw
    pool = (N, O, Ho, Wo, Ho // 2, Wo // 2, 2, 2, 2, 2, 0, 0, 1, 1)
    for bias in (b, None):
        y = _core._conv2d_fused(x, w, bias, geom, groups)
        want_v, want_i = _core._max_pool2d_arrays(y, pool, True)
        got_v, got_i, keep = _core._conv2d_relu_max_pool2d_fused(x, w, bias, geom, groups)
        np.testing.assert_array_equal(_bits(got_v), _bits(want_v))
        np.testing.assert_array_equal(got_i, want_i)
        gy = rng.standard_normal(want_v.shape).astype(dtype)
        want_g = _core._max_pool2d_grad_array(gy, want_i, pool, y)
        got_g = _core._max_pool2d_grad_array(gy, got_i, pool, keep=keep)
        np.testing.assert_array_equal(_bits(got_g), _bits(want_g))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_kernel_special_values(dtype):
    """A 1x1 convolution of weight 1 passes x through, so the pooled windows see NaNs, exact
    zeros, ties and all-negative windows: relu's and the pooling's rules decide the bits."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 10, 13)).astype(dtype)
    x[0, 0, :4, :4] = -1.0                   # all-negative windows: 0 at the first tap, no grad
    x[0, 1, 2:6, 2:6] = 0.0                  # zeros: relu's gradient is 0 there
    x[1, 2, 1, 1] = np.nan
    x[1, 0, 4:6, 6:8] = 2.5                  # a tie: the first tap wins
    x[1, 1, :, 12] = 9.0                     # the dropped last column never wins
    w = np.ones((3, 1, 1, 1), dtype)
    g, geom = _conv_geom(2, 3, 10, 13, 1, 0, 1, 3)
    pool = (2, 3, 10, 13, 5, 6, 2, 2, 2, 2, 0, 0, 1, 1)
    y = _core._conv2d_fused(x, w, None, geom, 3)
    want_v, want_i = _core._max_pool2d_arrays(y, pool, True)
    got_v, got_i, keep = _core._conv2d_relu_max_pool2d_fused(x, w, None, geom, 3)
    np.testing.assert_array_equal(_bits(got_v), _bits(want_v))
    np.testing.assert_array_equal(got_i, want_i)
    assert np.isnan(got_v[1, 2, 0, 0]) and keep[1, 2, 0, 0] == 1
    assert keep[0, 0, 0, 0] == 0 and got_v[0, 0, 0, 0] == 0
    gy = rng.standard_normal(want_v.shape).astype(dtype)
    np.testing.assert_array_equal(
        _bits(_core._max_pool2d_grad_array(gy, got_i, pool, keep=keep)),
        _bits(_core._max_pool2d_grad_array(gy, want_i, pool, y)))


def test_fused_kernel_refusals():
    x = np.ones((1, 1, 4, 4), np.float32)
    w = np.ones((1, 1, 3, 3), np.float32)
    _, geom = _conv_geom(1, 1, 4, 4, 3, 0, 1)         # a 2x2 output: one window
    v, idx, keep = _core._conv2d_relu_max_pool2d_fused(x, w, None, geom, 1)
    assert v.shape == (1, 1, 1, 1) and keep.dtype == np.uint8
    _, small = _conv_geom(1, 1, 3, 4, 3, 0, 1)        # a 1x2 output: no window
    with pytest.raises(ValueError, match="no 2x2 pooling window"):
        _core._conv2d_relu_max_pool2d_fused(x[:, :, :3], w, None, small, 1)
    pool = (1, 1, 2, 2, 1, 1, 2, 2, 2, 2, 0, 0, 1, 1)
    with pytest.raises(ValueError, match="keep mask"):
        _core._max_pool2d_grad_array(v, idx, pool, keep=np.ones(2, np.uint8))
    with pytest.raises(ValueError, match="keep mask"):
        _core._max_pool2d_grad_array(v, idx, pool, keep=keep.astype(np.int8))


# -- the replay's fold ---------------------------------------------------------------------------

def _count_fused_calls(monkeypatch):
    calls = []
    orig = _core._conv2d_relu_max_pool2d_fused

    def spy(*args):
        calls.append(args[0].shape)
        return orig(*args)
    monkeypatch.setattr(_core, "_conv2d_relu_max_pool2d_fused", spy)
    return calls


def _lenet_like(dtype, pool2=None, bias=True, size=13):
    tg.manual_seed(3)
    nn = tg.nn
    model = nn.Sequential(nn.Conv2d(1, 4, 5, padding=2, bias=bias), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(4, 6, 3, bias=bias), nn.ReLU(), pool2 or nn.MaxPool2d(2),
                          nn.Flatten(), nn.LazyLinear(3))
    model(tg.zeros(1, 1, size, size))                 # materialise the lazy head
    return model.to(tg.float32 if dtype == np.float32 else tg.float64)


def _run(model, compiled, xs, x_grad=True):
    def f(x):
        return (model(x) ** 2).sum()
    fn = tg.compile(f) if compiled else f
    outs = []
    for xa in xs:
        x = tg.from_numpy(xa).requires_grad_(x_grad)
        for p in model.parameters():
            p.grad = None
        loss = fn(x)
        loss.backward()
        outs.append([loss.detach().numpy().copy()]
                    + ([x.grad.numpy().copy()] if x_grad else [])
                    + [p.grad.numpy().copy() for p in model.parameters()])
    return outs, fn


def _inputs(dtype, n=4, shape=(3, 1, 13, 13)):
    rng = np.random.default_rng(11)
    xs = []
    for i in range(n):
        x = rng.standard_normal(shape).astype(dtype)
        if i == 2:
            x[0] = -np.abs(x[0]) - 5.0          # a sample whose first relu is zero everywhere
        xs.append(x)
    return xs


def _assert_same(got, want):
    for g, w in zip(got, want):
        assert len(g) == len(w)
        for a, b in zip(g, w):
            np.testing.assert_array_equal(_bits(a), _bits(b))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("x_grad", [True, False])
def test_compiled_lenet_block_equals_eager_bit_for_bit(dtype, bias, x_grad, monkeypatch):
    """13x13 input: the first convolution's 13x13 output pools to 6x6 (a row and a column
    dropped), the second's 4x4 to 2x2; both run the fused pass."""
    calls = _count_fused_calls(monkeypatch)
    xs = _inputs(dtype)
    got, fn = _run(_lenet_like(dtype, bias=bias), True, xs, x_grad)
    want, _ = _run(_lenet_like(dtype, bias=bias), False, xs, x_grad)
    assert fn.stats["replays"] == 3, fn.explain()
    _assert_same(got, want)
    # conv-relu-pool twice, then flatten (re-run), linear, pow, sum
    assert fn.explain().startswith("replayed: 6 steps"), fn.explain()
    assert len(calls) == 2 * 3                   # two layers, three replays


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("pool", [dict(kernel_size=3, stride=2), dict(kernel_size=2, stride=1),
                                  dict(kernel_size=2, ceil_mode=True),
                                  dict(kernel_size=2, padding=1)])
def test_other_poolings_fold_through_the_two_kernels(dtype, pool, monkeypatch):
    """Poolings the fused pass does not compute (15x15 input: the second convolution's output is
    5x5, where ceil_mode keeps a third row and column): the second layer's folded step runs the
    convolution's kernel and then the relu + pooling kernel (the first layer's stays fused)."""
    calls = _count_fused_calls(monkeypatch)
    xs = _inputs(dtype, shape=(3, 1, 15, 15))
    got, fn = _run(_lenet_like(dtype, tg.nn.MaxPool2d(**pool), size=15), True, xs)
    want, _ = _run(_lenet_like(dtype, tg.nn.MaxPool2d(**pool), size=15), False, xs)
    assert fn.stats["replays"] == 3, fn.explain()
    _assert_same(got, want)
    assert fn.explain().startswith("replayed: 6 steps"), fn.explain()
    assert [c[1] for c in calls] == [1, 1, 1]       # the first layer's (1 input channel) only


def test_convolution_read_elsewhere_is_not_folded(monkeypatch):
    calls = _count_fused_calls(monkeypatch)
    tg.manual_seed(0)
    conv = tg.nn.Conv2d(1, 2, 3, padding=1)
    F = tg.nn.functional

    def f(x):
        c = conv(x)
        return F.max_pool2d(F.relu(c), 2).sum() + c.sum(), c
    fn = tg.compile(f)
    rng = np.random.default_rng(2)
    for _ in range(3):
        xa = rng.standard_normal((2, 1, 6, 6)).astype(np.float32)
        x1 = tg.from_numpy(xa).requires_grad_(True)
        x2 = tg.from_numpy(xa).requires_grad_(True)
        l1, c1 = fn(x1)
        l2, c2 = f(x2)
        (l1 + c1.mean()).backward()
        (l2 + c2.mean()).backward()
        np.testing.assert_array_equal(l1.detach().numpy(), l2.detach().numpy())
        np.testing.assert_array_equal(c1.detach().numpy(), c2.detach().numpy())
        np.testing.assert_array_equal(x1.grad.numpy(), x2.grad.numpy())
    assert fn.stats["replays"] == 2, fn.explain()
    assert calls == []


def test_compiled_lenet_step_follows_torch():
    """The compiled LeNet-5 step against PyTorch's: same weights and data, loss and gradients
    to float32 rounding."""
    torch = pytest.importorskip("torch")

    def lenet(lib):                 # bench/test_layers.py's LeNet-5
        nn = lib.nn
        return nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, 10))
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 8)
    tg.manual_seed(0)
    model = lenet(tg)
    ref = lenet(torch)
    ref.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                         for k, v in model.state_dict().items()})
    loss_fn = tg.nn.CrossEntropyLoss()
    fn = tg.compile(lambda a, b: loss_fn(model(a), b))
    for _ in range(2):
        model.zero_grad()
        loss = fn(tg.from_numpy(x), tg.from_numpy(y))
        loss.backward()
    assert fn.stats["replays"] == 1, fn.explain()
    ref_loss = torch.nn.functional.cross_entropy(ref(torch.from_numpy(x)), torch.from_numpy(y))
    ref_loss.backward()
    np.testing.assert_allclose(loss.item(), ref_loss.item(), rtol=1e-5)
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-3, atol=1e-5,
                                   err_msg=name)
