"""erfinv, lgamma and digamma as autograd.Functions (behind Normal.icdf and the log densities of
Gamma, Beta, Dirichlet, Poisson, Binomial and StudentT).

lgamma: math.lgamma per element (inf at the poles 0, -1, ...).  digamma and trigamma: the
recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic series; below 0.5 the
reflection formula.  lgamma's gradient is digamma, digamma's is trigamma (itself not
differentiable: asking for that third derivative raises).

numpy has no erfinv: a rational first guess (Giles, "Approximating the erfinv function", 2010)
is polished by Newton steps on erf, computed in float64 and cast, so float32 and float64 results
are correctly rounded to within an ulp or two.  Gradient: sqrt(pi) / 2 * exp(erfinv(x) ** 2).
"""
from __future__ import annotations

import math

import numpy as np

from . import _core
from ._class_members import has_member
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
        residual = np.asarray(_erf(x), dtype=np.float64) - safe
        x = x - residual / (np.exp(-x * x) / _SQRT_PI_OVER_2)
    out = np.where(inside, x, np.where(np.abs(y64) == 1, np.copysign(np.inf, y64), np.nan))
    return out.astype(y.dtype)


class Erfinv(Function):
    """erfinv of a float tensor; backward multiplies by sqrt(pi)/2 * exp(erfinv(x)^2)."""

    @staticmethod
    def forward(ctx, x):
        # (PyTorch saves the input and recomputes erfinv in backward: an in-place write into
        # the result is no error there, nor here)
        ctx.save_for_backward(x)
        return _wrap(_erfinv_values(x._array))

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        result = Erfinv.apply(x)
        return grad * _core.exp(result * result) * _SQRT_PI_OVER_2


_torch_grad_fn_name(Erfinv, "ErfinvBackward0")


_lgamma = np.frompyfunc(math.lgamma, 1, 1)


def _lgamma_values(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    poles = (x64 <= 0) & (x64 == np.floor(x64))
    finite = np.isfinite(x64) & ~poles
    out = np.where(np.isnan(x64), np.nan, np.inf)
    out[finite] = _lgamma(x64[finite]).astype(np.float64)
    return out.astype(x.dtype)


def _polygamma_values(order: int, x: np.ndarray) -> np.ndarray:
    """digamma (order 0) or trigamma (order 1) of x elementwise, in x's dtype."""
    x64 = x.astype(np.float64)
    out = np.full(x64.shape, np.nan)
    poles = (x64 <= 0) & (x64 == np.floor(x64)) & np.isfinite(x64)     # (-inf gives nan)
    if order == 0:
        zero = x64 == 0                     # PyTorch: digamma(+-0) = -+inf, other poles nan
        out[zero] = np.copysign(np.inf, -x64[zero])
    else:
        out[poles] = np.inf
    ok = np.isfinite(x64) & ~poles
    z = x64[ok]
    reflect = z < 0.5
    w = np.where(reflect, 1.0 - z, z)
    acc = np.zeros_like(w)
    while True:                              # shift every argument up to at least 10
        small = w < 10
        if not small.any():
            break
        acc = acc - np.where(small, 1 / w, 0) if order == 0 else acc + np.where(small, 1 / w ** 2, 0)
        w = np.where(small, w + 1, w)
    inv2 = 1 / (w * w)
    if order == 0:
        series = np.log(w) - 0.5 / w - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
            1 / 240 - inv2 / 132))))
        value = acc + series
        value = np.where(reflect, value - math.pi / np.tan(math.pi * z), value)
    else:
        series = 1 / w + inv2 / 2 + inv2 / w * (1 / 6 - inv2 * (1 / 30 - inv2 * (1 / 42 - inv2 / 30)))
        value = acc + series
        value = np.where(reflect, (math.pi / np.sin(math.pi * z)) ** 2 - value, value)
    out[ok] = value
    out[np.isposinf(x64)] = np.inf if order == 0 else 0.0
    return out.astype(x.dtype)


