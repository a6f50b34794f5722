"""erfinv (the inverse error function, behind Normal.icdf) as an autograd.Function.

numpy has no erfinv: a rational first guess (Giles, "Approximating the erfinv function", 2010)
is polished by Newton steps on erf, computed in float64 and cast, so float32 and float64 results
are correctly rounded to within an ulp or two.  Gradient: sqrt(pi) / 2 * exp(erfinv(x) ** 2).
"""
from __future__ import annotations

import math

import numpy as np

from . import _core
from ._extra_functions import _torch_grad_fn_name
from ._extra_ops import _check_tensor, _wrap
from .autograd.function import Function

_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2
# Giles' single-precision coefficients: central region (w < 5) and tails (w >= 5).
_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
            -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
         -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
_erf = np.frompyfunc(math.erf, 1, 1)


def _horner(coefficients, w):
    p = np.full_like(w, coefficients[0])
    for c in coefficients[1:]:
        p = p * w + c
    return p


def _erfinv_values(y: np.ndarray) -> np.ndarray:
    """erfinv of y elementwise, in y's float dtype: +-inf at +-1, nan outside [-1, 1]."""
    y64 = y.astype(np.float64)
    inside = np.abs(y64) < 1
    safe = np.where(inside, y64, 0.0)
    with np.errstate(divide="ignore"):
        w = -np.log((1.0 - safe) * (1.0 + safe))
    x = np.where(w < 5.0, _horner(_CENTRAL, w - 2.5), _horner(_TAIL, np.sqrt(w) - 3.0)) * safe
    for _ in range(3):          # Newton on erf(x) - y: each step doubles the correct digits
        residual = _erf(x).astype(np.float64) - safe
        x = x - residual / (np.exp(-x * x) / _SQRT_PI_OVER_2)
    out = np.where(inside, x, np.where(np.abs(y64) == 1, np.copysign(np.inf, y64), np.nan))
    return out.astype(y.dtype)


class Erfinv(Function):
    """erfinv of a float tensor; backward multiplies by sqrt(pi)/2 * exp(erfinv(x)^2)."""

    @staticmethod
    def forward(ctx, x):
        result = _wrap(_erfinv_values(x._array))
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        result, = ctx.saved_tensors
        return grad * _core.exp(result * result) * _SQRT_PI_OVER_2


_torch_grad_fn_name(Erfinv, "ErfinvBackward0")


def erfinv(input, *, out=None):
    """The inverse error function: the x with erf(x) = input (input in [-1, 1]; +-inf at the
    ends, nan outside); integer inputs give the default float dtype."""
    _check_tensor(input, "erfinv")
    if not input.dtype.is_floating_point:
        from . import get_default_dtype
        input = input.to(get_default_dtype())
    result = Erfinv.apply(input)
    return result if out is None else out.copy_(result)


def register(namespace: dict, tensor_cls) -> None:
    """Add tapegrad.erfinv and Tensor.erfinv (existing names win)."""
    namespace.setdefault("erfinv", erfinv)
    if "erfinv" not in dir(tensor_cls):
        def erfinv_method(self):
            """Tensor.erfinv: see :func:`tapegrad.erfinv`."""
            return erfinv(self)
        tensor_cls.erfinv = erfinv_method
