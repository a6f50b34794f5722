"""The fused gradient kernels (sin, cos, erf, sqrt, rsqrt, expm1, log1p: one C pass per VJP), the
sweep's reuse of an adjoint buffer (a VJP writes its result into the upstream gradient when
nothing else can see it), and PyTorch's special values of sigmoid where e^-x overflows."""
import tracemalloc

import numpy as np
import pytest

import tapegrad as tg

N = 40_001          # above the kernels' thread split, not a multiple of a vector width

# name: (op, domain, the VJP's formula in separate numpy/tapegrad steps, rounding as PyTorch's)
FUSED = {
    "sin": (tg.sin, (-6, 6), lambda g, x, y: g * tg.cos(tg.tensor(x)).numpy()),
    "cos": (tg.cos, (-6, 6), lambda g, x, y: g * -tg.sin(tg.tensor(x)).numpy()),
    "erf": (tg.erf, (-4, 4), lambda g, x, y: (g * g.dtype.type(2 / np.sqrt(np.pi)))
            * tg.exp(tg.tensor(-(x * x))).numpy()),
    "sqrt": (tg.sqrt, (1e-3, 50), lambda g, x, y: g / (y * 2)),
    "rsqrt": (tg.rsqrt, (1e-3, 50), lambda g, x, y: (g * g.dtype.type(-0.5)) * ((y * y) * y)),
    "expm1": (tg.expm1, (-5, 5), lambda g, x, y: g * (y + 1)),
    "log1p": (tg.log1p, (-0.9, 50), lambda g, x, y: g / (x + 1)),
}


def _inputs(domain, dtype, n=N, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(*domain, n).astype(dtype), rng.standard_normal(n).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(FUSED))
def test_fused_vjp_equals_the_formula_step_by_step(name, dtype):
    fn, domain, formula = FUSED[name]
    x, g = _inputs(domain, dtype)
    t = tg.tensor(x, requires_grad=True)
    y = fn(t)
    (got,) = tg.autograd.grad(y, t, tg.tensor(g))
    want = formula(g, x, y.detach().numpy())
    assert got.dtype == t.dtype
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(FUSED))
def test_fused_vjp_matches_torch(torch, name, dtype):
    fn, domain, _ = FUSED[name]
    x, g = _inputs(domain, dtype, n=1001, seed=1)
    a, b = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fn(a).backward(tg.tensor(g))
    getattr(torch, name)(b).backward(torch.tensor(g))
    tol = 2e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=tol, atol=tol)


def _chain(lib, x, w, cycles=4):
    for _ in range(cycles):
        x = lib.sin(lib.tanh(x * 0.999 + 0.001) * w)
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adjoint_reuse_leaves_the_callers_arrays_alone(dtype):
    """The gradient given to backward, a gradient a hook keeps and a retained graph's second
    backward are never written into."""
    x0, g0 = _inputs((-1, 1), dtype)
    w0 = np.random.default_rng(2).uniform(0.5, 1.5, N).astype(dtype)
    kept = []
    x = tg.tensor(x0, requires_grad=True)
    w = tg.tensor(w0, requires_grad=True)
    h = tg.tanh(x * 0.5)
    h.register_hook(lambda grad: kept.append(grad))
    y = _chain(tg, h, w)
    g = tg.tensor(g0)
    (first,) = tg.autograd.grad(y, x, g, retain_graph=True)
    first = first.numpy().copy()
    np.testing.assert_array_equal(g.numpy(), g0)
    kept_value = kept[0].numpy().copy()
    (second,) = tg.autograd.grad(y, x, g, retain_graph=True)
    np.testing.assert_array_equal(second.numpy(), first)
    np.testing.assert_array_equal(kept[0].numpy(), kept_value)
    y.backward(g)
    np.testing.assert_array_equal(x.grad.numpy(), first)
    np.testing.assert_array_equal(g.numpy(), g0)