class Trigamma(Function):
    """The derivative of digamma; its own derivative is polygamma(2) (tapegrad.polygamma)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _wrap(_polygamma_values(1, x._array))

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        from . import polygamma
        return grad * polygamma(2, x)


class Digamma(Function):
    """digamma = d lgamma / dx; backward multiplies by trigamma."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _wrap(_polygamma_values(0, x._array))

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * Trigamma.apply(x)


class Lgamma(Function):
    """log |Gamma(x)|; backward multiplies by digamma."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _wrap(_lgamma_values(x._array))

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * Digamma.apply(x)


_torch_grad_fn_name(Lgamma, "LgammaBackward0")
_torch_grad_fn_name(Digamma, "DigammaBackward0")
_torch_grad_fn_name(Trigamma, "PolygammaBackward0")


def _float_input(input, name, parser_name=None):
    """input as a float tensor (integers and bool give the default dtype); a complex one raises
    PyTorch's "<name>" not implemented error, a non-tensor its parser's TypeError under
    `parser_name` (default `name`)."""
    _check_tensor(input, parser_name or name)
    if input.is_complex():      # (a cast would drop the imaginary part silently)
        raise NotImplementedError(f"\"{name}\" not implemented for "
                                  f"'{_core.scalar_type_name_of(input._array.dtype)}'")
    if not input.dtype.is_floating_point:
        from . import get_default_dtype
        input = input.to(get_default_dtype())
    return input


def lgamma(input):
    """log |Gamma(input)| elementwise (inf at 0, -1, -2, ...); gradient digamma(input)."""
    result = Lgamma.apply(_float_input(input, "lgamma"))
    return result


def digamma(input):
    """The logarithmic derivative of Gamma elementwise (-inf at 0, nan at negative integers);
    gradient trigamma(input)."""
    result = Digamma.apply(_float_input(input, "digamma"))
    return result


_erfc = np.frompyfunc(math.erfc, 1, 1)


class Erfc(Function):
    """1 - erf(x) computed directly (math.erfc), so it keeps its digits where erf is near 1."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _wrap(np.asarray(_erfc(x._array), dtype=np.float64).astype(x._array.dtype))

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * _core.exp(-(x * x)) * (-1.0 / _SQRT_PI_OVER_2)


_torch_grad_fn_name(Erfc, "ErfcBackward0")


def erfc(input):
    """The complementary error function 1 - erf(input), accurate in the tails."""
    result = Erfc.apply(_float_input(input, "erfc"))
    return result


def exp2(input):
    """2 ** input elementwise (integers give the default float dtype)."""
    if isinstance(input, _core.TensorBase) and input._array.dtype.kind == "c":
        from ._complex import dispatch
        result = dispatch("exp2", input)
        return result
    result = _core.exp(_float_input(input, "exp2") * math.log(2.0))
    return _core._name_grad_fn(result, "Exp2Backward0")


def erfinv(input):
    """The inverse error function: the x with erf(x) = input (input in [-1, 1]; +-inf at the
    ends, nan outside); integer inputs give the default float dtype."""
    result = Erfinv.apply(_float_input(input, "erfinv"))
    return result


def register(namespace: dict, tensor_cls) -> None:
    """Add tapegrad.erfinv/lgamma/digamma/erfc/exp2 and the Tensor methods (existing names win)."""
    for fn in (erfinv, lgamma, digamma, erfc, exp2):
        namespace.setdefault(fn.__name__, fn)
        if not has_member(tensor_cls, fn.__name__):
            setattr(tensor_cls, fn.__name__, _as_method(fn))


def _as_method(fn):
    def method(self):
        return fn(self)
    method.__name__ = fn.__name__
    method.__doc__ = f"Tensor.{fn.__name__}: see :func:`tapegrad.{fn.__name__}`."
    return method
