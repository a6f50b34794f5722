"""torch.special's Bessel functions, scaled modified Bessel functions, erfcx, log_ndtr, airy_ai
and the orthogonal polynomials, with PyTorch's edges.

Values are computed here in float64 with numpy (vectorised) and cast to the input's dtype:
- J0, J1, Y0, Y1: for |x| <= 25 Miller's backward recurrence for J_n (normalised by
  J0 + 2 sum J_2k = 1), Y0 and Y1 from the Neumann series on the same J_n (A&S 9.1.88 and its
  derivative); above, Hankel's asymptotic expansion (A&S 9.2.5-10), its phase taken from
  cos x and sin x (exact argument reduction) rather than x - pi/4.
- I0, I1 (and the e^-|x|-scaled forms): the power series up to |x| = 30, the asymptotic
  expansion e^x / sqrt(2 pi x) sum (-1)^k a_k(nu) / x^k above (A&S 9.7.1).
- K0, K1 (and e^x-scaled): the series A&S 9.6.13 / 9.6.11 up to x = 1, the trapezoidal rule
  on K_nu(x) = int_0^inf e^(-x cosh t) cosh(nu t) dt up to x = 25 (exponentially convergent:
  the integrand is analytic in a strip), the asymptotic expansion above.
- erfcx: e^(x^2) erfc(x) with x^2 split exactly (hi + lo) below 26, the Laplace continued
  fraction above; log_ndtr through erfc and erfcx.
- airy_ai: Taylor series of Ai'' = x Ai about anchors in [-10, 10] whose values come from the
  Maclaurin series summed in 60-digit decimal arithmetic (once, on first use); the asymptotic
  expansions (A&S 10.4.59, 10.4.60) beyond.
- Polynomials: PyTorch's definitions (n truncated to an integer, 0 for n < 0 or a non-finite n),
  three-term recurrences, the closed forms at |x| = 1 and the trigonometric ones for |x| < 1 and
  large n, so inf and NaN propagate as PyTorch's.

i0e, i1, i1e, erfcx and log_ndtr are differentiable (autograd Functions whose backward is
written with the same Functions, so higher derivatives work); the others give results that do
not require grad, as PyTorch's (no derivative formula).
"""
from __future__ import annotations as _annotations

import decimal
import math
import sys

import numpy as np

from . import _core
from ._extra_functions import _torch_grad_fn_name
from ._extra_ops import _check_broadcast, _check_tensor_or_number, _wrap, _wrap_like
from ._special_functions import _float_input
from .autograd.function import Function

TensorBase = _core.TensorBase
_EULER = 0.57721566490153286061
_SQRT_PI = math.sqrt(math.pi)


def _quiet(values):
    """values run with numpy's floating-point warnings off (overflow to inf, NaN for NaN are
    the results PyTorch gives, silently), on arrays of at least one dim (numpy's arithmetic
    makes scalars of 0-d arrays, which masked assignment cannot take)."""
    def run(*args):
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        args = [a.reshape(1) if isinstance(a, np.ndarray) and a.ndim == 0 else a for a in args]
        with np.errstate(all="ignore"):
            return np.asarray(values(*args)).reshape(shape)
    run.__name__ = values.__name__
    run.__doc__ = values.__doc__
    return run


# -- shared asymptotic coefficients ---------------------------------------------------------------

def _hankel_coefficients(nu: int, count: int) -> list:
    """a_k(nu) = prod_{j<=k} (4 nu^2 - (2j - 1)^2) / (k! 8^k), k = 0 .. count - 1."""
    mu = 4.0 * nu * nu
    out, a = [], 1.0
    for k in range(count):
        if k:
            a = a * (mu - (2 * k - 1) ** 2) / (k * 8.0)
        out.append(a)
    return out


_A0 = _hankel_coefficients(0, 40)
_A1 = _hankel_coefficients(1, 40)


# -- J0, J1, Y0, Y1 -------------------------------------------------------------------------------

_BESSEL_J_ASYMPTOTIC_FROM = 25.0


def _bessel_series(x: np.ndarray):
    """J0, J1, Y0, Y1 for 0 < x <= 1 by their power series (A&S 9.1.10, 9.1.11)."""
    q = -x * x / 4
    term0 = np.ones_like(x)             # (-x^2/4)^k / k!^2
    term1 = np.ones_like(x)             # (-x^2/4)^k / (k! (k+1)!)
    j0, j1_half = term0.copy(), term1.copy()
    y0_sum = np.zeros_like(x)           # sum (-1)^(k+1) H_k (x^2/4)^k / k!^2
    y1_sum = term1 * (1 - 2 * _EULER)   # sum (psi(k+1) + psi(k+2)) (-x^2/4)^k / (k!(k+1)!)
    h = 0.0
    for k in range(1, 30):
        term0 = term0 * q / (k * k)
        term1 = term1 * q / (k * (k + 1))
        h += 1.0 / k
        j0 += term0
        j1_half += term1
        y0_sum -= term0 * h
        y1_sum += term1 * (2 * (h - _EULER) + 1.0 / (k + 1))
    j1 = j1_half * x / 2
    log_half = np.log(x) - math.log(2.0)      # (x / 2 underflows for the least subnormal)
    y0 = 2 / math.pi * ((log_half + _EULER) * j0 + y0_sum)
    y1 = -2 / (math.pi * x) + 2 / math.pi * log_half * j1 - x / (2 * math.pi) * y1_sum
    return j0, j1, y0, y1


