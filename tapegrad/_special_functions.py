"""erfinv, lgamma and digamma as autograd.Functions (behind Normal.icdf and the log densities of
Gamma, Beta, Dirichlet, Poisson, Binomial and StudentT).

lgamma: math.lgamma per element (inf at the poles 0, -1, ...).  digamma and trigamma: PyTorch's
algorithms, rounded as its kernels round them (_polygamma_values; trigamma at the negative poles
PyTorch's finite value, see _trigamma_torch).  lgamma's gradient is digamma, digamma's is
trigamma (itself not differentiable: asking for that third derivative raises).

numpy has no erfinv: a rational first guess (Giles, "Approximating the erfinv function", 2010)
is polished by Newton steps on erf, computed in float64 and cast, so float32 and float64 results
are correctly rounded to within an ulp or two.  Gradient: sqrt(pi) / 2 * exp(erfinv(x) ** 2).
"""
from __future__ import annotations as _annotations

import math

import numpy as np

from . import _core
from ._class_members import has_member
from ._extra_functions import _torch_grad_fn_name
from ._extra_ops import _check_tensor, _wrap, _wrap_like
from .autograd.function import Function

_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2
# Giles' single-precision coefficients: central region (w < 5) and tails (w >= 5).
_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
            -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
         -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
_erf = np.frompyfunc(math.erf, 1, 1)


def _horner(coefficients, w):
    p = np.full_like(w, coefficients[0])
    for c in coefficients[1:]:
        p = p * w + c
    return p


def _erfinv_values(y: np.ndarray) -> np.ndarray:
    """erfinv of y elementwise, in y's float dtype: +-inf at +-1, nan outside [-1, 1]."""
    y64 = y.astype(np.float64)
    inside = np.abs(y64) < 1
    safe = np.where(inside, y64, 0.0)
    with np.errstate(divide="ignore"):
        w = -np.log((1.0 - safe) * (1.0 + safe))
    x = np.where(w < 5.0, _horner(_CENTRAL, w - 2.5), _horner(_TAIL, np.sqrt(w) - 3.0)) * safe
    for _ in range(3):          # Newton on erf(x) - y: each step doubles the correct digits
        residual = np.asarray(_erf(x), dtype=np.float64) - safe
        x = x - residual / (np.exp(-x * x) / _SQRT_PI_OVER_2)
    # Near +-1, erf is flat to an ulp: Newton on it stalls (erfinv(1 - 2^-53) gave 5.46 for
    # 5.86).  There erfc(|x|) = 1 - |y|, exact for |y| >= 0.5, is solved instead.
    x = np.array(x, dtype=np.float64)          # (a 0-d input's x is a numpy scalar)
    tails = np.abs(safe) >= 0.5
    if tails.any():
        x[tails] = np.copysign(_erfcinv_tail(1.0 - np.abs(safe[tails])), safe[tails])
    out = np.where(inside, x, np.where(np.abs(y64) == 1, np.copysign(np.inf, y64), np.nan))
    return out.astype(y.dtype)


class Erfinv(Function):
    """erfinv of a float tensor; backward multiplies by sqrt(pi)/2 * exp(erfinv(x)^2)."""

    @staticmethod
    def forward(ctx, x):
        # (PyTorch saves the input and recomputes erfinv in backward: an in-place write into
        # the result is no error there, nor here)
        ctx.save_for_backward(x)
        return _wrap_like(_erfinv_values(x._array), x)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        result = Erfinv.apply(x)
        return grad * _core.exp(result * result) * _SQRT_PI_OVER_2


_torch_grad_fn_name(Erfinv, "ErfinvBackward0")


_lgamma = np.frompyfunc(math.lgamma, 1, 1)


