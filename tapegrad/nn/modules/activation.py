"""Activation modules: thin wrappers around tapegrad.nn.functional."""
from __future__ import annotations as _annotations

import tapegrad as _tg

from .. import functional as F
from .module import Module


class ReLU(Module):
    """Elementwise ``max(0, x)`` (``F.relu``; ``inplace=True`` writes into the input). Input of any
    shape; the output has the same shape.
    """
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    """Elementwise hyperbolic tangent. Input of any shape; the output has the same shape."""
    def forward(self, input):
        return _tg.tanh(input)      # (PyTorch's module calls torch.tanh: what a mode sees)


class Sigmoid(Module):
    """Elementwise ``1 / (1 + exp(-x))``. Input of any shape; the output has the same shape."""
    def forward(self, input):
        return _tg.sigmoid(input)   # (PyTorch's module calls torch.sigmoid: what a mode sees)


class GELU(Module):
    """Elementwise ``x * Phi(x)`` (Phi: the standard normal CDF), or its tanh approximation with
    ``approximate='tanh'`` (``F.gelu``). Input of any shape; the output has the same shape.
    """
    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class LeakyReLU(Module):
    """Elementwise ``x`` if ``x > 0`` else ``negative_slope * x`` (default 0.01)
    (``F.leaky_relu``). Input of any shape; the output has the same shape.
    """
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class SiLU(Module):
    """Elementwise ``x * sigmoid(x)`` (swish) (``F.silu``). Input of any shape; the output has the
    same shape.
    """
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Softplus(Module):
    """Elementwise ``log(1 + exp(beta * x)) / beta``, linear above ``threshold`` (``F.softplus``).
    Input of any shape; the output has the same shape.
    """
    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class ELU(Module):
    """Elementwise ``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)`` (``F.elu``). Input of any
    shape; the output has the same shape.
    """
    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softmax(Module):
    """``exp(x) / sum(exp(x))`` along ``dim``, computed stably (``F.softmax``): the outputs along
    ``dim`` sum to 1.
    """
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """``log(softmax(x))`` along ``dim``, computed stably (``F.log_softmax``)."""
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.log_softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
