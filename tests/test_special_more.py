"""torch.special's Bessel functions, erfcx, log_ndtr, airy_ai and orthogonal polynomials
(tapegrad/_special_bessel.py): float64 values against mpmath and scipy to ~1e-14 (relative, or
absolute near a zero of an oscillating function), against PyTorch on random and edge inputs,
float32, dtypes, out= and broadcasting; first and second derivatives of the differentiable ones
by finite differences and against PyTorch; results of the others do not require grad, as
PyTorch's."""
import math

import numpy as np
import pytest

import tapegrad as tg

S = tg.special

UNARY = ("i0e", "i1", "i1e", "erfcx", "log_ndtr", "airy_ai", "bessel_j0", "bessel_j1",
         "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
         "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
         "scaled_modified_bessel_k1", "spherical_bessel_j0")
DIFFERENTIABLE = ("i0e", "i1", "i1e", "erfcx", "log_ndtr")
POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")

EDGES = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 5e-324, 1e-300, 1e-8, 0.5, 2.0, 24.9,
         25.1, 29.9, 30.1, -30.1, 100.0, 700.0, 800.0, -800.0, 1e5, 1e300, -26.5, 26.5, 38.0,
         -38.0, -10.1, 10.1, 103.0, 110.0]


def _mp(name):
    mpmath = pytest.importorskip("mpmath")
    mp = mpmath
    table = {
        "i0e": lambda x: mp.besseli(0, x) * mp.exp(-abs(x)),
        "i1": lambda x: mp.besseli(1, x),
        "i1e": lambda x: mp.besseli(1, x) * mp.exp(-abs(x)),
        "erfcx": lambda x: mp.exp(x * x) * mp.erfc(x),
        "log_ndtr": lambda x: mp.log(mp.ncdf(x)) if x < 0 else mp.log1p(-mp.ncdf(-x)),
        "airy_ai": mp.airyai,
        "bessel_j0": lambda x: mp.besselj(0, x),
        "bessel_j1": lambda x: mp.besselj(1, x),
        "bessel_y0": lambda x: mp.bessely(0, x),
        "bessel_y1": lambda x: mp.bessely(1, x),
        "modified_bessel_i0": lambda x: mp.besseli(0, x),
        "modified_bessel_i1": lambda x: mp.besseli(1, x),
        "modified_bessel_k0": lambda x: mp.besselk(0, x),
        "modified_bessel_k1": lambda x: mp.besselk(1, x),
        "scaled_modified_bessel_k0": lambda x: mp.besselk(0, x) * mp.exp(x),
        "scaled_modified_bessel_k1": lambda x: mp.besselk(1, x) * mp.exp(x),
        "spherical_bessel_j0": lambda x: mp.sin(x) / x,
    }
    return mpmath, table[name]


def _domain(name):
    if name in ("bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
                "scaled_modified_bessel_k0", "scaled_modified_bessel_k1"):
        return 0.0, 60.0
    if name in ("modified_bessel_i0", "modified_bessel_i1", "i1"):
        return -60.0, 60.0
    if name == "erfcx":
        return -20.0, 200.0
    if name == "log_ndtr":
        return -60.0, 38.0
    return -60.0, 60.0


OSCILLATING = ("airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
               "spherical_bessel_j0")


