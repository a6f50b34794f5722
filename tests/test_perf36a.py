"""Replay speed (issue 19), session 36: the paths added for speed give eager's bits.

- vecmath's tanh evaluates expm1 without the branch its argument never takes, and the AVX-512
  level's exp table lookups gather on CPUs with fast gathers: the same bits (tests/test_vecmath.py
  holds the kernels to their ulp bounds; here, the fused replay against eager at odd sizes and
  sizes straddling a block, float32 and float64, and tanh's special points against torch).
- kernels.c runs x ** e for PyTorch's special-cased exponents in a loop per exponent: the exact
  expressions, compiled equal to eager.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

def mixed(x, w):
    """5 cycles of * + tanh sin sigmoid exp (all of them keep a full-size value or a partner)."""
    for _ in range(5):
        x = tg.exp(tg.sigmoid(tg.sin(tg.tanh(x * 0.5 + 0.25))))
    return x * w


def mixed_with_escapes(x, w):
    """The same with values that escape the group: returned intermediates and a value read twice."""
    outs = []
    for i in range(5):
        t = tg.tanh(x * 0.5 + 0.25)
        s = tg.sin(t)
        x = tg.exp(tg.sigmoid(s)) + (t if i % 2 else 0.0)
        if i == 2:
            outs.append(s)
    c = tg.cos(x)
    return (c * w, *outs, x)


def run(fn, base, wbase, dt, seed):
    x = tg.tensor(base, dtype=dt, requires_grad=True)
    w = tg.tensor(wbase, dtype=dt, requires_grad=True)
    outs = fn(x, w)
    outs = outs if isinstance(outs, tuple) else (outs,)
    rng = np.random.default_rng(seed)
    tg.autograd.backward(list(outs), [tg.tensor(rng.uniform(-1, 1, o.shape), dtype=dt)
                                      for o in outs])
    return [o.detach().numpy() for o in outs], [x.grad.numpy(), w.grad.numpy()]


def assert_same(got, want, what):
    for g, e in zip(got, want):
        assert g.dtype == e.dtype and g.shape == e.shape, what
        assert np.array_equal(g, e, equal_nan=True), (what, np.flatnonzero(g != e)[:5])


def check_bit_identical(fn, size, dt, calls=3):
    compiled = tg.compile(fn)
    rng = np.random.default_rng(size)
    for call in range(calls):
        base, wbase = rng.uniform(-2, 2, size), rng.uniform(-1, 1, size)
        got = run(compiled, base, wbase, dt, call)
        want = run(fn, base, wbase, dt, call)
        assert_same(got[0], want[0], ("values", size, dt, call))
        assert_same(got[1], want[1], ("grads", size, dt, call))
    assert compiled.stats["replays"] == calls - 1, compiled.explain()
    assert "fused" in compiled.explain(), compiled.explain()


# sizes around the blocks (a few thousand elements) and big ones (many blocks, several lanes)
@pytest.mark.parametrize("size", [1025, 8191, 8193, 16_385, 250_001, 450_003])
def test_mixed_chain_bit_identical_float64(size):
    check_bit_identical(mixed, size, tg.float64)


@pytest.mark.parametrize("size", [1031, 8192, 24_577, 900_007])
def test_mixed_chain_bit_identical_float32(size):
    check_bit_identical(mixed, size, tg.float32)


@pytest.mark.parametrize("dt,size", [(tg.float64, 8193), (tg.float64, 450_003),
                                     (tg.float32, 4097), (tg.float32, 900_007)])
def test_group_with_escaping_values_bit_identical(dt, size):
    check_bit_identical(mixed_with_escapes, size, dt)


@pytest.fixture
def threads():
    before = tg.get_num_threads()
    yield tg.set_num_threads
    tg.set_num_threads(before)


@pytest.mark.parametrize("n_threads", [2, 3])
def test_group_over_threads_bit_identical(threads, n_threads):
    threads(n_threads)
    check_bit_identical(mixed_with_escapes, 450_003, tg.float64, calls=2)


TANH_POINTS = [0.0, -0.0, 1e-300, -5e-324, 2.0 ** -54, 2.0 ** -55, -(2.0 ** -54), 2.0 ** -27,
               1e-8, 0.125, 0.5493061443340548, 1.0, -1.0, 7.5, 19.0, 19.999999999999996, 20.0,
               20.000000000000004, 40.0, -40.0, 710.0, 1e300, float("inf"), float("-inf"),
               float("nan")]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_tanh_special_points_and_gradient_match_torch(dt):
    """tanh's kernel at the points where its expm1 argument 2 min(|x|, 20) meets the cases the
    general expm1 handles (tiny, 40, NaN, infinities): values within the kernel's bound of
    torch's (signed zeros and NaN exactly), and compiled equal to eager."""
    torch = pytest.importorskip("torch")
    with np.errstate(over="ignore"):            # (1e300 is inf in float32)
        x = np.array(TANH_POINTS * 3, dtype=dt)  # several vectors' worth, and a tail
    got = tg.tanh(tg.tensor(x)).numpy()
    want = torch.tanh(torch.tensor(x)).numpy()
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dt).eps, atol=0)
    compiled = tg.compile(lambda v: tg.tanh(v * 1.0))
    for _ in range(2):
        assert_same([compiled(tg.tensor(x)).numpy()], [got], "tanh")


