"""Reparameterised Gamma(alpha, 1) draws: the sample comes from numpy's stream, its gradient with
respect to alpha from implicit differentiation of the cdf (Figurnov et al., 2018):

    dx/dalpha = -(dP(alpha, x)/dalpha) / p(x; alpha),

P the regularised lower incomplete gamma function and p the density.  Gamma.rsample and the
families built on it (Chi2, StudentT, InverseGamma, FisherSnedecor, Wishart) use this, so their
samples train the concentrations as PyTorch's do (Beta and Dirichlet have their own implicit
gradient, in _dirichlet).
"""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core, _random
from .._incomplete_gamma import log_prefactor, regularized_gamma
from ..autograd.function import Function
from ..creation import _make


_LARGE_ALPHA = 1e4


def _regularized_gamma_p(alpha, x):
    """P(alpha, x), elementwise, float64 (alpha > 0, x > 0)."""
    return regularized_gamma(alpha, x, upper=False)


def _dp_dalpha(alpha, x, h):
    """dP(alpha, x)/dalpha by a central difference of step h (both sides in one pass)."""
    both = _regularized_gamma_p(np.concatenate([alpha + h, alpha - h]), np.concatenate([x, x]))
    n = alpha.size
    return (both[:n] - both[n:]) / (2 * h)


def _wilson_hilferty_grad(alpha, x):
    """dx/dalpha at fixed normal quantile z of the Wilson-Hilferty approximation
    x = alpha (1 - 1/(9 alpha) + z / (3 sqrt(alpha)))^3, accurate for large alpha."""
    cube = np.cbrt(x / alpha)
    z = (cube - 1 + 1 / (9 * alpha)) * 3 * np.sqrt(alpha)
    inner = 1 - 1 / (9 * alpha) + z / (3 * np.sqrt(alpha))
    d_inner = 1 / (9 * alpha ** 2) - z / (6 * alpha ** 1.5)
    return inner ** 3 + 3 * alpha * inner ** 2 * d_inner