@pytest.mark.parametrize("name", UNARY)
def test_float64_values_against_mpmath(name):
    mpmath, reference = _mp(name)
    # 25 digits agree with 40 to ~1e-26 here (the tolerance is 1e-13) and take a third of the
    # time: mpmath's K0/K1 for large arguments are slow (~30 s a function at 40 digits, loaded).
    mpmath.mp.dps = 25
    lo, hi = _domain(name)
    rng = np.random.default_rng(7)
    xs = np.concatenate([rng.uniform(lo, hi, 150),
                         np.sign(rng.uniform(-1, 1, 40)) * 10.0 ** rng.uniform(-6, 0.5, 40)])
    if lo >= 0:
        xs = np.abs(xs)
    xs = xs[xs != 0]
    got = getattr(S, name)(tg.tensor(xs, dtype=tg.float64)).numpy()
    expected = np.array([float(reference(mpmath.mpf(float(x)))) for x in xs])
    # relative accuracy; the oscillating ones are accurate relative to their envelope (absolute
    # near a zero, as every method based on the asymptotic phase)
    scale = np.abs(expected)
    if name in OSCILLATING:
        envelope = np.maximum(1.0, np.abs(xs)) ** -0.25 if name == "airy_ai" else \
            1 / np.sqrt(np.maximum(1.0, np.abs(xs)))
        if name == "spherical_bessel_j0":
            envelope = 1 / np.maximum(1.0, np.abs(xs))
        if name == "airy_ai":
            envelope = np.where(xs > 1, np.abs(expected), envelope)
        scale = np.maximum(scale, envelope)
    np.testing.assert_array_less(np.abs(got - expected) / scale, 1e-13)


