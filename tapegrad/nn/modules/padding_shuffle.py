"""Padding modules over F.pad, the pixel / channel shuffles and nn.Bilinear."""
from __future__ import annotations as _annotations

import collections.abc
import math

from .. import functional as F
from ..parameter import Parameter
from .module import Module


def _pad_tuple(padding, n_sides: int) -> tuple:
    # PyTorch's _ntuple: any non-iterable (a numpy integer too) is repeated on every side
    if isinstance(padding, collections.abc.Iterable):
        return tuple(padding)
    return (padding,) * n_sides


class _PadNd(Module):
    _mode = "constant"
    _sides = 2

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _pad_tuple(padding, self._sides)

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


# One private base per mode, as PyTorch's (_ConstantPadNd, _ReflectionPadNd, ...): the 2-d and
# 3-d classes are siblings of the 1-d one, never its subclasses, so `isinstance(m,
# nn.ReflectionPad1d)` is False for a ReflectionPad2d as in PyTorch; ZeroPadNd is a
# ConstantPadNd of the same rank.
class _ReflectionPadNd(_PadNd):
    _mode = "reflect"


class _ReplicationPadNd(_PadNd):
    _mode = "replicate"


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input):
        # PyTorch's circular modules check the rank themselves (F.pad's message would differ)
        dims = self._sides // 2
        if input.dim() not in (dims + 1, dims + 2):
            raise ValueError(f"expected {dims + 1}D or {dims + 2}D input "
                             f"(got {input.dim()}D input)")
        return super().forward(input)


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with ``value`` (``F.pad``); ``padding`` is an int or (left, right)."""
    pass


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dims with ``value`` (``F.pad``); ``padding`` is an int or (left, right,
    top, bottom).
    """
    _sides = 4


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dims with ``value`` (``F.pad``); ``padding`` is an int or (left, right,
    top, bottom, front, back).
    """
    _sides = 6


class _ZeroPad:
    """A ConstantPadNd with value 0, printed as its padding alone (PyTorch's repr)."""

    def __init__(self, padding) -> None:
        _ConstantPadNd.__init__(self, padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    """Pad the last dim with zeros (``F.pad``); ``padding`` is an int or (left, right)."""


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    """Pad the last two dims with zeros (``F.pad``); ``padding`` is an int or (left, right, top,
    bottom).
    """


class ZeroPad3d(_ZeroPad, ConstantPad3d):
    """Pad the last three dims with zeros (``F.pad``)."""


class ReflectionPad1d(_ReflectionPadNd):
    """Pad the last dim by reflecting the input at its border, without repeating the edge
    (``F.pad(mode='reflect')``).
    """


class ReflectionPad2d(_ReflectionPadNd):
    """Pad the last two dims by reflection (``F.pad(mode='reflect')``); ``padding`` is an int or
    (left, right, top, bottom).
    """
    _sides = 4


class ReflectionPad3d(_ReflectionPadNd):
    """Pad the last three dims by reflection (``F.pad(mode='reflect')``)."""
    _sides = 6


class ReplicationPad1d(_ReplicationPadNd):
    """Pad the last dim by repeating the edge value (``F.pad(mode='replicate')``)."""


class ReplicationPad2d(_ReplicationPadNd):
    """Pad the last two dims by repeating the edge values (``F.pad(mode='replicate')``)."""
    _sides = 4


class ReplicationPad3d(_ReplicationPadNd):
    """Pad the last three dims by repeating the edge values (``F.pad(mode='replicate')``)."""
    _sides = 6


class CircularPad1d(_CircularPadNd):
    """Pad the last dim of (N, C, L) or (C, L) by wrapping around (``F.pad(mode='circular')``);
    ``padding`` is an int or (left, right).
    """


class CircularPad2d(_CircularPadNd):
    """Pad the last two dims by wrapping around (``F.pad(mode='circular')``); ``padding`` is an int
    or (left, right, top, bottom).
    """
    _sides = 4


class CircularPad3d(_CircularPadNd):
    """Pad the last three dims by wrapping around (``F.pad(mode='circular')``)."""
    _sides = 6


class PixelShuffle(Module):
    """Rearrange (N, C*r*r, H, W) into (N, C, H*r, W*r) with r = ``upscale_factor``
    (``F.pixel_shuffle``).
    """
    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """Rearrange (N, C, H*r, W*r) into (N, C*r*r, H, W), the inverse of ``PixelShuffle``
    (``F.pixel_unshuffle``).
    """
    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Split the C channels of (N, C, *) into ``groups`` and interleave them
    (``F.channel_shuffle``).
    """
    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class Bilinear(Module):
    """y = x1^T A x2 + b, A of shape (out, in1, in2), initialised U(-1/sqrt(in1), 1/sqrt(in1))
    as PyTorch."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        import tapegrad as tg
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(tg.empty((out_features, in1_features, in2_features),
                                         dtype=dtype))
        if bias:
            self.bias = Parameter(tg.empty((out_features,), dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw weight and bias from U(-1/sqrt(in1_features), 1/sqrt(in1_features)), as PyTorch."""
        from .. import init
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d", "PixelShuffle", "PixelUnshuffle", "ChannelShuffle",
           "Bilinear"]

