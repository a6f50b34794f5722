"""Power-average (LP) pooling and the ``*_with_indices`` spellings of max pooling, for
tapegrad.nn.functional: compositions of the pooling ops in _pool_ops.py and the core's
differentiable elementwise ops."""
from __future__ import annotations as _annotations

from .. import _core
from ._pool_ops import (adaptive_max_pool1d, adaptive_max_pool2d, avg_pool1d, avg_pool2d,
                        max_pool1d, max_pool2d)
from ._volumetric import avg_pool3d, max_pool3d


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """``max_pool1d`` returning ``(values, indices)`` whatever ``return_indices`` says."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """``max_pool2d`` returning ``(values, indices)`` whatever ``return_indices`` says."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool1d`` returning ``(values, indices)``."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool2d`` returning ``(values, indices)``."""
    return adaptive_max_pool2d(input, output_size, True)


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, nd, max_pool, avg_pool):
    """(sum over each window of x**p) ** (1/p): the average pool of x**p scaled by the window
    size.  p = +inf is the max of |x|, p = -inf the min of |x|.  A window whose sum is negative
    (odd p) or zero gives 0, and so does its gradient (the sign * relu guard)."""
    if norm_type == float("inf"):
        return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == float("-inf"):
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    kernel = tuple(kernel_size) if isinstance(kernel_size, (list, tuple)) else (kernel_size,)
    window = 1
    for k in (kernel * nd if len(kernel) == 1 else kernel):
        window *= int(k)
    averaged = avg_pool(input.pow(norm_type), kernel_size,
                        kernel_size if stride is None else stride, 0, ceil_mode)
    guarded = _core.sign(averaged) * averaged.abs().relu()
    return (guarded * window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over windows of the last dim of (N, C, L) or (C, L):
    ``(sum of x**p over the window) ** (1/p)``."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, max_pool1d, avg_pool1d)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over 2-d windows of (N, C, H, W) or (C, H, W)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, max_pool2d, avg_pool2d)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over 3-d windows of (N, C, D, H, W) or (C, D, H, W)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3, max_pool3d, avg_pool3d)
