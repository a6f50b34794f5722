"""PReLU as one autograd.Function, so its grad_fn is PyTorch's PreluKernelBackward0 (printed in
every model output) and the weight's gradient is reduced straight to the weight's shape.  Its
backward is a Function too, PyTorch's PreluKernelBackwardBackward0, whose derivatives are
PyTorch's formulas rather than the derivatives of the masked products that compute it."""
from __future__ import annotations as _annotations

from .. import where
from .._extra_functions import _torch_grad_fn_name
from .._scatter_functions import _sum_to
from ..autograd.function import Function


class PreluKernel(Function):
    """x where x > 0, else weight * x; `weight` arrives already shaped to broadcast over x.
    Backward: the gradient passes where x > 0 and is scaled by weight elsewhere; the weight
    collects grad * x over the non-positive elements."""

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return where(x > 0, x, weight * x)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        grad_x, grad_weight = PreluKernelBackward.apply(grad, x, weight)
        return grad_x, _sum_to(grad_weight, weight.shape)


class PreluKernelBackward(Function):
    """(grad where x > 0 else weight * grad, grad * x where x <= 0 else 0), the latter in x's
    shape.  One node of (grad, x, weight), so under create_graph each gradient requires grad
    when any of them does (a second derivative through them is zeros, not an error; fuzz
    60622975).

    Its derivatives are PyTorch's where()s of products, masked with x >= 0 (PyTorch's second
    derivatives mask with x >= 0 where its first derivatives mask with x > 0: at x == 0 the
    gradients depend on neither weight nor x, and grad passes through).  A masked-out term is
    never formed, so an infinite weight or x beside the mask gives no 0 * inf = NaN, as the
    derivatives of where(x > 0, grad, weight * grad) did (fuzz 62661981)."""

    @staticmethod
    def forward(ctx, grad, x, weight):
        ctx.save_for_backward(grad, x, weight)
        positive = x > 0
        return where(positive, grad, weight * grad), where(positive, 0.0, grad * x)

    @staticmethod
    def backward(ctx, grad_grad_x, grad_grad_weight):
        # (an output the loss does not use arrives as zeros: materialized grads)
        grad, x, weight = ctx.saved_tensors
        kept = x >= 0
        through_negative = grad_grad_x * weight + grad_grad_weight * x
        return (where(kept, grad_grad_x, through_negative),
                where(kept, 0.0, grad_grad_weight * grad),
                _sum_to(where(kept, 0.0, grad_grad_x * grad), weight.shape))


_torch_grad_fn_name(PreluKernel, "PreluKernelBackward0")
_torch_grad_fn_name(PreluKernelBackward, "PreluKernelBackwardBackward0")