def _bessel_small(x: np.ndarray):
    """J0, J1, Y0, Y1 for 1 < x <= 25 by Miller's backward recurrence."""
    top = int(2 * math.ceil((float(x.max(initial=0.0)) + 40) / 2))
    j_next = np.zeros_like(x)               # J_{k+1} (unnormalised)
    j_cur = np.full_like(x, 1e-300)         # J_k
    norm = np.zeros_like(x)                 # J0 + 2 sum J_2k
    y0_sum = np.zeros_like(x)               # sum (-1)^k J_2k / k
    y1_sum = np.zeros_like(x)               # sum (-1)^k (J_2k-1 - J_2k+1) / k
    j1 = np.zeros_like(x)
    for k in range(top, 0, -1):
        j_prev = 2 * k / x * j_cur - j_next     # J_{k-1}
        if k % 2 == 0:                      # j_cur is J_k with k = 2m even
            m = k // 2
            sign = -1.0 if m % 2 else 1.0
            norm += 2 * j_cur
            y0_sum += sign * j_cur / m
            y1_sum += sign * (j_prev - j_next) / m
        if k == 1:
            j1 = j_cur
        j_next, j_cur = j_cur, j_prev
        big = np.abs(j_cur) > 1e250
        if big.any():
            scale = np.where(big, 1e-250, 1.0)
            j_next *= scale; j_cur *= scale; norm *= scale; y0_sum *= scale; y1_sum *= scale
            j1 *= scale
    j0 = j_cur
    norm += j0
    j0, j1, y0_sum, y1_sum = j0 / norm, j1 / norm, y0_sum / norm, y1_sum / norm
    log_term = np.log(x / 2) + _EULER
    y0 = 2 / math.pi * (log_term * j0 - 2 * y0_sum)
    y1 = 2 / math.pi * (log_term * j1 - j0 / x + y1_sum)
    return j0, j1, y0, y1


