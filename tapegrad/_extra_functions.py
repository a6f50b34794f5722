"""The autograd.Functions behind _extra_ops' cumsum, log10 and log2 (loaded on first recorded use).

Each forward is the numpy kernel _extra_ops uses when nothing records, so recorded and unrecorded
calls give the same values; each backward is made of recorded ops, so create_graph works.
"""
from __future__ import annotations

import math

import numpy as np

from ._extra_ops import _cumsum_array, _log_values, _wrap, cumsum, flip
from .autograd.function import Function


def _torch_grad_fn_name(function_cls, name: str) -> None:
    """Give a Function's grad_fn the class name PyTorch's built-in op has (e.g. CumsumBackward0)."""
    function_cls._backward_cls.__name__ = name
    function_cls._backward_cls.__qualname__ = name


class Cumsum(Function):
    """cumsum of a float tensor: numpy's running sum forward, reversed cumsum of the gradient
    backward (recorded when create_graph asks for it)."""

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return _wrap(_cumsum_array(x._array, dim))

    @staticmethod
    def backward(ctx, grad):
        if grad.ndim == 0:
            return grad, None
        return flip(cumsum(flip(grad, (ctx.dim,)), ctx.dim), (ctx.dim,)), None


_torch_grad_fn_name(Cumsum, "CumsumBackward0")


class _LogBase(Function):
    """log to a fixed base (values: _extra_ops._log_values); gradient grad / (x ln base)."""

    ufunc = None
    ln_base = 1.0

    @classmethod
    def forward(cls, ctx, x):
        ctx.save_for_backward(x)
        return _wrap(_log_values(cls.ufunc, x._array))

    @classmethod
    def backward(cls, ctx, grad):
        x, = ctx.saved_tensors
        return grad / (x * cls.ln_base)


class Log10(_LogBase):
    ufunc = np.log10
    ln_base = math.log(10.0)


class Log2(_LogBase):
    ufunc = np.log2
    ln_base = math.log(2.0)


_torch_grad_fn_name(Log10, "Log10Backward0")
_torch_grad_fn_name(Log2, "Log2Backward0")
