"""Max, average and adaptive pooling layers, and Upsample."""
from __future__ import annotations as _annotations

from .. import functional as F
from .module import Module


class _MaxPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                              ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max over ``kernel_size`` windows along the last dim of (N, C, L) or (C, L)
    (``F.max_pool1d``: stride, padding, dilation, ceil_mode, return_indices).
    """
    _fn = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """Max over ``kernel_size`` windows of (N, C, H, W) or (C, H, W) (``F.max_pool2d``: stride,
    padding, dilation, ceil_mode, return_indices).
    """
    _fn = staticmethod(F.max_pool2d)


def _single(value):
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


class _AvgPoolNd(Module):
    """What every average pool shares (PyTorch's _AvgPoolNd): its repr."""

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """Average pooling over windows of ``kernel_size`` along the last dim of (N, C, L) or (C, L)
    (``F.avg_pool1d``: stride, padding, ceil_mode, count_include_pad).
    """
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding,
                                    self.ceil_mode, self.count_include_pad)


class _AvgPoolWithDivisor(_AvgPoolNd):
    """AvgPool2d's and AvgPool3d's shared state and forward (their op is the class's _fn)."""
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                              self.count_include_pad, self.divisor_override)


class AvgPool2d(_AvgPoolWithDivisor):
    """Average pooling over ``kernel_size`` windows of (N, C, H, W) or (C, H, W) (``F.avg_pool2d``:
    stride, padding, ceil_mode, count_include_pad, divisor_override).
    """
    _fn = staticmethod(F.avg_pool2d)


class _AdaptivePool(Module):
    _fn = None

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


# PyTorch's private bases of the adaptive pools, which scripts test with isinstance.
class _AdaptiveAvgPoolNd(_AdaptivePool):
    def __init__(self, output_size) -> None:
        super().__init__(output_size)


class _AdaptiveMaxPoolNd(_AdaptivePool):
    pass


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average pooling of an (N, C, L) or (C, L) input to length ``output_size``
    (``F.adaptive_avg_pool1d``).
    """
    def forward(self, input):
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average pooling of an (N, C, H, W) or (C, H, W) input to ``output_size`` (an int or (h, w);
    None keeps a size) (``F.adaptive_avg_pool2d``).
    """
    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling of an (N, C, L) or (C, L) input to length ``output_size``; ``return_indices``
    also returns the argmax positions (``F.adaptive_max_pool1d``).
    """
    def forward(self, input):
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling of an (N, C, H, W) or (C, H, W) input to ``output_size``
    (``F.adaptive_max_pool2d``).
    """
    def forward(self, input):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class Upsample(Module):
    """Resample by scale_factor or to size (F.interpolate)."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                 recompute_scale_factor=None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, (list, tuple)):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor is not None else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode,
                                     self.align_corners, self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class _MaxUnpoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        n = self._nd

        def tup(v):
            return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n
        self.kernel_size = tup(kernel_size)
        self.stride = tup(stride if stride is not None else kernel_size)
        self.padding = tup(padding)

    def forward(self, input, indices, output_size=None):
        fn = F.max_unpool1d if self._nd == 1 else F.max_unpool2d
        return fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool1d``: put each value at the index
    ``MaxPool1d(return_indices=True)`` gave, zeros elsewhere (``F.max_unpool1d``).
    """
    _nd = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool2d``: put each value at its pooling index, zeros elsewhere
    (``F.max_unpool2d``).
    """
    _nd = 2


class _LPPoolNd(Module):
    _fn = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride,
                              self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Power-average pooling ``(sum of x**p over each window) ** (1/p)`` along the last dim of
    (N, C, L) or (C, L) (``F.lp_pool1d``)."""
    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """Power-average pooling over 2-d windows of (N, C, H, W) or (C, H, W) (``F.lp_pool2d``)."""
    _fn = staticmethod(F.lp_pool2d)


class MaxPool3d(_MaxPoolNd):
    """Max over ``kernel_size`` windows of (N, C, D, H, W) or (C, D, H, W) (``F.max_pool3d``:
    stride, padding, dilation, ceil_mode, return_indices).
    """
    _fn = staticmethod(F.max_pool3d)


class AvgPool3d(_AvgPoolWithDivisor):
    """Average pooling over ``kernel_size`` windows of (N, C, D, H, W) or (C, D, H, W)
    (``F.avg_pool3d``: stride, padding, ceil_mode, count_include_pad, divisor_override).
    """
    _fn = staticmethod(F.avg_pool3d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Average pooling of (N, C, D, H, W) or (C, D, H, W) to ``output_size`` (an int or a
    triple; None keeps a size) (``F.adaptive_avg_pool3d``).
    """
    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling of (N, C, D, H, W) or (C, D, H, W) to ``output_size``
    (``F.adaptive_max_pool3d``).
    """
    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool3d``: put each value at its pooling index, zeros elsewhere
    (``F.max_unpool3d``).
    """
    _nd = 3

    def forward(self, input, indices, output_size=None):
        return F.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)


class LPPool3d(_LPPoolNd):
    """Power-average pooling over 3-d windows of (N, C, D, H, W) or (C, D, H, W)
    (``F.lp_pool3d``)."""
    _fn = staticmethod(F.lp_pool3d)


class _FractionalMaxPoolNd(Module):
    """Max pooling over ``kernel_size`` windows at pseudo-random increasing offsets to
    ``output_size`` or ``output_ratio`` of the input; the 2-d and 3-d layers differ in their
    rank (`_expand`, `_pair` or `_triple`) and functional (`_fn`)."""
    _fn = None
    _expand = None

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples=None) -> None:
        super().__init__()
        expand = type(self)._expand
        self.kernel_size = expand(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = expand(output_size) if output_size is not None else None
        self.output_ratio = expand(output_ratio) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{type(self).__name__} requires specifying either an output size, "
                             "or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.output_size, self.output_ratio,
                              self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Max pooling over ``kernel_size`` windows at pseudo-random increasing offsets to
    ``output_size`` or ``output_ratio`` of the input (``F.fractional_max_pool2d``)."""
    _fn = staticmethod(F.fractional_max_pool2d)
    _expand = staticmethod(lambda value: _pair(value))


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Max pooling over ``kernel_size`` 3-d windows at pseudo-random increasing offsets to
    ``output_size`` or ``output_ratio`` of the input (``F.fractional_max_pool3d``)."""
    _fn = staticmethod(F.fractional_max_pool3d)
    _expand = staticmethod(lambda value: _triple(value))


def _pair(value):
    return tuple(value) if isinstance(value, (list, tuple)) else (value, value)


def _triple(value):
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * 3
