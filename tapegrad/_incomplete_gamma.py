"""The two expansions of the regularised incomplete gamma functions, elementwise in float64:

    P(a, x) = x^a e^-x / Gamma(a) * series_sum(a, x)          (fast for x < a + 1)
    Q(a, x) = x^a e^-x / Gamma(a) * continued_fraction(a, x)  (fast for x >= a + 1)

Shared by torch.special.gammainc / gammaincc (_more_math) and the implicit gradient of Gamma
samples (distributions/_standard_gamma); each caller computes the prefactor its own way.
Entries that have converged leave the working arrays, so the slow ones do not hold up the rest.
"""
from __future__ import annotations

import numpy as np

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
