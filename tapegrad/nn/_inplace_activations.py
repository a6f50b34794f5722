"""The trailing-underscore activations of torch.nn.functional (relu_, leaky_relu_, elu_, ...):
each is its functional form with ``inplace=True``, writing into and returning `input`."""
from __future__ import annotations


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