def _lgamma_values(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    poles = (x64 <= 0) & (x64 == np.floor(x64))
    finite = np.isfinite(x64) & ~poles
    out = np.where(np.isnan(x64), np.nan, np.inf)
    out[finite] = _lgamma(x64[finite]).astype(np.float64)
    # math.lgamma (Lanczos) is 5-20 ulps off below 3 and loses the relative digits next to the
    # zeros at 1 and 2: there the Taylor series about 1 and 2, and below 0.5 the recurrence
    # lgamma(x) = lgamma(1 + x) - log(x)
    below_half = (x64 > 0) & (x64 < 0.5)
    near_one = (x64 >= 0.5) & (x64 < 1.5)
    near_two = (x64 >= 1.5) & (x64 <= 3.0)
    out[below_half] = (_lgamma_taylor(x64[below_half], 1) - np.log(x64[below_half]))
    out[near_one] = _lgamma_taylor(x64[near_one] - 1.0, 1)
    out[near_two] = _lgamma_taylor(x64[near_two] - 2.0, 2)
    # and from 3 to 8 (where math.lgamma is still 5-9 ulps off) down into the series about 2:
    # lgamma(x) = lgamma(x - k) + log((x - 1) ... (x - k))
    above_three = (x64 > 3.0) & (x64 < 8.0)
    shifted = x64[above_three]
    product = np.ones_like(shifted)
    while (shifted > 3.0).any():
        step = shifted > 3.0
        shifted = np.where(step, shifted - 1.0, shifted)
        product = np.where(step, product * shifted, product)
    out[above_three] = _lgamma_taylor(shifted - 2.0, 2) + np.log(product)
    with _core.IeeeResults():           # (beyond float32's range: inf, silently as PyTorch)
        return out.astype(x.dtype)


_LGAMMA_TAYLOR_TERMS = 60
_lgamma_taylor_coefficients = {}


def _lgamma_taylor(h: np.ndarray, centre: int) -> np.ndarray:
    """lgamma(centre + h) for centre 1 (|h| <= 0.5) or 2 (|h| <= 1), by its Taylor series, to an ulp or
    two next to lgamma's zeros at 1 and 2, where math.lgamma loses its relative digits
    (lgamma(1 - 1e-12) was 5.767e-13 for 5.772e-13):
    lgamma(1 + h) = -euler_gamma h + sum_{k>=2} (-1)^k zeta(k) / k h^k and
    lgamma(2 + h) = (1 - euler_gamma) h + sum_{k>=2} (-1)^k (zeta(k) - 1) / k h^k, whose terms
    shrink like 0.5^k (zeta(k, centre) is zeta(k) less the first centre - 1 terms)."""
    if centre not in _lgamma_taylor_coefficients:
        from ._more_math import _hurwitz_zeta
        orders = np.arange(2, _LGAMMA_TAYLOR_TERMS + 2, dtype=np.float64)
        signs = np.where(orders % 2 == 0, 1.0, -1.0)
        higher = signs * _hurwitz_zeta(orders, np.full(orders.shape, float(centre))) / orders
        linear = -_EULER_GAMMA if centre == 1 else 1.0 - _EULER_GAMMA
        _lgamma_taylor_coefficients[centre] = (linear, higher)
    linear, higher = _lgamma_taylor_coefficients[centre]
    series = np.zeros_like(h)
    for coefficient in reversed(higher):
        series = (series + coefficient) * h
    return (series * h + linear * h)


_EULER_GAMMA = 0.5772156649015329


def _polygamma_values(order: int, x: np.ndarray) -> np.ndarray:
    """digamma (order 0) or trigamma (order 1, _trigamma_values) of x elementwise, in x's dtype.

    digamma is PyTorch's algorithm rounded operation by operation as its CPU kernel rounds it
    (float64 in double, float32 and the half types in float), so that the results are PyTorch's
    bits, not only values within a few ulp (a nearly correctly rounded digamma gave other last
    bits in 20-40% of values, and a gradient through lgamma or a Gamma log density drifts by
    that much): Cephes' psi, the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, psi(10) as
    a constant, else log(x) - 0.5/x - z P(z), z = 1/x^2; below 0 the reflection
    psi(1 - x) - pi / tan(pi r), r = x - trunc(x).  Like PyTorch's, it loses relative digits
    next to its positive root (1.4616...), where the recurrence and the series cancel."""
    if order == 1:
        return _trigamma_values(x)
    dt = np.float64 if x.dtype == np.float64 else np.float32
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return _digamma_torch(x.astype(dt)).astype(x.dtype)


# Cephes' psi: the asymptotic series' coefficients (Bernoulli numbers B_2k / 2k, highest first)
# and psi(10) = H_9 - euler_gamma.
_PSI_SERIES = (8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
               -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
               8.33333333333333333333E-2)
_PSI_10 = 2.25175258906672110764


def _log_as_libm(x: np.ndarray) -> np.ndarray:
    """log(x) with the C library's bits (PyTorch's scalar kernels call log / logf): numpy's float64
    log gives them; its float32 log (a SIMD kernel) does not in 7% of values, log in double rounded
    once to float does (logf is correctly rounded but for rare double-rounding cases)."""
    return np.log(x) if x.dtype == np.float64 else np.log(x.astype(np.float64)).astype(x.dtype)


def _digamma_torch(x: np.ndarray) -> np.ndarray:
    """digamma in x's dtype (float32 or float64), PyTorch's calc_digamma (see _polygamma_values)."""
    dt = x.dtype.type
    out = np.full(x.shape, np.nan, dtype=x.dtype)
    zero = x == 0
    out[zero] = np.copysign(dt(np.inf), -x[zero])            # psi(+-0) = -+inf
    negative = (x < 0) & (x != np.trunc(x))                  # (negative integers: nan)
    positive = x > 0
    w = np.where(negative, dt(1) - x, x)[negative | positive]
    r = x[negative | positive]
    acc = np.zeros_like(w)
    while True:                                              # push w up to at least 10
        small = w < 10
        if not small.any():
            break
        acc[small] = acc[small] - dt(1) / w[small]
        w[small] = w[small] + dt(1)
    z = dt(1) / (w * w)
    poly = np.zeros_like(w)
    for coefficient in _PSI_SERIES:
        poly = poly * z + dt(coefficient)
    series = np.where(w < dt(1e17), z * poly, dt(0))
    value = np.where(w == 10, acc + dt(_PSI_10), acc + _log_as_libm(w) - dt(0.5) / w - series)
    # the reflection's pi / tan(pi r) at r = x - trunc(x), in double also for float32 (rounded once)
    reflected = r < 0
    frac = (r[reflected].astype(np.float64) - np.trunc(r[reflected].astype(np.float64)))
    value[reflected] = value[reflected] - (math.pi / np.tan(math.pi * frac)).astype(dt)
    out[negative | positive] = value
    return out


def _trigamma_values(x: np.ndarray) -> np.ndarray:
    """trigamma of x elementwise, in x's dtype, to full float64 precision: PyTorch's own is good
    to ~1e-10 relatively only (its series stops early; docs/differences.md), a difference
    tapegrad keeps.  The recurrence psi'(x) = psi'(x + 1) + 1/x^2 up to x >= 16, then the
    asymptotic series; below 0.5 the reflection formula."""
    x64 = x.astype(np.float64)
    out = np.full(x64.shape, np.nan)
    poles = (x64 <= 0) & (x64 == np.floor(x64)) & np.isfinite(x64)     # (-inf gives nan)
    if poles.any():
        out[poles] = _trigamma_at_poles(x[poles])
    ok = np.isfinite(x64) & ~poles
    z = x64[ok]
    reflect = z < 0.5
    w = np.where(reflect, 1.0 - z, z)
    # The reflection's sin(pi z)^2 has period pi: taken at z's exact offset from the nearest
    # integer, not at the rounded product pi z, it keeps its digits next to a pole.
    offset = np.where(reflect, z - np.round(z), 0.5)       # (0.5: no pole where unused)
    acc = np.zeros_like(w)
    while True:                              # shift every argument up to at least 16
        small = w < 16
        if not small.any():
            break
        acc = acc + np.where(small, 1 / w ** 2, 0)
        w = np.where(small, w + 1, w)
    with _core.IeeeResults():           # (w * w beyond float64's range: inv2 is 0, silently)
        inv2 = 1 / (w * w)
    # The asymptotic series through the Bernoulli number B12: its first omitted term is below
    # 1e-17 of the result for w >= 16.  (Stopping at B10 with w >= 10 left trigamma 1e-11
    # relatively off.)
    series = 1 / w + inv2 / 2 + inv2 / w * (1 / 6 - inv2 * (1 / 30 - inv2 * (1 / 42 - inv2 * (
        1 / 30 - inv2 * (5 / 66 - inv2 * 691 / 2730)))))
    value = acc + series
    value = np.where(reflect, (math.pi / np.sin(math.pi * offset)) ** 2 - value, value)
    out[ok] = value
    out[np.isposinf(x64)] = 0.0
    with np.errstate(over="ignore"):        # (a pole's finite trigamma is inf in float16)
        return out.astype(x.dtype)


def _trigamma_at_poles(x: np.ndarray) -> np.ndarray:
    """trigamma at 0, -1, -2, ... as PyTorch's: its reflection pi^2 / sin(pi x)^2 - trigamma(1 - x)
    takes sin(pi x) of the rounded product pi x, which is not 0 at a negative integer, so the
    value is finite (1.6e32 at -2 in float64, 3.2e14 in float32), inf only at +-0.  A gradient
    of digamma times 0 is then 0 there, not NaN (fuzz 62645607).  Computed in x's precision
    (float32 for float16: the rounding to float16 then overflows to inf, as PyTorch's does)."""
    dt = np.float64 if x.dtype == np.float64 else np.float32
    xs = x.astype(dt)
    pi = dt(math.pi)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        s = np.sin(pi * xs)
        term = (pi * pi) / (s * s)
        rest = _trigamma_values((1 - xs.astype(np.float64)).astype(dt)).astype(dt)
        return (term - rest).astype(np.float64)


class Trigamma(Function):
    """The derivative of digamma; its own derivative is polygamma(2) (tapegrad.polygamma)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _wrap_like(_polygamma_values(1, x._array), x)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        from . import polygamma
        return grad * polygamma(2, x)


class Digamma(Function):
    """digamma = d lgamma / dx; backward multiplies by trigamma."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _wrap_like(_polygamma_values(0, x._array), x)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * Trigamma.apply(x)


class Lgamma(Function):
    """log |Gamma(x)|; backward multiplies by digamma."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _wrap_like(_lgamma_values(x._array), x)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * Digamma.apply(x)


_torch_grad_fn_name(Lgamma, "LgammaBackward0")
_torch_grad_fn_name(Digamma, "DigammaBackward0")
_torch_grad_fn_name(Trigamma, "PolygammaBackward0")


def _float_input(input, name, parser_name=None):
    """input as a float tensor (integers and bool give the default dtype); a complex one raises
    PyTorch's "<name>" not implemented error, a non-tensor its parser's TypeError under
    `parser_name` (default `name`)."""
    _check_tensor(input, parser_name or name)
    if input.is_complex():      # (a cast would drop the imaginary part silently)
        raise NotImplementedError(f"\"{name}\" not implemented for "
                                  f"'{_core.scalar_type_name_of(input._array.dtype)}'")
    if not input.dtype.is_floating_point:
        from . import get_default_dtype
        input = input.to(get_default_dtype())
    return input


def lgamma(input):
    """log |Gamma(input)| elementwise (inf at 0, -1, -2, ...); gradient digamma(input)."""
    result = Lgamma.apply(_float_input(input, "lgamma"))
    return result


def digamma(input):
    """The logarithmic derivative of Gamma elementwise (-inf at 0, nan at negative integers);
    gradient trigamma(input)."""
    result = Digamma.apply(_float_input(input, "digamma"))
    return result


_erfc = np.frompyfunc(math.erfc, 1, 1)


class Erfc(Function):
    """1 - erf(x) computed directly (math.erfc), so it keeps its digits where erf is near 1."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _wrap_like(np.asarray(_erfc(x._array), dtype=np.float64).astype(x._array.dtype), x)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * _core.exp(-(x * x)) * (-1.0 / _SQRT_PI_OVER_2)


_torch_grad_fn_name(Erfc, "ErfcBackward0")


def erfc(input):
    """The complementary error function 1 - erf(input), accurate in the tails."""
    result = Erfc.apply(_float_input(input, "erfc"))
    return result


def exp2(input):
    """2 ** input elementwise (integers give the default float dtype)."""
    if isinstance(input, _core.TensorBase) and input._array.dtype.kind == "c":
        from ._complex import dispatch
        result = dispatch("exp2", input)
        return result
    result = Exp2.apply(_float_input(input, "exp2"))
    return result


class Exp2(Function):
    """2 ** x by numpy's exp2, not exp(x * ln 2): rounding x * ln 2 costs |x| ulps (exp2(26)
    came out 67108863.99999992 for 2^26, exp2(1000) 617 ulps off); backward grad * 2^x * ln 2."""

    @staticmethod
    def forward(ctx, x):
        arr = x._array
        with np.errstate(over="ignore"):        # (overflow to inf is the answer, as in PyTorch)
            # float32 evaluated in float64 and rounded once, which PyTorch's kernel matches in
            # ~93% of elements (numpy's float32 loop in ~76%); laid out as the input
            result = _wrap_like(np.exp2(arr, dtype=np.float64).astype(np.float32)
                                if arr.dtype == np.float32 else np.exp2(arr), x)
        ctx.save_for_backward(result)           # (PyTorch's node saves the result alone)
        return result

    @staticmethod
    def backward(ctx, grad):
        result, = ctx.saved_tensors
        return grad * result * math.log(2.0)


_torch_grad_fn_name(Exp2, "Exp2Backward0")


def _log_erfc(z: np.ndarray) -> np.ndarray:
    """log(erfc(z)) for z >= 0.4, where erfc underflows too: math.erfc up to 26, then the
    asymptotic series -z^2 - log(z sqrt(pi)) + log(1 - 1/(2z^2) + 3/(4z^4) - ...) (its first
    omitted term is below 1e-13 there)."""
    near = np.minimum(z, 26.0)
    out = np.log(np.asarray(_erfc(near), dtype=np.float64))
    far = z > 26.0
    if far.any():
        zf = z[far]
        u = 1.0 / (2.0 * zf * zf)
        series = 1.0 + u * (-1.0 + u * (3.0 + u * (-15.0 + u * (105.0 - u * 945.0))))
        out[far] = -zf * zf - np.log(zf * math.sqrt(math.pi)) + np.log(series)
    return out


def _erfcinv_tail(t: np.ndarray) -> np.ndarray:
    """z with erfc(z) = t, for t in (0, 0.5]: Newton steps on log(erfc(z)) - log(t) (log scale:
    t goes down to the subnormals).  First guess: Giles' for erfinv(1 - t) near the middle (its
    w = -log(1 - y^2) is -log(t (2 - t)), computed from t without rounding y = 1 - t), the
    asymptote z^2 = L - log(sqrt(pi L)), L = -log(t), in the tail, where Giles' fit ends (three
    steps then reach the last digits)."""
    w = -np.log(t * (2.0 - t))
    tail = -np.log(t)
    with np.errstate(invalid="ignore"):         # (each branch is NaN where the other is taken)
        z = np.where(w < 5.0, _horner(_CENTRAL, w - 2.5) * (1.0 - t),
                     np.sqrt(tail - 0.5 * np.log(math.pi * tail)))
    for _ in range(4):
        z = np.maximum(z, 0.4)
        log_erfc = _log_erfc(z)
        # d/dz log(erfc(z)) = -exp(-z^2 - log(erfc(z))) / (sqrt(pi) / 2)
        slope = -np.exp(-z * z - log_erfc) / _SQRT_PI_OVER_2
        z = z + (log_erfc + tail) / (-slope)
    return z


def _ndtri_values(p: np.ndarray) -> np.ndarray:
    """ndtri of p elementwise, in p's float dtype (computed in float64): -+inf at 0 and 1, nan
    outside [0, 1].  sqrt(2) erfinv(2p - 1) only where 2p - 1 is exact (p in [0.25, 0.75]); in
    the tails 2p - 1 rounds away the digits of p (p = 2.7e-16 gave -7.84 for -8.10), so each tail
    is solved from its own probability: p, or 1 - p (exact for p >= 0.5), by symmetry."""
    p64 = p.astype(np.float64)
    out = np.full(p64.shape, np.nan)
    middle = (p64 >= 0.25) & (p64 <= 0.75)
    out[middle] = math.sqrt(2.0) * _erfinv_values(2.0 * p64[middle] - 1.0)
    lower = (p64 > 0) & (p64 < 0.25)
    out[lower] = -math.sqrt(2.0) * _erfcinv_tail(2.0 * p64[lower])
    upper = (p64 > 0.75) & (p64 < 1)
    out[upper] = math.sqrt(2.0) * _erfcinv_tail(2.0 * (1.0 - p64[upper]))
    out[p64 == 0] = -np.inf
    out[p64 == 1] = np.inf
    return out.astype(p.dtype)


class Ndtri(Function):
    """The standard normal quantile; backward multiplies by sqrt(2 pi) exp(result^2 / 2), read
    from the saved result as PyTorch's SpecialNdtriBackward0 (a later in-place write into the
    result refuses the backward)."""

    @staticmethod
    def forward(ctx, p):
        result = _wrap_like(_ndtri_values(p._array), p)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        result, = ctx.saved_tensors
        return grad * _core.exp(result * result * 0.5) * math.sqrt(2.0 * math.pi)


_torch_grad_fn_name(Ndtri, "SpecialNdtriBackward0")


def ndtri(input):
    """The inverse of ndtr: the standard normal quantile of probability ``input`` (integers
    give the default float dtype)."""
    _check_tensor(input, "special_ndtri")
    if input.dtype.is_complex or input._array.dtype == np.float16:
        raise NotImplementedError(f"\"ndtri_cpu\" not implemented for "
                                  f"'{_core.scalar_type_name_of(input._array.dtype)}'")
    return Ndtri.apply(_float_input(input, "ndtri_cpu", "special_ndtri"))


def erfinv(input):
    """The inverse error function: the x with erf(x) = input (input in [-1, 1]; +-inf at the
    ends, nan outside); integer inputs give the default float dtype."""
    result = Erfinv.apply(_float_input(input, "erfinv"))
    return result


def register(namespace: dict, tensor_cls) -> None:
    """Add tapegrad.erfinv/lgamma/digamma/erfc/exp2 and the Tensor methods (existing names win)."""
    for fn in (erfinv, lgamma, digamma, erfc, exp2):
        namespace.setdefault(fn.__name__, fn)
        if not has_member(tensor_cls, fn.__name__):
            setattr(tensor_cls, fn.__name__, _as_method(fn))


def _as_method(fn):
    def method(self):
        return fn(self)
    method.__name__ = fn.__name__
    method.__doc__ = f"Tensor.{fn.__name__}: see :func:`tapegrad.{fn.__name__}`."
    return method