@pytest.mark.parametrize("name", UNARY)
def test_values_against_scipy(name):
    special = pytest.importorskip("scipy.special")
    reference = {
        "i0e": special.i0e, "i1": special.i1, "i1e": special.i1e, "erfcx": special.erfcx,
        "log_ndtr": special.log_ndtr, "airy_ai": lambda x: special.airy(x)[0],
        "bessel_j0": special.j0, "bessel_j1": special.j1, "bessel_y0": special.y0,
        "bessel_y1": special.y1, "modified_bessel_i0": special.i0,
        "modified_bessel_i1": special.i1, "modified_bessel_k0": special.k0,
        "modified_bessel_k1": special.k1, "scaled_modified_bessel_k0": special.k0e,
        "scaled_modified_bessel_k1": special.k1e,
        "spherical_bessel_j0": lambda x: special.spherical_jn(0, x)}[name]
    xs = np.concatenate([np.linspace(-40, 40, 2001), [1e-300, 1e-8, 0.3]])
    with np.errstate(all="ignore"):
        expected = reference(xs)
    got = getattr(S, name)(tg.tensor(xs)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    finite = np.isfinite(expected)
    scale = np.maximum(np.abs(expected[finite]), 1.0 if name in OSCILLATING else 0.0)
    # (scipy's Cephes airy, its erfcx and log_ndtr stray to ~1e-12 near a zero, an overflow or
    # in the upper tail: the mpmath test holds these to 1e-13)
    scale = np.where(scale == 0, 1.0, scale)
    np.testing.assert_array_less(np.abs(got[finite] - expected[finite]) / scale,
                                 5e-12 if name in ("airy_ai", "erfcx", "log_ndtr") else 1e-13)


@pytest.mark.parametrize("name", UNARY)
def test_edges_match_torch(name, torch):
    x = np.array(EDGES)
    got = getattr(S, name)(tg.tensor(x)).numpy()
    expected = getattr(torch.special, name)(torch.tensor(x)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    # (PyTorch's float64 Bessel J/Y and airy kernels are accurate to ~1e-6 only)
    loose = name in ("airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1")
    np.testing.assert_allclose(got, expected, rtol=1e-5 if loose else 1e-12,
                               atol=1e-6 if loose else 1e-300, equal_nan=True)


@pytest.mark.parametrize("name", UNARY)
def test_float32_and_integer_inputs_match_torch(name, torch):
    x = np.linspace(-9, 9, 37).astype(np.float32)
    got = getattr(S, name)(tg.tensor(x))
    expected = getattr(torch.special, name)(torch.tensor(x))
    assert got.dtype == tg.float32
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=2e-5, atol=2e-6,
                               equal_nan=True)
    ints = getattr(S, name)(tg.tensor([1, 2, 3]))
    assert ints.dtype == tg.float32
    np.testing.assert_allclose(ints.numpy(), getattr(torch.special, name)(
        torch.tensor([1, 2, 3])).numpy(), rtol=2e-5, atol=2e-6)
    assert getattr(S, name)(tg.tensor([True])).dtype == tg.float32


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradient_by_finite_differences(name, gradcheck):
    # one point at a time: a sum of values of very different sizes would drown the small ones
    for x in (-3.5, -1.2, -0.4, 0.3, 0.9, 2.5, 7.0, 27.0, 31.0, 40.0):
        gradcheck(getattr(S, name), [x], atol=1e-7, rtol=1e-6)
    t = tg.tensor(np.array([-1.7, -0.3, 0.6, 2.2]), requires_grad=True)
    assert tg.autograd.gradgradcheck(getattr(S, name), (t,))


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_first_and_second_derivatives_match_torch(name, torch):
    values = [0.0, 0.5, -2.0, 3.0, -7.5, 12.0, 25.0, 35.0]
    results = []
    for lib in (tg, torch):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        y = getattr(lib.special, name)(x)
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        results.append((y.grad_fn.name(), g.detach().numpy(), gg.numpy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12, atol=1e-300)
    if name == "erfcx":
        # PyTorch's erfcx'' at 35 is 5e-10 off (2 x erfcx - 2/sqrt(pi) cancels there; tapegrad
        # sums the asymptotic series above 8): mpmath referees
        mp = pytest.importorskip("mpmath")
        mp.mp.dps = 40
        reference = [float(mp.diff(lambda v: mp.exp(v * v) * mp.erfc(v), v, 2)) for v in values]
        np.testing.assert_allclose(results[0][2], reference, rtol=1e-12, atol=1e-300)
        return
    np.testing.assert_allclose(results[0][2], results[1][2], rtol=1e-10, atol=1e-300)


def test_i0_second_derivative_is_i1_derivative(torch):
    """torch.i0's gradient is special.i1, itself differentiable (it raised before)."""
    got = []
    for lib in (tg, torch):
        x = lib.tensor([0.0, 0.5, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
        g, = lib.autograd.grad(lib.i0(x).sum(), x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        got.append(gg.numpy())
    np.testing.assert_allclose(got[0], got[1], rtol=1e-12)


def test_log_ndtr_gradient_in_the_far_lower_tail():
    """phi / Phi through erfcx: about -x where exp(-x^2/2) / Phi would lose digits."""
    x = tg.tensor([-40.0, -200.0, -1e4], dtype=tg.float64, requires_grad=True)
    S.log_ndtr(x).sum().backward()
    expected = [40.024968847207263723, 200.00499975003124422, 10000.000099999998]  # mpmath
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-13)


@pytest.mark.parametrize("name", [n for n in UNARY if n not in DIFFERENTIABLE] + ["poly"])
def test_no_derivative_results_do_not_require_grad(name, torch):
    for lib in (tg, torch):
        x = lib.tensor([0.5, 2.0], requires_grad=True)
        y = (lib.special.legendre_polynomial_p(x, 3) if name == "poly"
             else getattr(lib.special, name)(x))
        assert not y.requires_grad and y.grad_fn is None
        with pytest.raises(RuntimeError, match="does not require grad"):
            y.sum().backward()


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_torch(name, torch):
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-1, 1, 200), rng.uniform(-3, 3, 60),
                        [-1.0, 1.0, 0.0, 0.5, np.inf, -np.inf, -2.0, 2.0]])
    for n in [-3, -1, 0, 1, 2, 3, 5, 6, 7, 8, 9, 12, 30, 100, 2.7, -0.5, np.nan, np.inf]:
        got = getattr(S, name)(tg.tensor(x), n).numpy()
        expected = getattr(torch.special, name)(torch.tensor(x), n).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
        np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-11 * max(
            1.0, float(np.nanmax(np.abs(np.where(np.isfinite(expected), expected, 0))))),
            equal_nan=True)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_against_mpmath_for_large_n(name):
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    mp = mpmath

    def reference(x, n):
        x = mp.mpf(x)
        if name.startswith("shifted_"):
            x = 2 * x - 1
        kind = name.rsplit("_", 1)[1]
        if name.startswith(("chebyshev", "shifted")):
            t = mp.acos(x)
            return {"t": mp.cos(n * t), "u": mp.sin((n + 1) * t) / mp.sin(t),
                    "v": mp.cos((n + mp.mpf(1) / 2) * t) / mp.cos(t / 2),
                    "w": mp.sin((n + mp.mpf(1) / 2) * t) / mp.sin(t / 2)}[kind]
        if kind == "h":
            return mp.hermite(n, x)
        if kind == "he":
            return mp.hermite(n, x / mp.sqrt(2)) / mp.mpf(2) ** (mp.mpf(n) / 2)
        if kind == "l":
            return mp.laguerre(n, 0, x)
        return mp.legendre(n, x)

    lo, hi = (0.05, 0.95) if name.startswith("shifted_") else (-0.9, 0.9)
    if name == "laguerre_polynomial_l":
        lo, hi = 0.1, 3.0
    xs = np.linspace(lo, hi, 13)
    for n in (40, 200):
        got = getattr(S, name)(tg.tensor(xs), n).numpy()
        expected = np.array([float(reference(x, n)) for x in xs])
        scale = max(1.0, np.abs(expected).max())
        np.testing.assert_allclose(got, expected, rtol=0, atol=5e-12 * scale)


