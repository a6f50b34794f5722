"""The autograd.Functions behind _more_stats (loaded on first recorded use, so that
`import tapegrad` does not load autograd).  Each forward is the numpy kernel _more_stats uses
when nothing records; each backward is made of recorded ops, so create_graph works."""
from __future__ import annotations as _annotations

import numpy as np

from ._extra_functions import _torch_grad_fn_name
from ._extra_ops import _wrap, flip
from ._more_stats import _logcumsumexp_array, logcumsumexp
from .autograd.function import Function


class LogCumSumExp(Function):
    """y = log(cumsum(exp(x))) along dim.  dL/dx_j = sum over i >= j of g_i * exp(x_j - y_i),
    summed in log space (a reversed logcumsumexp), the positive and negative parts of g apart,
    so that nothing overflows where y is large."""

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        y = _wrap(_logcumsumexp_array(x._array, dim))
        ctx.save_for_backward(x, y)
        ctx.save_for_forward(x, y)
        return y

    @staticmethod
    def jvp(ctx, tangent, _):
        """dy_i = sum over j <= i of t_j * exp(x_j - y_i), summed in log space like backward.
        (The forward-AD fallback, differentiating backward in its cotangent at 0, meets log|0|
        there and gives NaN, as PyTorch's double backward does.)"""
        x, y = ctx.saved_tensors
        if x.ndim == 0:
            return tangent
        d = ctx.dim
        from . import where
        if x.is_complex() or tangent.is_complex():
            # log t + x summed in log space, as backward (a shift by one number overflows where
            # the slices differ in scale: 0 * inf, NaN)
            return (logcumsumexp(_log_or_lowest(tangent) + x, d) - y).exp()
        lowest = float(np.finfo(x._array.dtype).min)
        log_abs = tangent.abs().log() + x
        positive = logcumsumexp(where(tangent > 0, log_abs, lowest), d)
        negative = logcumsumexp(where(tangent < 0, log_abs, lowest), d)
        return (positive - y).exp() - (negative - y).exp()

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        if x.ndim == 0:
            return grad, None
        d = ctx.dim

        def reversed_logcumsumexp(t):
            return flip(logcumsumexp(flip(t, (d,)), d), (d,))

        if x.is_complex():
            # dy_i/dx_j = exp(x_j - y_i), and the gradient of a holomorphic function is grad
            # times its conjugate derivative: sum over i >= j of exp(log g_i - conj(y_i) +
            # conj(x_j)), summed in log space (complex logs need no sign split), so that nothing
            # overflows where slices differ in scale (a shift by one number gave 0 * inf, NaN)
            return (reversed_logcumsumexp(_log_or_lowest(grad) - y.conj()) + x.conj()).exp(), None

        # log|g| where g has the sign, the lowest finite value elsewhere: `where` keeps log's
        # derivative at g = 0 out of the graph, so create_graph stays finite.
        from . import where
        lowest = float(np.finfo(grad._array.dtype).min)
        log_abs = grad.abs().log()
        positive = reversed_logcumsumexp(where(grad > 0, log_abs, lowest) - y)
        negative = reversed_logcumsumexp(where(grad < 0, log_abs, lowest) - y)
        return (x + positive).exp() - (x + negative).exp(), None


def _log_or_lowest(t):
    """log(t) where t != 0, the lowest finite real elsewhere (exp of it is 0): `where` keeps
    log's infinite derivative at 0 out of the graph, so create_graph stays finite."""
    from . import where
    lowest = float(np.finfo(t._array.real.dtype).min)
    return where(t != 0, t.log(), lowest)


_torch_grad_fn_name(LogCumSumExp, "LogcumsumexpBackward0")


class EvenlyDistributed(Function):
    """A reduction to one element whose value was chosen in numpy (the global median) and whose
    gradient PyTorch shares evenly among the elements equal to it (NaNs, for a NaN result)."""

    @staticmethod
    def forward(ctx, x, value, mask):
        ctx.mask = mask
        return _wrap(value)

    @staticmethod
    def backward(ctx, grad):
        count = max(int(ctx.mask.sum()), 1)
        # selected, not multiplied: a NaN/inf adjoint reaches the ties only (PyTorch's
        # masked_fill of zeros)
        from . import where, zeros_like
        mask = _wrap(ctx.mask)
        return where(mask, (grad / count).expand_as(mask), zeros_like(mask, dtype=grad.dtype)), \
            None, None


_torch_grad_fn_name(EvenlyDistributed, "MedianBackward0")
