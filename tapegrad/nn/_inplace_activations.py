"""The trailing-underscore activations of torch.nn.functional (relu_, leaky_relu_, elu_, ...):
each is its functional form with ``inplace=True``, writing into and returning `input`."""
from __future__ import annotations as _annotations


def relu_(input):
    """``F.relu(input, inplace=True)``: max(x, 0) written into input."""
    from .functional import relu
    return relu(input, inplace=True)


def leaky_relu_(input, negative_slope: float = 0.01):
    """``F.leaky_relu(input, negative_slope, inplace=True)``."""
    from .functional import leaky_relu
    return leaky_relu(input, negative_slope, True)


def elu_(input, alpha: float = 1.0):
    """``F.elu(input, alpha, inplace=True)``."""
    from .functional import elu
    return elu(input, alpha, True)


def hardtanh_(input, min_val: float = -1.0, max_val: float = 1.0):
    """``F.hardtanh(input, min_val, max_val, inplace=True)``."""
    from .functional import hardtanh
    return hardtanh(input, min_val, max_val, True)


def selu_(input):
    """``F.selu(input, inplace=True)``."""
    from .functional import selu
    return selu(input, inplace=True)


def celu_(input, alpha: float = 1.0):
    """``F.celu(input, alpha, inplace=True)``."""
    from .functional import celu
    return celu(input, alpha, True)


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False):
    """``F.rrelu(input, lower, upper, training, inplace=True)``."""
    from .functional import rrelu
    return rrelu(input, lower, upper, training, True)


def threshold_(input, threshold: float, value: float):
    """``F.threshold(input, threshold, value, inplace=True)``."""
    from . import functional
    return functional.threshold(input, threshold, value, True)
