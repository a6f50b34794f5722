"""Mish as one autograd.Function whose backward is PyTorch's formula, grad * mish'(x), rather
than the chain through x * tanh(softplus(x)): there an infinite upstream gradient met the two
partial derivatives separately (inf - inf, NaN) where PyTorch's product is +-inf (fuzz 62678047).
The backward is written in differentiable ops, as PyTorch's infinitely_differentiable_mish_backward,
so second derivatives are the derivatives of that formula, as PyTorch's."""
from __future__ import annotations

import tapegrad as _tg
from .._extra_functions import _torch_grad_fn_name
from ..autograd.function import Function


def _tanh_softplus(x):
    return _tg.nn.functional.softplus(x).tanh()


class MishKernel(Function):
    """x * tanh(softplus(x)); backward grad * (t + x * sigmoid(x) * (1 - t * t)), t the
    tanh(softplus(x)), from the saved input (PyTorch's MishBackward0 saves self)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * _tanh_softplus(x)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        t = _tanh_softplus(x)
        return grad * (t + x * x.sigmoid() * (1 - t * t))


_torch_grad_fn_name(MishKernel, "MishBackward0")