def standard_gamma_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dx/dalpha for x ~ Gamma(alpha, 1) at fixed uniform quantile, elementwise in float64."""
    alpha = np.asarray(alpha, dtype=np.float64)
    x = np.maximum(np.asarray(x, dtype=np.float64), np.finfo(np.float64).tiny)
    alpha, x = np.broadcast_arrays(alpha, x)
    shape = x.shape
    alpha, x = alpha.ravel().copy(), x.ravel().copy()
    out = np.empty_like(x)
    large = alpha > _LARGE_ALPHA
    if large.any():
        out[large] = _wilson_hilferty_grad(alpha[large], x[large])
    small = ~large
    if small.any():
        a, xs = alpha[small], x[small]
        # central difference of P in alpha: P is smooth in alpha, and with a relative step of
        # 1e-5 the truncation (1e-10) and rounding (1e-11) errors stay far below float32's
        h = 1e-5 * np.maximum(a, 1e-3)
        dp_dalpha = _dp_dalpha(a, xs, h)
        density = np.exp(log_prefactor(a, xs) - np.log(xs))
        with np.errstate(divide="ignore", invalid="ignore"):
            out[small] = np.nan_to_num(-dp_dalpha / density, nan=0.0, posinf=0.0, neginf=0.0)
    return out.reshape(shape)


class _StandardGamma(Function):
    """x ~ Gamma(alpha, 1) of a given shape, differentiable in alpha (implicitly)."""

    @staticmethod
    def forward(ctx, alpha, shape):
        a = np.broadcast_to(alpha._array, shape)
        rng = _random._numpy_rng(None)
        x = rng.standard_gamma(a.astype(np.float64))
        # PyTorch clamps draws to the smallest normal number, so log(x) stays finite
        x = np.maximum(x, np.finfo(alpha._array.dtype).tiny).astype(alpha._array.dtype)
        ctx.save_for_backward(alpha)
        ctx.sample = x
        return _make(x, False)

    @staticmethod
    def backward(ctx, grad):
        alpha, = ctx.saved_tensors
        x = ctx.sample
        dx = standard_gamma_grad(np.broadcast_to(alpha._array, x.shape), x).reshape(x.shape)
        if _creating_graph():
            # PyTorch records grad * _standard_gamma_grad(alpha, x), whose own derivative it
            # does not implement
            factor = _NoSecondDerivative.apply(
                alpha, dx.astype(alpha._array.dtype),
                "the derivative for '_standard_gamma_grad' is not implemented.")
            return (grad * factor).sum_to_size(alpha.shape), None
        g = grad._array * dx.astype(grad._array.dtype)
        # sum the broadcast dims back to alpha's shape
        extra = g.ndim - alpha._array.ndim
        if extra:
            g = g.sum(axis=tuple(range(extra)))
        keep = tuple(i for i, n in enumerate(alpha._array.shape) if n == 1 and g.shape[i] != 1)
        if keep:
            g = g.sum(axis=keep, keepdims=True)
        return _make(np.ascontiguousarray(g.astype(alpha._array.dtype)), False), None


def refuse_half_precision(t, kernel: str) -> None:
    """PyTorch's CPU gamma and dirichlet samplers exist for float32 and float64 only: a float16
    or bfloat16 concentration is refused by name (drawn here, the float32 storage of a bfloat16
    tensor would have given float32 samples)."""
    name = {_core.float16: "Half", _core.bfloat16: "BFloat16"}.get(t.dtype)
    if name is not None:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{name}\'')


def standard_gamma(alpha, shape):
    """Gamma(alpha, 1) draws of ``shape`` (alpha broadcast to it), reparameterised in alpha."""
    refuse_half_precision(alpha, "gamma_cpu")
    return _StandardGamma.apply(alpha, tuple(shape))


def _creating_graph() -> bool:
    """Whether a Function's backward is running for a create_graph gradient (grad mode is on in
    backward exactly then), so the gradient it returns must itself be differentiable."""
    from .. import is_grad_enabled
    return is_grad_enabled()


class _NoSecondDerivative(Function):
    """``value``, a derivative factor computed numerically from ``source``, recorded as a function
    of ``source`` whose derivative raises NotImplementedError(``message``): a create_graph
    gradient built on it stays connected to ``source``, so differentiating it again fails loudly
    (as PyTorch's does) instead of silently treating the factor as a constant."""

    @staticmethod
    def forward(ctx, source, value, message):
        ctx.message = message
        return _make(np.ascontiguousarray(value), False)

    @staticmethod
    def backward(ctx, grad):
        raise NotImplementedError(ctx.message)


def _gamma_density(alpha, x):
    """dP(alpha, x)/dx = exp((alpha - 1) log x - x - lgamma(alpha)), PyTorch's igamma gradient
    formula as is (NaN for x < 0, inf / NaN / 0 at x = 0 for alpha < / = / > 1), in tensor ops:
    recorded under create_graph, so it differentiates again in both alpha and x."""
    from .. import lgamma
    return ((alpha - 1) * x.log() - x - lgamma(alpha)).exp()


class _RegularizedGammaP(Function):
    """P(alpha, x), the regularised lower incomplete gamma function (Gamma's cdf) with PyTorch's
    igamma values off the domain (NaN for x < 0 or alpha < 0).  Gradients: the density in x
    (differentiable again, as PyTorch's), a central difference in alpha, which PyTorch does not
    implement at all (its derivative raises NotImplementedError); this one's own derivative
    raises."""

    @staticmethod
    def forward(ctx, alpha, x):
        a, xv = np.broadcast_arrays(alpha._array.astype(np.float64), x._array.astype(np.float64))
        out = np.zeros(a.shape)
        inside = (xv > 0) & np.isfinite(xv) & (a > 0)
        if inside.any():
            out[inside] = _regularized_gamma_p(a[inside].copy(), xv[inside].copy())
        out[(xv > 0) & (a == 0)] = 1.0
        out[np.isposinf(xv) & (a >= 0)] = 1.0
        out[np.isnan(xv) | np.isnan(a) | (xv < 0) | (a < 0) | ((a == 0) & (xv == 0))] = np.nan
        ctx.save_for_backward(alpha, x)
        ctx.values = (a, xv, inside)
        # PyTorch's type promotion (an int64 concentration with a float32 x gives float32,
        # where numpy's rules give float64)
        from .. import result_type
        dtype = _core.np_dtype_of(result_type(alpha, x), None)
        return _make(np.ascontiguousarray(out.astype(dtype)), False)

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        grad_alpha = grad_x = None
        if alpha.requires_grad:
            a, xv, inside = ctx.values
            d_a = np.zeros(a.shape)
            if inside.any():
                ai, xi = a[inside], xv[inside]
                d_a[inside] = _dp_dalpha(ai, xi, 1e-5 * np.maximum(ai, 1e-3))
            factor = _NoSecondDerivative.apply(
                alpha, d_a.astype(grad._array.dtype),
                "the second derivative of Gamma.cdf in the concentration is not implemented")
            grad_alpha = (grad * factor).sum_to_size(alpha.shape).to(alpha.dtype)
        if x.requires_grad:
            grad_x = (grad * _gamma_density(alpha, x)).sum_to_size(x.shape).to(x.dtype)
        return grad_alpha, grad_x


def regularized_gamma_p(alpha, x):
    """P(alpha, x) of tensors (broadcast), differentiable in both."""
    return _RegularizedGammaP.apply(alpha, x)
