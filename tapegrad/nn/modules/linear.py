"""Identity, Linear, Flatten, Unflatten."""
from __future__ import annotations as _annotations

import math

from ... import creation
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


class Identity(Module):
    """Return the input unchanged (any constructor arguments are ignored): a placeholder layer."""
    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x W^T + b, initialised as PyTorch does (Kaiming-uniform weight, uniform bias)."""

    __constants__ = ["in_features", "out_features"]     # (TorchScript's list, which scripts read)

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(creation.empty(out_features, in_features, device=device,
                                               dtype=dtype))
        if bias:
            self.bias = Parameter(creation.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw the weight with ``kaiming_uniform_(a=sqrt(5))`` and the bias from U(-1/sqrt(in),
        1/sqrt(in)), as PyTorch.
        """
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Flatten(Module):
    """Flatten dims ``start_dim`` (default 1) to ``end_dim`` (default -1) into one: (N, C, H, W)
    becomes (N, C*H*W).
    """
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expand dim ``dim`` into the shape ``unflattened_size`` (whose product must equal its size):
    the inverse of ``Flatten``.
    """
    def __init__(self, dim: int, unflattened_size) -> None:
        super().__init__()
        if not isinstance(unflattened_size, (list, tuple)):
            raise TypeError(f"unflattened_size must be a tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        for pos, size in enumerate(unflattened_size):
            if not isinstance(size, int):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element of "
                                f"type {type(size).__name__} at pos {pos}")
        self.dim = dim
        self.unflattened_size = unflattened_size       # kept as given: the repr shows it so

    def forward(self, input):
        # (Tensor.unflatten, as PyTorch's module: its checks name the sizes and the dim)
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
