"""The regularised incomplete gamma functions P(a, x) and Q(a, x) = 1 - P(a, x), elementwise in
float64, for a > 0 and finite x > 0 (the callers settle the edges), by three expansions:

    P(a, x) = x^a e^-x / Gamma(a) * series_sum(a, x)          (x < a + 1)
    Q(a, x) = x^a e^-x / Gamma(a) * continued_fraction(a, x)  (x >= a + 1)
    Temme's uniform asymptotic expansion (DLMF 8.12)           (a > 20, x near a)

The first two need O(sqrt(a)) terms next to x = a: past a ~ 1e4 their 2000-term cap cut them off
there (P(1e6, 1e6) came out 0.477 for 0.500), so large a near the centre takes the third, whose
cost does not grow with a.  The regimes are PyTorch's (its calc_igamma: a in (20, 200) with
|x - a| / a < 0.3, or a > 200 with |x - a| / a < 4.5 / sqrt(a)), the last band widened to 0.05
where it is narrower (a > 8100), since there PyTorch's own capped series lose digits too.
Shared by torch.special.gammainc / gammaincc (_more_math) and Gamma's cdf and the implicit
gradient of its samples (distributions/_standard_gamma).  Entries that have converged leave the
working arrays, so the slow ones do not hold up the rest.
"""
from __future__ import annotations as _annotations

import math

import numpy as np

from ._special_functions import _lgamma_values
from ._temme_coeffs import TEMME_D

_MAX_TERMS = 2000
_TINY = 1e-300          # the modified Lentz method's stand-in for a zero denominator