def test_adjoint_reuse_matches_torch_with_shared_inputs(torch):
    """x and w feed several nodes: their adjoints are sums, accumulated in place."""
    rng = np.random.default_rng(3)
    x0, w0 = rng.uniform(-1, 1, 5000), rng.uniform(0.5, 1.5, 5000)
    grads = []
    for lib in (tg, torch):
        x = lib.tensor(x0, requires_grad=True)
        w = lib.tensor(w0, requires_grad=True)
        y = _chain(lib, x, w) * x + lib.exp(x * w) - lib.sigmoid(w)
        y.sum().backward()
        grads.append((np.asarray(x.grad.numpy()), np.asarray(w.grad.numpy())))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_backward_of_an_elementwise_chain_works_in_one_buffer():
    """Each VJP of the chain writes into the adjoint it received: backward needs about one array
    beyond the saved values it starts with (a fresh result per VJP, and cos(x) before the product
    for sin, would need two or three)."""
    n = 200_000
    x = tg.tensor(np.linspace(-1, 1, n), requires_grad=True)
    y = x
    for _ in range(20):
        y = tg.tanh(tg.sin(y * 0.9) + 0.1)
    s = y.sum()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        s.backward()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - before < 1.6 * n * 8, (peak - before) / (n * 8)
    assert np.isfinite(x.grad.numpy()).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_is_zero_where_exp_of_minus_x_overflows(dtype):
    """PyTorch's 1 / (1 + e^-x): 0 once e^-x overflows the dtype (the true value is subnormal),
    at every size (the vector loops and their padded tails alike)."""
    last = {np.float32: float.fromhex("0x1.62e42ep+6"),
            np.float64: float.fromhex("0x1.62e42fefa39efp+9")}[dtype]
    below = np.nextafter(dtype(-last), dtype(-np.inf))
    x = np.array([-last - 11, -1e4, -np.inf, below, -last, -80.0], dtype=dtype)
    for reps in (1, 50):
        y = tg.sigmoid(tg.tensor(np.tile(x, reps))).numpy()[:6]
        assert (y[:4] == 0).all() and not np.signbit(y[:4]).any(), y
        assert (y[4:] > 0).all(), y


def test_sigmoid_edges_match_torch(torch):
    for dtype, tdtype, c in ((np.float32, torch.float32, 88.72283),
                             (np.float64, torch.float64, 709.782712893384)):
        x = (-c + np.arange(-300, 301) * np.spacing(dtype(c))).astype(dtype)
        x = np.concatenate([x, np.array([-100.0, -104.0, -745.5, -1e30, -np.inf], dtype)])
        got = tg.sigmoid(tg.tensor(x)).numpy()
        want = torch.sigmoid(torch.tensor(x, dtype=tdtype)).numpy()
        np.testing.assert_array_equal(got == 0, want == 0)
        np.testing.assert_allclose(got, want, rtol=4e-7 if dtype == np.float32 else 1e-15,
                                   atol=2 * np.finfo(dtype).smallest_subnormal)


def _w_chain_grads(n, anomaly):
    x = tg.tensor(np.linspace(-1, 1, n), requires_grad=True)
    w = tg.tensor(np.linspace(0.5, 1.5, n), requires_grad=True)
    y = x
    for _ in range(20):
        y = tg.tanh(y * w + 0.1)
    with tg.autograd.set_detect_anomaly(anomaly):
        y.sum().backward()
    return x.grad.numpy(), w.grad.numpy()


@pytest.mark.parametrize("n", [5, 1000, 70_001])
def test_a_leaf_multiplied_at_every_step_accumulates_as_product_then_sum(n):
    """`* w` used again and again: from w's third use on, each g * y is added straight into w's
    adjoint, which the sweep owns (no product array per use); the bits are those of the product
    then the sum (anomaly mode takes that plain path)."""
    gx, gw = _w_chain_grads(n, False)
    gx_plain, gw_plain = _w_chain_grads(n, True)
    assert gx.tobytes() == gx_plain.tobytes()
    assert gw.tobytes() == gw_plain.tobytes()


def test_accumulated_products_match_torch(torch):
    rng = np.random.default_rng(4)
    x0, w0 = rng.uniform(-1, 1, 3000), rng.uniform(0.5, 1.5, 3000)
    grads = []
    for lib in (tg, torch):
        x = lib.tensor(x0, requires_grad=True)
        w = lib.tensor(w0, requires_grad=True)
        y = x
        for _ in range(6):
            y = lib.sin(y * w) * w + x * x
        y.sum().backward()
        grads.append((np.asarray(x.grad.numpy()), np.asarray(w.grad.numpy())))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