def _hankel_pq(x: np.ndarray, a: list):
    """P and Q of Hankel's expansion: sum (-1)^k a_2k / x^2k, sum (-1)^k a_2k+1 / x^2k+1."""
    p = np.zeros_like(x)
    q = np.zeros_like(x)
    inv = 1 / x
    for k in reversed(range(len(a) // 2)):
        sign = -1.0 if k % 2 else 1.0
        p = p * inv * inv + sign * a[2 * k]
        q = q * inv * inv + sign * a[2 * k + 1]
    return p, q * inv


def _bessel_large(x: np.ndarray, order: int, second_kind: bool):
    with np.errstate(over="ignore", invalid="ignore"):
        p, q = _hankel_pq(x, _A0 if order == 0 else _A1)
        c, s = np.cos(x), np.sin(x)
        r = math.sqrt(0.5)
        if order == 0:          # chi = x - pi/4
            cos_chi, sin_chi = (c + s) * r, (s - c) * r
        else:                   # chi = x - 3 pi / 4
            cos_chi, sin_chi = (s - c) * r, -(s + c) * r
        amplitude = np.sqrt(2 / (math.pi * x))
        if second_kind:
            return amplitude * (p * sin_chi + q * cos_chi)
        return amplitude * (p * cos_chi - q * sin_chi)


@_quiet
def _bessel_values(x: np.ndarray, order: int, second_kind: bool) -> np.ndarray:
    x64 = x.astype(np.float64)
    ax = np.abs(x64)
    out = np.full(x64.shape, np.nan)
    tiny = (ax > 0) & (ax <= 1)
    if tiny.any():
        out[tiny] = _bessel_series(ax[tiny])[order + 2 * second_kind]
    small = (ax > 1) & (ax <= _BESSEL_J_ASYMPTOTIC_FROM)
    large = np.isfinite(ax) & (ax > _BESSEL_J_ASYMPTOTIC_FROM)
    if small.any():
        values = _bessel_small(ax[small])[order + 2 * second_kind]
        out[small] = values
    if large.any():
        out[large] = _bessel_large(ax[large], order, second_kind)
    if second_kind:
        out[x64 < 0] = np.nan
        out[x64 == 0] = -np.inf
    else:
        out[x64 == 0] = 1.0 if order == 0 else 0.0
        if order == 1:
            out = np.where(x64 < 0, -out, out)
    return out.astype(x.dtype)


# -- I0, I1 and the scaled forms -------------------------------------------------------------------

def _modified_i(x: np.ndarray, order: int, scaled: bool) -> np.ndarray:
    """I_order(|x|) (times e^-|x| when scaled) in float64 for finite x."""
    ax = np.abs(x)
    out = np.empty_like(ax)
    small = ax <= 30
    xs = ax[small]
    term = np.ones_like(xs) if order == 0 else xs / 2
    total = term.copy()
    quarter_sq = xs * xs / 4
    for k in range(1, 100):
        term = term * quarter_sq / (k * (k + order))
        total += term
    out[small] = total * np.exp(-xs) if scaled else total
    xl = ax[~small]
    a = _A0 if order == 0 else _A1
    series = np.zeros_like(xl)
    inv = 1 / xl if xl.size else xl
    for k in reversed(range(20)):
        series = series * inv + (-1.0 if k % 2 else 1.0) * a[k]
    with np.errstate(over="ignore", invalid="ignore"):
        prefix = 1 / np.sqrt(2 * math.pi * xl)
        out[~small] = prefix * series if scaled else (np.exp(xl / 2) * prefix * series) * \
            np.exp(xl / 2)
    return out


@_quiet
def _modified_i_values(x: np.ndarray, order: int, scaled: bool,
                       inf_value: float | None = None) -> np.ndarray:
    """PyTorch's edges: at +-inf the scaled forms give 0 (signed for I1), the unscaled ones
    inf (i1, modified_bessel_i*) or NaN (torch's modified_bessel_i0/i1 at inf)."""
    x64 = x.astype(np.float64)
    out = np.full(x64.shape, np.nan)
    finite = np.isfinite(x64)
    out[finite] = _modified_i(x64[finite], order, scaled)
    if order == 1:
        out = np.where(x64 < 0, -out, out)
    inf = np.isinf(x64)
    if scaled:
        out[inf] = np.copysign(0.0, x64[inf]) if order == 1 else 0.0
    elif inf_value is not None:
        out[inf] = inf_value
    return out.astype(x.dtype)


# -- K0, K1 ---------------------------------------------------------------------------------------

_K_NODES = np.arange(0, 47) * 0.1           # t_j = j h, h = 0.1, up to cosh t ~ 50


def _modified_k(x: np.ndarray, order: int, scaled: bool) -> np.ndarray:
    """K_order(x) (times e^x when scaled) in float64 for 0 < x < inf."""
    out = np.empty_like(x)
    small = x <= 1
    xs = x[small]
    if xs.size:
        q = xs * xs / 4
        log_term = np.log(xs / 2) + _EULER
        if order == 0:      # K0 = -(ln(x/2) + gamma) I0 + sum q^k / k!^2 H_k
            term = np.ones_like(xs)
            i0 = term.copy()
            harmonic_sum = np.zeros_like(xs)
            h = 0.0
            for k in range(1, 40):
                term = term * q / (k * k)
                h += 1.0 / k
                i0 += term
                harmonic_sum += term * h
            value = -log_term * i0 + harmonic_sum
        else:               # K1 = 1/x + ln(x/2) I1 - x/4 sum (psi(k+1) + psi(k+2)) q^k/(k!(k+1)!)
            term = np.ones_like(xs)
            i1 = term.copy()
            psi_sum = (-_EULER) + (1 - _EULER)
            h = 0.0
            total = term * psi_sum
            for k in range(1, 40):
                term = term * q / (k * (k + 1))
                h += 1.0 / k
                i1 += term
                total += term * (2 * (h - _EULER) + 1.0 / (k + 1))
            i1 = i1 * xs / 2
            value = 1 / xs + np.log(xs / 2) * i1 - xs / 4 * total
        out[small] = value * np.exp(xs) if scaled else value
    mid = (x > 1) & (x <= 25)
    xm = x[mid]
    if xm.size:
        weights = np.cosh(order * _K_NODES)
        weights[0] *= 0.5
        shift = np.cosh(_K_NODES) - 1
        total = np.zeros_like(xm)
        for w, s in zip(weights, shift):
            total += w * np.exp(-xm * s)
        value = 0.1 * total
        out[mid] = value if scaled else value * np.exp(-xm)
    large = x > 25
    xl = x[large]
    if xl.size:
        a = _A0 if order == 0 else _A1
        series = np.zeros_like(xl)
        for k in reversed(range(30)):
            series = series / xl + a[k]
        value = np.sqrt(math.pi / (2 * xl)) * series
        with np.errstate(under="ignore"):
            out[large] = value if scaled else value * np.exp(-xl)
    return out


@_quiet
def _modified_k_values(x: np.ndarray, order: int, scaled: bool) -> np.ndarray:
    x64 = x.astype(np.float64)
    out = np.full(x64.shape, np.nan)
    inner = (x64 > 0) & np.isfinite(x64)
    out[inner] = _modified_k(x64[inner], order, scaled)
    out[x64 == 0] = np.inf
    out[np.isposinf(x64)] = 0.0
    return out.astype(x.dtype)


# -- spherical j0 ---------------------------------------------------------------------------------

@_quiet
def _spherical_j0_values(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.sin(x64) / x64
    small = np.abs(x64) < 0.5
    s = x64[small] ** 2
    series = np.zeros_like(s)
    for k in reversed(range(12)):       # sin(x)/x = sum (-x^2)^k / (2k+1)!
        series = series * s + (-1.0) ** k / math.factorial(2 * k + 1)
    out[small] = series
    out[np.isinf(x64)] = 0.0
    return out.astype(x.dtype)


# -- erfcx and log_ndtr ---------------------------------------------------------------------------

_erfc = np.frompyfunc(math.erfc, 1, 1)


def _exp_square(x: np.ndarray, factor: float = 1.0) -> np.ndarray:
    """e^(factor x^2) with x^2 split into hi + lo exactly (Dekker), so the rounding of x^2 does
    not reach the result (factor a power of 2, so factor * hi is exact too)."""
    split = x * 134217729.0             # 2^27 + 1
    hi_x = split - (split - x)
    lo_x = x - hi_x
    hi = x * x
    lo = ((hi_x * hi_x - hi) + 2 * hi_x * lo_x) + lo_x * lo_x
    with np.errstate(over="ignore"):
        return np.exp(factor * hi) * (1 + factor * lo)


def _erfcx_nonnegative(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    near = x < 26
    xn = x[near]
    out[near] = _exp_square(xn) * np.asarray(_erfc(xn), dtype=np.float64)
    xf = x[~near]
    # Laplace's continued fraction: sqrt(pi) erfcx(x) = 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
    tail = np.zeros_like(xf)
    for k in range(40, 0, -1):
        tail = (k / 2) / (xf + tail)
    with np.errstate(divide="ignore"):
        out[~near] = 1 / ((xf + tail) * _SQRT_PI)
    return out


def _erfcx64(x64: np.ndarray) -> np.ndarray:
    out = np.full(x64.shape, np.nan)
    nonneg = x64 >= 0
    out[nonneg] = _erfcx_nonnegative(x64[nonneg])
    neg = x64 < 0
    xn = x64[neg]
    with np.errstate(over="ignore", invalid="ignore"):
        out[neg] = 2 * _exp_square(xn) - _erfcx_nonnegative(-xn)
    out[np.isneginf(x64)] = np.inf
    return out


@_quiet
def _erfcx_values(x: np.ndarray) -> np.ndarray:
    return _erfcx64(x.astype(np.float64)).astype(x.dtype)


@_quiet
def _log_ndtr_values(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    t = x64 / math.sqrt(2.0)
    out = np.full(x64.shape, np.nan)
    upper = (t > -1) & (t <= 1)
    with np.errstate(divide="ignore"):
        out[upper] = np.log1p(-0.5 * np.asarray(_erfc(t[upper]), dtype=np.float64))
        # above: erfc(t) = erfcx(t) e^(-x^2/2), so the rounding of x / sqrt 2 stays out of the
        # exponent (it would cost x^2 ulps)
        far = (t > 1) & (x64 < 40)
        out[far] = np.log1p(-0.5 * _erfcx64(t[far]) * _exp_square(x64[far], -0.5))
        out[x64 >= 40] = -0.0           # (1 - Phi(x) < 1e-349 there)
        lower = t <= -1         # log(erfc(-t) / 2) = log(erfcx(-t) / 2) - t^2
        out[lower] = np.log(_erfcx64(-t[lower]) / 2) - x64[lower] ** 2 / 2
    out[np.isneginf(x64)] = -np.inf
    return out.astype(x.dtype)


# -- airy_ai --------------------------------------------------------------------------------------

_AIRY_STEP = 0.25
_AIRY_RANGE = 10.0
_airy_anchors = None        # (Ai, Ai') at -10, -9.75, ..., 10, made on first use


def _airy_anchor_table():
    global _airy_anchors
    if _airy_anchors is None:
        ctx = decimal.Context(prec=60)
        # Ai(0) = 3^(-2/3) / Gamma(2/3), Ai'(0) = -3^(-1/3) / Gamma(1/3)
        c1 = ctx.create_decimal("0.355028053887817239260063186004183176397979174199177")
        c2 = ctx.create_decimal("0.258819403792806798405183560189203963479091138354934")
        points = np.arange(-_AIRY_RANGE, _AIRY_RANGE + _AIRY_STEP / 2, _AIRY_STEP)
        values = np.empty((len(points), 2))
        for i, p in enumerate(points):
            z = ctx.create_decimal(repr(float(p)))
            z3 = ctx.multiply(ctx.multiply(z, z), z)
            # f = sum 3^k (1/3)_k z^3k / (3k)!, g = sum 3^k (2/3)_k z^(3k+1) / (3k+1)!:
            # terms from f_{k+1} = f_k z^3 / ((3k+2)(3k+3)), g_{k+1} = g_k z^3 / ((3k+3)(3k+4))
            f = term_f = decimal.Decimal(1)
            g = term_g = z
            df = decimal.Decimal(0)
            dg = decimal.Decimal(1)
            k = 0
            with decimal.localcontext(ctx):
                while True:
                    term_f = term_f * z3 / ((3 * k + 2) * (3 * k + 3))
                    term_g = term_g * z3 / ((3 * k + 3) * (3 * k + 4))
                    f += term_f
                    g += term_g
                    df += term_f * (3 * k + 3) / z if z else 0
                    dg += term_g * (3 * k + 4) / z if z else 0
                    k += 1
                    if abs(term_f) + abs(term_g) < decimal.Decimal("1e-45") and k > 5:
                        break
                values[i, 0] = float(c1 * f - c2 * g)
                values[i, 1] = float(c1 * df - c2 * dg)
        _airy_anchors = values
    return _airy_anchors


def _airy_taylor(x: np.ndarray) -> np.ndarray:
    table = _airy_anchor_table()
    index = np.rint((x + _AIRY_RANGE) / _AIRY_STEP).astype(np.int64)
    x0 = index * _AIRY_STEP - _AIRY_RANGE
    h = x - x0
    c_prev2 = np.zeros_like(x)          # c_{k-1}
    c_prev = table[index, 0]            # c_k, k = 0
    c_cur = table[index, 1]             # c_{k+1}
    total = c_prev + c_cur * h
    power = h.copy()
    # y'' = x y about x0: (k+2)(k+1) c_{k+2} = x0 c_k + c_{k-1}
    for k in range(0, 40):
        c_next = (x0 * c_prev + c_prev2) / ((k + 2) * (k + 1))
        power = power * h
        total += c_next * power
        c_prev2, c_prev, c_cur = c_prev, c_cur, c_next
    return total


def _airy_u(count: int) -> list:
    """u_k of A&S 10.4.59: u_k = (6k-5)(6k-3)(6k-1) / ((2k-1) 216 k) u_{k-1}."""
    u = [1.0]
    for k in range(1, count):
        u.append(u[-1] * (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / ((2 * k - 1) * 216 * k))
    return u


_AIRY_U = _airy_u(24)


@_quiet
def _airy_values(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    out = np.full(x64.shape, np.nan)
    mid = np.abs(x64) <= _AIRY_RANGE
    out[mid] = _airy_taylor(x64[mid])
    pos = (x64 > _AIRY_RANGE) & np.isfinite(x64)
    xp = x64[pos]
    if xp.size:
        zeta = 2 / 3 * xp * np.sqrt(xp)
        series = np.zeros_like(xp)
        for k in reversed(range(len(_AIRY_U))):
            series = series / (-zeta) + _AIRY_U[k]
        with np.errstate(under="ignore"):
            out[pos] = np.exp(-zeta) / (2 * _SQRT_PI * np.sqrt(np.sqrt(xp))) * series
    neg = (x64 < -_AIRY_RANGE) & np.isfinite(x64)
    xn = -x64[neg]
    if xn.size:
        zeta = 2 / 3 * xn * np.sqrt(xn)
        even = np.zeros_like(xn)
        odd = np.zeros_like(xn)
        z2 = zeta * zeta
        for k in reversed(range(len(_AIRY_U) // 2)):
            sign = -1.0 if k % 2 else 1.0
            even = even / z2 + sign * _AIRY_U[2 * k]
            odd = odd / z2 + sign * _AIRY_U[2 * k + 1]
        odd = odd / zeta
        phase = zeta + math.pi / 4
        out[neg] = (np.sin(phase) * even - np.cos(phase) * odd) / (_SQRT_PI * np.sqrt(np.sqrt(xn)))
    return out.astype(x.dtype)


# -- orthogonal polynomials ------------------------------------------------------------------------

def _degree(n64: np.ndarray) -> np.ndarray:
    """n truncated toward 0 as an integer; -1 (the polynomial is 0) for NaN, +-inf and beyond
    int64 (PyTorch's cast gives INT64_MIN there)."""
    ok = np.isfinite(n64) & (np.abs(n64) < 2.0 ** 63)
    return np.where(ok, np.trunc(np.where(ok, n64, 0)), -1).astype(np.int64)


def _recurrence(x, n, first, step):
    """p_n(x) elementwise from p_0 = 1, p_1 = first(x) and p_{k+1} = step(k, x, p_k, p_{k-1});
    0 for n < 0."""
    out = np.where(n < 0, 0.0, np.where(n == 0, 1.0, np.nan))
    p_prev = np.ones_like(x)
    p = first(x)
    out = np.where(n == 1, p, out)
    top = int(n.max(initial=0))
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(1, top):
            p_prev, p = p, step(k, x, p, p_prev)
            done = n == k + 1
            if done.any():
                out = np.where(done, p, out)
    return out


def _chebyshev(kind: str, x: np.ndarray, n: np.ndarray) -> np.ndarray:
    first = {"t": lambda x: x, "u": lambda x: 2 * x, "v": lambda x: 2 * x - 1,
             "w": lambda x: 2 * x + 1}[kind]
    out = _recurrence(x, n, first, lambda k, x, p, q: 2 * x * p - q)
    even = n % 2 == 0
    positive_one = (x == 1) & (n >= 0)
    negative_one = (x == -1) & (n >= 0)
    if kind == "t":
        at_pos, at_neg = 1.0, np.where(even, 1.0, -1.0)
    elif kind == "u":
        at_pos, at_neg = n + 1.0, np.where(even, n + 1.0, -(n + 1.0))
    elif kind == "v":
        at_pos, at_neg = 1.0, np.where(even, 2 * n + 1.0, -(2 * n + 1.0))
    else:
        at_pos, at_neg = 2 * n + 1.0, np.where(even, 1.0, -1.0)
    out = np.where(positive_one, at_pos, np.where(negative_one, at_neg, out))
    inside = (np.abs(x) < 1) & (n > (6 if kind == "t" else 8))
    if inside.any():
        with np.errstate(invalid="ignore", divide="ignore"):
            theta = np.arccos(np.where(inside, x, 0.0))
            if kind == "t":
                trig = np.cos(n * theta)
            elif kind == "u":
                trig = np.sin((n + 1) * theta) / np.sin(theta)
            elif kind == "v":
                trig = np.cos((n + 0.5) * theta) / np.cos(theta / 2)
            else:
                trig = np.sin((n + 0.5) * theta) / np.sin(theta / 2)
        out = np.where(inside, trig, out)
    return out


@_quiet
def _polynomial_values(kind: str, x: np.ndarray, n: np.ndarray) -> np.ndarray:
    x, n = np.broadcast_arrays(x.astype(np.float64), _degree(n.astype(np.float64)))
    if kind in ("t", "u", "v", "w"):
        return _chebyshev(kind, x, n)
    if kind.startswith("shifted_"):
        return _chebyshev(kind[-1], x + x - 1, n)
    if kind == "h":
        return _recurrence(x, n, lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - 2 * k * q)
    if kind == "he":
        return _recurrence(x, n, lambda x: x, lambda k, x, p, q: x * p - k * q)
    if kind == "l":
        out = _recurrence(x, n, lambda x: 1 - x,
                          lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1))
        return np.where((x == 0) & (n >= 0), 1.0, out)
    # Legendre
    out = _recurrence(x, n, lambda x: x,
                      lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1))
    return np.where((np.abs(x) == 1) & (n >= 0),
                    np.where((x > 0) | (n % 2 == 0), 1.0, -1.0), out)


# -- autograd Functions (the differentiable ones) -------------------------------------------------

def _half_type_name(x, grad):
    """PyTorch's name of the half type of input x / gradient grad ('Half', 'BFloat16'), or None.
    (A bfloat16 input is known by its class: the sweep may hand its gradient over as the float32
    storage; the bfloat16 module is asked only once something has loaded it.)"""
    if grad.dtype == _core.float16:
        return "Half"
    bf16 = sys.modules.get(__package__ + "._bfloat16")
    return "BFloat16" if bf16 is not None and bf16.is_bfloat16(x) else None


def _differentiable(name: str, values, derivative, grad_fn: str, doc: str,
                    saves_result=True, takes_result=False, no_half_backward=None):
    """The autograd Function of a differentiable unary special function: forward `values`
    (ndarray -> ndarray), backward grad * derivative(x), written with these Functions (so the
    derivatives are differentiable in turn, as PyTorch's).  `saves_result`: PyTorch's node saves
    the result too (its formula reads it), so a write into the result makes backward raise
    the in-place error there (fuzz 60623752).  `takes_result`: `derivative(x, result)` reads
    the result as PyTorch's formula does, so under create_graph the second pass goes through
    the result, and a hook on it sees that pass's gradient (60646768: i0e).
    `no_half_backward`: the name of PyTorch's backward kernel, which has no float16 or
    bfloat16 version (its backward raises NotImplementedError there; fuzz 60658522: i1e;
    67000579: i1 in bfloat16, reached as i0's second derivative)."""
    def forward(ctx, x):
        result = _wrap_like(values(x._array), x)
        ctx.save_for_backward(x, result) if saves_result else ctx.save_for_backward(x)
        return result

    def backward(ctx, grad):
        half = no_half_backward and _half_type_name(ctx.saved_tensors[0], grad)
        if half:
            raise NotImplementedError(f"\"{no_half_backward}\" not implemented for '{half}'")
        if saves_result and takes_result:
            x, result = ctx.saved_tensors
            return grad * derivative(x, result)
        x = ctx.saved_tensors[0]
        return grad * derivative(x)
    op = type(name, (Function,), {"forward": staticmethod(forward),
                                  "backward": staticmethod(backward), "__doc__": doc,
                                  "__module__": __name__})
    _torch_grad_fn_name(op, grad_fn)
    return op


def _half_at_zero(x, derivative, below=0.0):
    """derivative(x) where |x| > below and 1/2 at and next to 0 (the limit there of I1' and
    i1e', whose formulas divide by x); x enters `derivative` as 1 there, so no 0/0 reaches the
    graph.  (At |x| = 5e-324, I1(x) underflows to 0 and 1/x overflows: the formulas gave I1'
    = 1 and i1e' = nan there.)  A NaN x counts as near 0, as PyTorch's test |x| > eps leaves it
    (its gradient is 1/2, not NaN; fuzz 62646809)"""
    from . import where
    zero = (x.abs() > below).logical_not()
    safe = where(zero, 1.0, x)
    return where(zero, 0.5, derivative(safe))


def _i0(x):
    from ._more_math import i0
    return i0(x)


I0e = _differentiable(
    "I0e", lambda a: _modified_i_values(a, 0, True),
    lambda x, result: I1e.apply(x) - x.sign() * result, "SpecialI0EBackward0",
    "e^-|x| I0(x); derivative i1e(x) - sgn(x) i0e(x).", takes_result=True)
I1 = _differentiable(
    "I1", lambda a: _modified_i_values(a, 1, False, np.nan),
    # (I0 - I1/x = 1/2 + 3 x^2 / 16 + ...: 1/2 to the last bit below 1e-8)
    lambda x, result: _half_at_zero(x, lambda t: _i0(t) - result / t, 1e-8), "SpecialI1Backward0",
    "I1(x); derivative I0(x) - I1(x) / x (1/2 at 0).", takes_result=True,
    no_half_backward="i1_backward")
I1e = _differentiable(
    "I1e", lambda a: _modified_i_values(a, 1, True),
    # (i1e' = 1/2 - 3|x|/2 + ...: 1/2 to the last bit below 1e-300, where 1/x is finite)
    lambda x, result: _half_at_zero(
        x, lambda t: I0e.apply(t) - result * (t.sign() + 1 / t), 1e-300),
    "SpecialI1EBackward0", "e^-|x| I1(x); derivative i0e(x) - i1e(x) (sgn(x) + 1/x) (1/2 at 0).",
    takes_result=True, no_half_backward="i1e_backward")
def _erfcx_derivative(x, result):
    """2 x erfcx(x) - 2 / sqrt(pi); above x = 8 the two terms cancel to ~ -1 / (sqrt(pi) x^2)
    (erfcx'(1000) in float32 was 27% off), so there its asymptotic series
    2 / sqrt(pi) sum_{n>=1} (-1)^n (2n - 1)!! / (2 x^2)^n, whose 20th term is below 3e-19."""
    from . import where
    far = x > 8
    safe = where(far, x, x.detach() * 0 + 8)       # (no huge terms where the series is unused)
    u = 1 / (2 * safe * safe)
    term = u * 0 + 1
    series = u * 0
    for n in range(1, 21):
        term = term * -(2 * n - 1) * u
        series = series + term
    return where(far, series * (2 / _SQRT_PI), 2 * x * result - 2 / _SQRT_PI)


Erfcx = _differentiable(
    "Erfcx", _erfcx_values, _erfcx_derivative,
    "SpecialErfcxBackward0", "e^(x^2) erfc(x); derivative 2 x erfcx(x) - 2 / sqrt(pi).",
    takes_result=True)

@_quiet
def _normal_hazard_values(x: np.ndarray) -> np.ndarray:
    """phi(x) / Phi(x) = sqrt(2 / pi) / erfcx(-x / sqrt 2), in x's dtype."""
    x64 = x.astype(np.float64)
    return (math.sqrt(2 / math.pi) / _erfcx64(-x64 / math.sqrt(2.0))).astype(x.dtype)


# log_ndtr' = g = phi / Phi and g' = -g (x + g): no ratio of overflowing erfcx values (the
# quotient rule on 1 / erfcx would square one), so every derivative keeps its digits in the tails
NormalHazard = _differentiable(
    "NormalHazard", _normal_hazard_values,
    lambda x: -NormalHazard.apply(x) * (x + NormalHazard.apply(x)), "SpecialLogNdtrBackward0",
    "phi(x) / Phi(x), the derivative of log_ndtr; its own derivative is -g (x + g).",
    saves_result=False)
LogNdtr = _differentiable(
    "LogNdtr", _log_ndtr_values, NormalHazard.apply, "SpecialLogNdtrBackward0",
    "log Phi(x); derivative phi(x) / Phi(x), accurate in the lower tail where "
    "exp(-x^2/2) / Phi(x) would lose digits.")


# -- public functions ------------------------------------------------------------------------------

def _unary_function(name: str, values=None, function=None, doc: str = "", half=False):
    """The public function `name`: a differentiable autograd `function`, or `values` (ndarray ->
    ndarray) whose result does not require grad (PyTorch has no derivative for it).  `half`:
    PyTorch's CPU kernel takes float16 (the others refuse it)."""
    torch_name = name[:-1] if name.endswith("_") else name

    def op(input):
        x = _float_input(input, torch_name + "_cpu", "special_" + torch_name)
        if not half and x._array.dtype == np.float16:
            raise NotImplementedError(f"\"{torch_name}_cpu\" not implemented for 'Half'")
        if function is not None:
            return function.apply(x)
        return _wrap_like(values(x._array), x)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


i0e = _unary_function("i0e", function=I0e, doc="The exponentially scaled modified Bessel "
                      "function of order 0: e^-|x| I0(x).", half=True)
i1 = _unary_function("i1", function=I1, doc="The modified Bessel function of the first kind of "
                     "order 1.", half=True)
i1e = _unary_function("i1e", function=I1e, doc="The exponentially scaled modified Bessel "
                      "function of order 1: e^-|x| I1(x).", half=True)
erfcx = _unary_function("erfcx", function=Erfcx, doc="The scaled complementary error function "
                        "e^(x^2) erfc(x).")
log_ndtr = _unary_function("log_ndtr", function=LogNdtr, doc="The log of the standard normal "
                           "cumulative distribution function, accurate in the lower tail.")
airy_ai = _unary_function("airy_ai", _airy_values, doc="The Airy function Ai (no derivative).")
bessel_j0 = _unary_function("bessel_j0", lambda a: _bessel_values(a, 0, False),
                            doc="The Bessel function of the first kind of order 0.")
bessel_j1 = _unary_function("bessel_j1", lambda a: _bessel_values(a, 1, False),
                            doc="The Bessel function of the first kind of order 1.")
bessel_y0 = _unary_function("bessel_y0", lambda a: _bessel_values(a, 0, True),
                            doc="The Bessel function of the second kind of order 0 (NaN below 0).")
bessel_y1 = _unary_function("bessel_y1", lambda a: _bessel_values(a, 1, True),
                            doc="The Bessel function of the second kind of order 1 (NaN below 0).")
modified_bessel_i0 = _unary_function(
    "modified_bessel_i0", lambda a: _modified_i_values(a, 0, False, np.nan),
    doc="The modified Bessel function of the first kind of order 0 (no derivative).")
modified_bessel_i1 = _unary_function(
    "modified_bessel_i1", lambda a: _modified_i_values(a, 1, False, np.nan),
    doc="The modified Bessel function of the first kind of order 1 (no derivative).")
modified_bessel_k0 = _unary_function(
    "modified_bessel_k0", lambda a: _modified_k_values(a, 0, False),
    doc="The modified Bessel function of the second kind of order 0 (NaN below 0).")
modified_bessel_k1 = _unary_function(
    "modified_bessel_k1", lambda a: _modified_k_values(a, 1, False),
    doc="The modified Bessel function of the second kind of order 1 (NaN below 0).")
scaled_modified_bessel_k0 = _unary_function(
    "scaled_modified_bessel_k0", lambda a: _modified_k_values(a, 0, True),
    doc="e^x K0(x).")
scaled_modified_bessel_k1 = _unary_function(
    "scaled_modified_bessel_k1", lambda a: _modified_k_values(a, 1, True),
    doc="e^x K1(x).")
spherical_bessel_j0 = _unary_function("spherical_bessel_j0", _spherical_j0_values,
                                      doc="The spherical Bessel function j0(x) = sin(x) / x.")


def _polynomial_function(name: str, kind: str, doc: str):
    def op(input, n):
        signatures = ("Tensor x, Tensor n, *, Tensor out = None",
                      "Number x, Tensor n, *, Tensor out = None",
                      "Tensor x, Number n, *, Tensor out = None")
        _check_tensor_or_number("special_" + name, (input, n), signatures)
        _check_broadcast(input, n)
        for a in (input, n):
            if isinstance(a, TensorBase) and a.is_complex():
                raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                          f"'{_core.scalar_type_name_of(a._array.dtype)}'")
        from . import result_type, get_default_dtype
        dtype = result_type(input, n)
        if not dtype.is_floating_point:
            dtype = get_default_dtype()
        if dtype.itemsize == 2:
            # PyTorch's CPU kernels have no float16 / bfloat16 loop (fuzz seed 62627372)
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                      f"'{_core.scalar_type_name_of(dtype.np_dtype)}'")
        x_arr = input._array if isinstance(input, TensorBase) else np.asarray(float(input))
        n_arr = n._array if isinstance(n, TensorBase) else np.asarray(n, dtype=np.float64)
        values = _polynomial_values(kind, x_arr, n_arr.astype(np.float64))
        return _wrap_like(values.astype(dtype.np_dtype), input, n)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc + " n is truncated to an integer; 0 for n < 0 (no derivative)."
    return op


chebyshev_polynomial_t = _polynomial_function("chebyshev_polynomial_t", "t",
                                              "The Chebyshev polynomial of the first kind T_n(x).")
chebyshev_polynomial_u = _polynomial_function("chebyshev_polynomial_u", "u",
                                              "The Chebyshev polynomial of the second kind U_n(x).")
chebyshev_polynomial_v = _polynomial_function("chebyshev_polynomial_v", "v",
                                              "The Chebyshev polynomial of the third kind V_n(x).")
chebyshev_polynomial_w = _polynomial_function("chebyshev_polynomial_w", "w",
                                              "The Chebyshev polynomial of the fourth kind W_n(x).")
shifted_chebyshev_polynomial_t = _polynomial_function(
    "shifted_chebyshev_polynomial_t", "shifted_t", "T_n(2x - 1).")
shifted_chebyshev_polynomial_u = _polynomial_function(
    "shifted_chebyshev_polynomial_u", "shifted_u", "U_n(2x - 1).")
shifted_chebyshev_polynomial_v = _polynomial_function(
    "shifted_chebyshev_polynomial_v", "shifted_v", "V_n(2x - 1).")
shifted_chebyshev_polynomial_w = _polynomial_function(
    "shifted_chebyshev_polynomial_w", "shifted_w", "W_n(2x - 1).")
hermite_polynomial_h = _polynomial_function("hermite_polynomial_h", "h",
                                            "The physicists' Hermite polynomial H_n(x).")
hermite_polynomial_he = _polynomial_function("hermite_polynomial_he", "he",
                                             "The probabilists' Hermite polynomial He_n(x).")
laguerre_polynomial_l = _polynomial_function("laguerre_polynomial_l", "l",
                                             "The Laguerre polynomial L_n(x).")
legendre_polynomial_p = _polynomial_function("legendre_polynomial_p", "p",
                                             "The Legendre polynomial P_n(x).")

NAMES = ("i0e", "i1", "i1e", "erfcx", "log_ndtr", "airy_ai", "bessel_j0", "bessel_j1",
         "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
         "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
         "scaled_modified_bessel_k1", "spherical_bessel_j0", "chebyshev_polynomial_t",
         "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
         "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
         "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
         "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
         "legendre_polynomial_p")
