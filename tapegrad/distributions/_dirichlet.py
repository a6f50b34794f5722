"""Reparameterised Dirichlet draws as PyTorch makes them (Dirichlet.rsample, and Beta.rsample, the
first coordinate of a two-coordinate Dirichlet).

The sample: independent Gamma(alpha_i, 1) draws in float64 (in float32 those of small
concentrations underflow), each at least the smallest normal float64, normalised, cast to the
concentration's dtype and clamped into [smallest normal, largest number below 1], so no coordinate
is exactly 0 or 1 and log_prob stays finite.

The gradient: PyTorch's implicit reparameterisation (its ``_dirichlet_grad``).  The marginal of
x_i is Beta(a, b) with a = alpha_i, b = total - alpha_i; holding its cdf I_x(a, b) fixed,

    dx/da = -(dI/da) / p(x; a, b),

and the gradient of a loss with respect to alpha_i is  g_i (dL/dx_i - sum_j x_j dL/dx_j)  with
g_i = (dx_i/da) / (1 - x_i).  So dx_i/dalpha is a function of the sample and the concentration
only, as PyTorch's (normalising Gamma draws that each carry their own implicit gradient gives
another, per sample different, gradient).

dI/da comes from the continued fraction of the incomplete beta function (DLMF 8.17.22):
I_x(a, b) = x^a (1 - x)^b K(a, b, x) / (a B(a, b)), used for x < (a + 1) / (a + b + 2) where it
converges fast, and on the other side through I_x(a, b) = 1 - I_{1-x}(b, a).  The logarithmic
derivative of the prefactor is analytic (digamma), that of K a central difference; the ratio to
the density is taken in closed form, so nothing underflows at tiny x.
"""
from __future__ import annotations as _annotations

import numpy as np

from .. import _random
from ..autograd.function import Function, once_differentiable
from ..creation import _make
from ._standard_gamma import refuse_half_precision

_TINY = np.finfo(np.float64).tiny
_MAX_TERMS = 10000


def _digamma(a: np.ndarray) -> np.ndarray:
    """digamma elementwise by tapegrad's kernel (float64 in, float64 out)."""
    from .. import digamma
    return digamma(_make(np.ascontiguousarray(a, dtype=np.float64), False))._array


def _beta_cf(a, b, x):
    """K(a, b, x) of the incomplete beta function by the modified Lentz method, elementwise
    (each element iterates until its own factor is 1 to rounding; the rest stop early)."""
    a, b, x = (np.array(v, dtype=np.float64).ravel() for v in np.broadcast_arrays(a, b, x))
    shape = np.broadcast_shapes(np.shape(a), np.shape(b), np.shape(x))
    out = np.empty(x.shape)

    def guard(v):
        return np.where(np.abs(v) < 1e-300, 1e-300, v)

    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones_like(x)
    d = 1.0 / guard(1.0 - qab * x / qap)
    h = d.copy()
    idx = np.arange(x.size)
    for m in range(1, _MAX_TERMS + 1):
        m2 = 2.0 * m
        even = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 / guard(1.0 + even * d)
        c = guard(1.0 + even / c)
        h = h * d * c
        odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 / guard(1.0 + odd * d)
        c = guard(1.0 + odd / c)
        step = d * c
        h = h * step
        going = np.abs(step - 1.0) > 1e-15
        if not going.all():
            out[idx[~going]] = h[~going]
            if not going.any():
                break
            a, b, x, qab, qap, qam, c, d, h, idx = (
                v[going] for v in (a, b, x, qab, qap, qam, c, d, h, idx))
    else:
        out[idx] = h
    return out.reshape(shape)


def _cf_and_dlog(first, second, y, wrt_first):
    """K(first, second, y) and d log K / d(first or second), from one evaluation of K on both
    sides of a central difference (their mean is K to O(step^2))."""
    p = first if wrt_first else second
    step = 1e-5 * np.maximum(p, 1e-3)
    n = p.size
    if wrt_first:
        both = _beta_cf(np.concatenate([first + step, first - step]),
                        np.concatenate([second, second]), np.concatenate([y, y]))
    else:
        both = _beta_cf(np.concatenate([first, first]),
                        np.concatenate([second + step, second - step]), np.concatenate([y, y]))
    up, down = both[:n], both[n:]
    return (up + down) / 2, (np.log(up) - np.log(down)) / (2 * step)


