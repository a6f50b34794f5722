"""PReLU as one autograd.Function, so its grad_fn is PyTorch's PreluKernelBackward0 (printed in
every model output) and the weight's gradient is reduced straight to the weight's shape."""
from __future__ import annotations

from .. import is_grad_enabled, where
from .._extra_functions import _torch_grad_fn_name
from .._scatter_functions import _sum_to
from ..autograd.function import Function, tied_to_saved


class PreluKernel(Function):
    """x where x > 0, else weight * x; `weight` arrives already shaped to broadcast over x.
    Backward: the gradient passes where x > 0 and is scaled by weight elsewhere; the weight
    collects grad * x over the non-positive elements.  Made of recorded ops (create_graph)."""

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return where(x > 0, x, weight * x)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        positive = x > 0
        slope, x_live = weight, x
        if is_grad_enabled():
            # PyTorch's second derivatives mask with x >= 0 where its first derivatives mask
            # with x > 0: at x == 0 the gradients keep their values (weight * grad and 0) but
            # depend on neither weight nor x
            at_zero = x == 0
            slope = where(at_zero, weight.detach(), weight)
            x_live = where(at_zero, x.detach(), x)
        grad_x = where(positive, grad, slope * grad) if ctx.needs_input_grad[0] else None
        grad_weight = (_sum_to(where(positive, 0.0, grad * x_live), weight.shape)
                       if ctx.needs_input_grad[1] else None)
        if is_grad_enabled():
            # create_graph: PyTorch's gradients are one node of (grad, x, weight), so each
            # requires grad when any of them does (a second derivative through them is zeros,
            # not an error; fuzz 60622975): tie each to the operand its formula lacks
            grad_x = tied_to_saved(grad_x, x)
            grad_weight = tied_to_saved(grad_weight, weight)
        return grad_x, grad_weight


_torch_grad_fn_name(PreluKernel, "PreluKernelBackward0")
