"""The autograd.Functions behind _extra_ops' cumsum, log10, log2 and the inverse hyperbolic and
tangent functions (loaded on first recorded use).

Each forward is the numpy kernel _extra_ops uses when nothing records, so recorded and unrecorded
calls give the same values; each backward is made of recorded ops, so create_graph works.
"""
from __future__ import annotations

import math

import numpy as np

from ._extra_ops import _cumsum_array, _log_values, _wrap, _xlogy_values, cumsum, flip, xlogy
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


class _UnaryFloat(Function):
    """An elementwise function whose values come from a float64 numpy ufunc (_extra_ops.
    _log_values) and whose gradient `derivative(x, y)` is made of recorded ops."""

    ufunc = None

    @classmethod
    def forward(cls, ctx, x):
        y = _wrap(_log_values(cls.ufunc, x._array))
        ctx.save_for_backward(x, y)
        return y

    @classmethod
    def backward(cls, ctx, grad):
        x, y = ctx.saved_tensors
        return grad * cls.derivative(x, y)


class Tan(_UnaryFloat):
    ufunc = np.tan

    @staticmethod
    def derivative(x, y):
        return 1 + y * y


class Asinh(_UnaryFloat):
    ufunc = np.arcsinh

    @staticmethod
    def derivative(x, y):
        return (x * x + 1).rsqrt()


class Acosh(_UnaryFloat):
    ufunc = np.arccosh

    @staticmethod
    def derivative(x, y):
        return (x * x - 1).rsqrt()


class Atanh(_UnaryFloat):
    ufunc = np.arctanh

    @staticmethod
    def derivative(x, y):
        return 1 / (1 - x * x)


for _cls in (Tan, Asinh, Acosh, Atanh):
    _torch_grad_fn_name(_cls, _cls.__name__ + "Backward0")


class Xlogy(Function):
    """x * log(y), 0 where x is 0 (values: _extra_ops._xlogy_values); PyTorch's gradients:
    xlogy(grad, y) for x, except 0 where x is 0 and y <= 0, and x / y for y."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return _wrap(_xlogy_values(x._array, y._array))

    @staticmethod
    def backward(ctx, grad):
        from . import where
        from ._scatter_functions import _sum_to
        x, y = ctx.saved_tensors
        grad_x = (_sum_to(where((x == 0) & (y <= 0), 0, xlogy(grad, y)), x.shape)
                  if ctx.needs_input_grad[0] else None)
        grad_y = _sum_to(grad * x / y, y.shape) if ctx.needs_input_grad[1] else None
        return grad_x, grad_y


_torch_grad_fn_name(Xlogy, "XlogyBackward0")