def series_sum(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """sum_{n >= 0} x^n / (a (a+1) ... (a+n)) for 1-d a, x (a > 0, x >= 0)."""
    total = 1 / a
    term = total.copy()
    out = np.empty_like(x)
    active = np.arange(x.size)            # entries still summing
    a, x = a.copy(), x.copy()
    for i in range(_MAX_TERMS):
        a = a + 1
        term = term * x / a
        total = total + term
        if i % 8 == 7 or i == _MAX_TERMS - 1:
            done = np.abs(term) <= np.abs(total) * 1e-17
            if i == _MAX_TERMS - 1:
                done[:] = True
            out[active[done]] = total[done]
            keep = ~done
            active, a, x, term, total = active[keep], a[keep], x[keep], term[keep], total[keep]
            if active.size == 0:
                break
    return out


def continued_fraction(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Q(a, x)'s continued fraction by the modified Lentz method, for 1-d a, x (x > 0)."""
    b = x + 1 - a
    c = np.full_like(x, 1 / _TINY)
    d = 1 / b
    h = d.copy()
    out = np.empty_like(x)
    active = np.arange(x.size)            # entries still converging
    a = a.copy()
    for i in range(1, _MAX_TERMS):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = np.where(np.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        d = 1 / d
        delta = d * c
        h = h * delta
        if i % 4 == 0 or i == _MAX_TERMS - 1:
            done = np.abs(delta - 1) <= 1e-16
            if i == _MAX_TERMS - 1:
                done[:] = True
            out[active[done]] = h[done]
            keep = ~done
            active, a, b, c, d, h = active[keep], a[keep], b[keep], c[keep], d[keep], h[keep]
            if active.size == 0:
                break
    return out


# B_2m / (2m (2m - 1)), m = 1.., the terms of log Gamma(a) - Stirling's formula in powers of 1/a^2
_STIRLING_TAIL = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156,
                  -3617 / 122400)
_STIRLING_FROM = 10.0        # past this the eight terms above are exact to float64's rounding


def _stirling_tail(a: np.ndarray) -> np.ndarray:
    """log Gamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2), for a >= _STIRLING_FROM."""
    inv_sq = 1 / (a * a)
    total = np.zeros_like(a)
    for coefficient in reversed(_STIRLING_TAIL):
        total = total * inv_sq + coefficient
    return total / a


def log1pmx(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """s - log(1 + s) for s = (x - a) / a (a, x > 0), without the cancellation of the direct
    difference near s = 0 (a Taylor series for |s| < 1/4: Temme's eta and the prefactor's
    exponent depend on it with a factor of a) and without log1p's loss next to s = -1 (log of
    the ratio x / a there, which carries no rounding of 1 + s)."""
    s = (x - a) / a
    out = np.empty_like(s)
    near = np.abs(s) < 0.25
    sn = s[near]
    series = np.zeros_like(sn)
    for k in range(31, 1, -1):           # sum_k>=2 (-1)^k s^k / k, 0.25^29 / 31 < 1e-19
        series = series * -sn + 1 / k
    out[near] = series * sn * sn
    far = ~near
    out[far] = s[far] - np.log(x[far] / a[far])
    return out


def log_prefactor(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """log(x^a e^-x / Gamma(a)).  For a >= 10 as -a log1pmx((x - a) / a) + log(a / 2 pi) / 2 -
    the Stirling tail: the direct form cancels two numbers of size a log a (a relative error of
    1e-11 at a = 1e5)."""
    out = np.empty_like(a)
    large = a >= _STIRLING_FROM
    al, xl = a[large], x[large]
    out[large] = (-al * log1pmx(al, xl) + 0.5 * np.log(al / (2 * math.pi))
                  - _stirling_tail(al))
    small = ~large
    out[small] = a[small] * np.log(x[small]) - x[small] - _lgamma_values(a[small])
    return out


_erfc = np.frompyfunc(math.erfc, 1, 1)
_MACHEP = 2.0 ** -53


def temme_expansion(a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    """Q(a, x) (upper) or P(a, x) by DLMF 8.12.3-4 for 1-d a, x (a > 20, x near a): the
    erfc term plus exp(-a eta^2 / 2) / sqrt(2 pi a) * sum_k c_k(eta) a^-k, summed while the
    terms shrink (the series is asymptotic) and are above the rounding of the sum."""
    eta = np.sign(x - a) * np.sqrt(2 * log1pmx(a, x))
    sign = 1.0 if upper else -1.0
    total = np.zeros_like(a)
    previous = np.full_like(a, np.inf)
    active = np.ones(a.shape, dtype=bool)
    a_power = np.ones_like(a)
    for row in TEMME_D:
        c_k = np.zeros_like(a)
        for coefficient in reversed(row):
            c_k = c_k * eta + coefficient
        term = c_k * a_power
        size = np.abs(term)
        active &= size <= previous        # the terms start growing: stop before this one
        total = np.where(active, total + term, total)
        active &= size >= _MACHEP * np.abs(total)
        if not active.any():
            break
        previous = size
        a_power = a_power / a
    erfc_part = 0.5 * _erfc(sign * eta * np.sqrt(a / 2)).astype(np.float64)
    return erfc_part + sign * np.exp(-0.5 * a * eta * eta) * total / np.sqrt(2 * math.pi * a)


def _temme_regime(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    spread = np.abs(x - a) / a
    return (((a > 20) & (a < 200) & (spread < 0.3))
            | ((a > 200) & (spread < np.maximum(4.5 / np.sqrt(a), 0.05))))


def regularized_gamma(a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    """Q(a, x) (upper) or P(a, x), elementwise for 1-d float64 a > 0 and finite x > 0."""
    out = np.empty_like(a)
    temme = _temme_regime(a, x)
    out[temme] = temme_expansion(a[temme], x[temme], upper)
    rest = ~temme
    ar, xr = a[rest], x[rest]
    series = xr < ar + 1
    prefix = np.exp(log_prefactor(ar, xr))
    values = np.empty_like(ar)
    lower = prefix[series] * series_sum(ar[series], xr[series])
    values[series] = (1 - lower) if upper else lower
    tail = prefix[~series] * continued_fraction(ar[~series], xr[~series])
    values[~series] = tail if upper else 1 - tail
    out[rest] = values
    return out