def test_tanh_gradcheck_float64():
    x = tg.tensor(np.linspace(-3, 3, 41), dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(tg.tanh, (x,))


# -- x ** number: a loop per exponent of the fast cases (kernels.c POW_CASE) -------------------------

@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("size", [1, 7, 33, 2000, 4099])
@pytest.mark.parametrize("e", [2, 3, 1, 0.5, -0.5, -1, -2])
def test_pow_fast_exponents_are_the_exact_expressions(dt, size, e):
    """x ** e for PyTorch's special-cased exponents is the product / root / quotient PyTorch's
    pow_tensor_scalar_optimized computes (each operation rounded to the dtype), compiled equal
    to eager, and the gradient (which evaluates x ** (e - 1)) equal to torch's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(size)
    x = rng.uniform(0.25, 3, size).astype(dt)
    x[::5] *= -1
    with np.errstate(invalid="ignore", divide="ignore"):
        want = {2: x * x, 3: x * x * x, 1: x.copy(), 0.5: np.sqrt(x), -0.5: 1 / np.sqrt(x),
                -1: 1 / x, -2: 1 / (x * x)}[e]
    got = (tg.tensor(x) ** e).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    compiled = tg.compile(lambda v: v ** e)
    for _ in range(2):
        np.testing.assert_array_equal(compiled(tg.tensor(x)).numpy(), want)
    xp = np.abs(x) + dt(0.5)        # (positive: roots and quotients have real gradients)
    t = tg.tensor(xp, requires_grad=True)
    (t ** e).sum().backward()
    tt = torch.tensor(xp, requires_grad=True)
    (tt ** e).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=4 * np.finfo(dt).eps)


def test_pow_gradcheck_float64():
    x = tg.tensor(np.linspace(0.5, 2.5, 37), dtype=tg.float64, requires_grad=True)
    for e in (3, 2, 1, 0.5, -0.5, -1, -2):
        assert tg.autograd.gradcheck(lambda v: v ** e, (x,))


def test_polynomial_fit_replay_follows_eager_exactly():
    """The tutorial's fit (x ** 2, x ** 3 forward, x ** 1 in the backward of ** 2), compiled
    against eager over several SGD steps, float32, bit for bit."""
    x = np.linspace(-np.pi, np.pi, 2000, dtype=np.float32)
    y = np.sin(x)
    tx, ty = tg.from_numpy(x), tg.from_numpy(y)

    def forward(params, x, y):
        a, b, c, d = params
        return ((a + b * x + c * x ** 2 + d * x ** 3) - y).pow(2).sum()

    start = [0.3, -0.7, 1.1, 0.05]
    pe = [tg.tensor(v, requires_grad=True) for v in start]
    pc = [tg.tensor(v, requires_grad=True) for v in start]
    compiled = tg.compile(forward)
    for _ in range(4):
        for f, ps in ((forward, pe), (compiled, pc)):
            f(ps, tx, ty).backward()
            with tg.no_grad():
                for p in ps:
                    p -= 1e-6 * p.grad
                    p.grad = None
        assert [p.item() for p in pe] == [p.item() for p in pc]
    assert compiled.stats["replays"] == 3, compiled.explain()