def dirichlet_tangent(x, alpha, total):
    """PyTorch's _dirichlet_grad: (dx/da at fixed Beta(a, total - a) cdf) / (1 - x), float64.
    ``alpha`` and ``total`` broadcast against x (pass them unbroadcast: the digammas are taken
    at their own shapes)."""
    a0, t0 = np.asarray(alpha, dtype=np.float64), np.asarray(total, dtype=np.float64)
    # d/da of log(x^a (1-x)^b / B(a, b)) at fixed b is log x + this
    psi = _digamma(t0) - _digamma(a0)
    x, a, t, psi = np.broadcast_arrays(np.asarray(x, dtype=np.float64), a0, t0, psi)
    shape = x.shape
    x, a, b, psi = x.ravel(), a.ravel(), (t - a).ravel(), psi.ravel()
    out = np.zeros(x.shape)
    ok = (b > 0) & (a > 0) & (x > 0) & (x < 1)
    x, a, b = x[ok], a[ok], b[ok]
    prefactor = np.log(x) + psi[ok]
    left = x < (a + 1) / (a + b + 2)
    g = np.empty(x.shape)
    if left.any():
        al, bl, xl = a[left], b[left], x[left]
        k, dlog_k = _cf_and_dlog(al, bl, xl, True)
        g[left] = -(k / al) * xl * (prefactor[left] - 1 / al + dlog_k)
    right = ~left
    if right.any():
        ar, br, xr = a[right], b[right], x[right]
        k, dlog_k = _cf_and_dlog(br, ar, 1 - xr, False)
        g[right] = (k / br) * xr * (prefactor[right] + dlog_k)
    out[ok] = g
    return out.reshape(shape)


def dirichlet_vjp(x, alpha, up):
    """The gradient with respect to alpha (broadcast to x's shape) of a loss whose gradient
    with respect to the Dirichlet draw x is ``up``: g_i (up_i - sum_j x_j up_j), float64."""
    alpha = np.asarray(alpha, dtype=np.float64)
    up = np.asarray(up, dtype=np.float64)
    return (dirichlet_tangent(x, alpha, alpha.sum(-1, keepdims=True))
            * (up - (x * up).sum(-1, keepdims=True)))


class _Dirichlet(Function):
    """A Dirichlet draw of ``shape`` (concentration broadcast to it), reparameterised."""

    @staticmethod
    def forward(ctx, concentration, shape):
        dtype = concentration._array.dtype
        alpha = np.broadcast_to(concentration._array.astype(np.float64), shape)
        gamma = np.maximum(_random._numpy_rng(None).standard_gamma(alpha), _TINY)
        x = (gamma / gamma.sum(-1, keepdims=True)).astype(dtype)
        x = np.clip(x, np.finfo(dtype).tiny, np.nextafter(dtype.type(1), dtype.type(0)))
        ctx.save_for_backward(concentration)
        ctx.sample = x
        return _make(np.ascontiguousarray(x), False)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        concentration, = ctx.saved_tensors
        x = ctx.sample
        g = dirichlet_vjp(x, concentration._array, grad._array).astype(concentration._array.dtype)
        # sum the draw's broadcast dims back to the concentration's shape
        extra = g.ndim - concentration._array.ndim
        if extra:
            g = g.sum(axis=tuple(range(extra)))
        keep = tuple(i for i, n in enumerate(concentration._array.shape)
                     if n == 1 and g.shape[i] != 1)
        if keep:
            g = g.sum(axis=keep, keepdims=True)
        return _make(np.ascontiguousarray(g), False), None


def sample_dirichlet(concentration, shape):
    """Dirichlet(concentration) draws of ``shape`` (sample + batch + event), differentiable in
    the concentration by PyTorch's implicit gradient."""
    refuse_half_precision(concentration, "dirichlet")
    return _Dirichlet.apply(concentration, tuple(shape))