def test_polynomial_numbers_dtypes_broadcasting_and_out(torch):
    cases = [lambda T: (T.tensor([[0.5], [0.2]]), T.tensor([1, 2, 3])),
             lambda T: (0.5, T.tensor([1, 2, 3])),
             lambda T: (T.tensor([1, 2]), 3),
             lambda T: (T.tensor([0.3], dtype=T.float64), 4.0),
             lambda T: (T.tensor([0.3]), T.tensor([4], dtype=T.float64))]
    for name in ("chebyshev_polynomial_t", "hermite_polynomial_h", "laguerre_polynomial_l"):
        for make in cases:
            got = getattr(S, name)(*make(tg))
            expected = getattr(torch.special, name)(*make(torch))
            assert str(got.dtype) == str(expected.dtype)
            assert tuple(got.shape) == tuple(expected.shape)
            np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)
    out = tg.empty(3, dtype=tg.float64)
    result = S.legendre_polynomial_p(tg.tensor([0.1, 0.2, 0.3], dtype=tg.float64), 3, out=out)
    assert result is out
    np.testing.assert_allclose(out.numpy(), torch.special.legendre_polynomial_p(
        torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64), 3).numpy())


def test_unary_out_and_errors(torch):
    out = tg.empty(3)
    assert S.bessel_j0(tg.tensor([1, 2, 3]), out=out) is out
    np.testing.assert_allclose(out.numpy(), [math.cos(0) * 0 + 0.7651976865579666,
                                             0.22389077914123567, -0.2600519549019335],
                               rtol=1e-6)
    x = tg.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        S.i1(x, out=tg.empty(1))
    with pytest.raises(TypeError, match=r"special_bessel_j0\(\): argument 'input' \(position 1\) "
                                        r"must be Tensor, not float"):
        S.bessel_j0(1.0)
    for name in ("bessel_j0", "i1"):
        with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for '
                                                      "'ComplexFloat'"):
            getattr(S, name)(tg.tensor([1j]))
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        S.chebyshev_polynomial_t(0.5, 2)


@pytest.mark.parametrize("name", UNARY + POLYNOMIALS)
def test_zero_dim_empty_and_strided_inputs_match_torch(name, torch):
    makers = [lambda T: T.tensor(0.7, dtype=T.float64), lambda T: T.empty(0, 3),
              lambda T: T.tensor([[1.5, 2.5], [3.0, 4.0]]).t()]
    for make in makers:
        tail = (3,) if name in POLYNOMIALS else ()
        got = getattr(S, name)(make(tg), *tail)
        expected = getattr(torch.special, name)(make(torch), *tail)
        assert tuple(got.shape) == tuple(expected.shape)
        assert str(got.dtype) == str(expected.dtype)
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    if name in POLYNOMIALS:     # a bool degree tensor: n = 1 and 0
        got = getattr(S, name)(tg.tensor([0.3, 0.6]), tg.tensor([True, False]))
        expected = getattr(torch.special, name)(torch.tensor([0.3, 0.6]),
                                                torch.tensor([True, False]))
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)
