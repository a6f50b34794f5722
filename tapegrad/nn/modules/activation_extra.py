"""Activation modules over tapegrad.nn._extra_activations (Hardtanh ... Softmax2d, PReLU)."""
from __future__ import annotations as _annotations

import warnings

from .. import _extra_activations as A
from ..parameter import Parameter
from .module import Module


def _inplace_suffix(inplace: bool) -> str:
    return ", inplace=True" if inplace else ""


class Hardtanh(Module):
    """Elementwise ``clamp(x, min_val, max_val)`` (default -1, 1) (``F.hardtanh``). Input of any
    shape; the output has the same shape.
    """
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__()
        # min_value/max_value are PyTorch's old keyword names, still accepted with a FutureWarning.
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`",
                          FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`",
                          FutureWarning, stacklevel=2)
            max_val = max_value
        if max_val <= min_val:
            # PyTorch asserts this (AssertionError), so scripts catching it see the same type.
            raise AssertionError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return A.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + _inplace_suffix(self.inplace)


class ReLU6(Hardtanh):
    """Elementwise ``min(max(0, x), 6)`` (``F.relu6``). Input of any shape; the output has the same
    shape.
    """
    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class _InplaceActivation(Module):
    """An activation with only the inplace flag: subclasses name their function in _fn."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class SELU(_InplaceActivation):
    """Elementwise ``scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))``, alpha = 1.6733, scale =
    1.0507 (``F.selu``). Input of any shape; the output has the same shape.
    """
    _fn = staticmethod(A.selu)


class Mish(_InplaceActivation):
    """Elementwise ``x * tanh(softplus(x))`` (``F.mish``). Input of any shape; the output has the
    same shape.
    """
    _fn = staticmethod(A.mish)


class _HardActivation(_InplaceActivation):
    def extra_repr(self) -> str:
        return ""       # PyTorch does not show Hardswish's and Hardsigmoid's inplace flag


class Hardswish(_HardActivation):
    """Elementwise ``x * clamp(x + 3, 0, 6) / 6`` (``F.hardswish``). Input of any shape; the output
    has the same shape.
    """
    _fn = staticmethod(A.hardswish)


class Hardsigmoid(_HardActivation):
    """Elementwise ``clamp(x / 6 + 1 / 2, 0, 1)`` (``F.hardsigmoid``). Input of any shape; the
    output has the same shape.
    """
    _fn = staticmethod(A.hardsigmoid)


class CELU(Module):
    """Elementwise ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` (``F.celu``). Input of any
    shape; the output has the same shape.
    """
    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return A.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + _inplace_suffix(self.inplace)


class _Stateless(Module):
    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class LogSigmoid(_Stateless):
    """Elementwise ``log(sigmoid(x))``, computed stably (``F.logsigmoid``). Input of any shape; the
    output has the same shape.
    """
    _fn = staticmethod(A.logsigmoid)


class Softsign(_Stateless):
    """Elementwise ``x / (1 + |x|)`` (``F.softsign``). Input of any shape; the output has the same
    shape.
    """
    _fn = staticmethod(A.softsign)


class Tanhshrink(_Stateless):
    """Elementwise ``x - tanh(x)`` (``F.tanhshrink``). Input of any shape; the output has the same
    shape.
    """
    _fn = staticmethod(A.tanhshrink)


class Threshold(Module):
    """Elementwise ``x`` where ``x > threshold``, else ``value`` (``F.threshold``). Input of any
    shape; the output has the same shape.
    """
    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return A.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return (f"threshold={self.threshold}, value={self.value}"
                + _inplace_suffix(self.inplace))


class _Shrink(Module):
    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return type(self)._fn(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    """Elementwise ``x`` where ``|x| > lambd`` (default 0.5), else 0 (``F.hardshrink``). Input of
    any shape; the output has the same shape.
    """
    _fn = staticmethod(A.hardshrink)


class Softshrink(_Shrink):
    """Elementwise ``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0
    (``F.softshrink``). Input of any shape; the output has the same shape.
    """
    _fn = staticmethod(A.softshrink)


class Softmin(Module):
    """``softmax(-x)`` along ``dim`` (``F.softmin``)."""
    def __init__(self, dim=None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return A.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channel dimension (-3) of a (C, H, W) or (N, C, H, W) input."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError("Softmax2d: expected input to be 3D or 4D, got "
                             f"{input.dim()}D instead")
        from .. import functional as F
        return F.softmax(input, -3)


class GLU(Module):
    """Gated linear unit along ``dim`` (default -1): halves ``a, b``, output ``a * sigmoid(b)``
    with half the size along ``dim`` (``F.glu``).
    """
    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return A.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class RReLU(Module):
    """Randomized leaky ReLU: in training, negative inputs are scaled by a slope drawn from
    U(lower, upper) per element; in eval, by ``(lower + upper) / 2`` (``F.rrelu``). Input of any
    shape; the output has the same shape.
    """
    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return A.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + _inplace_suffix(self.inplace)


class PReLU(Module):
    """x if x > 0 else a * x with a learnable slope a (one, or one per channel)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None,
                 dtype=None) -> None:
        super().__init__()
        import tapegrad as tg
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(tg.full((num_parameters,), float(init), dtype=dtype))

    def reset_parameters(self) -> None:
        """Reset the slopes to the ``init`` value given at construction (default 0.25)."""
        from ...grad_mode import no_grad
        with no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return A.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


__all__ = ["Hardtanh", "ReLU6", "SELU", "CELU", "Mish", "Hardswish", "Hardsigmoid", "LogSigmoid",
           "Softsign", "Tanhshrink", "Threshold", "Hardshrink", "Softshrink", "Softmin",
           "Softmax2d", "GLU", "RReLU", "PReLU"]

