"""torch.nn.functional.fractional_max_pool2d: max pooling over pseudo-randomly spaced windows.

Each (sample, channel) plane draws two numbers u in [0, 1) (or takes them from
``_random_samples``); along each axis the window starts are ``int((i + u) * a) - int(u * a)``
with ``a = (input - kernel) / (output - 1)`` (in the input's dtype, as PyTorch computes them),
the last window ending at the input's edge.  All windows of all planes are read by one gather of
their kh*kw taps, the first maximum of each chosen, and the output is a
differentiable gather of those elements (its gradient a scatter-add).
"""
from __future__ import annotations

import numpy as np

from .. import _core
from ..random import default_generator
from ._conv_ops import _check_tensor, _Gather

_wrap = _core.wrap_array

__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices"]


def _pair(value):
    return tuple(int(v) for v in value) if isinstance(value, (list, tuple)) else \
        (int(value), int(value))


def _window_starts(samples, size, out, kernel, dtype):
    """(planes, out) window starts along one axis from each plane's sample."""
    if out == 1:
        return np.full((samples.shape[0], 1), size - kernel, dtype=np.int64)
    alpha = dtype.type(size - kernel) / dtype.type(out - 1)
    i = np.arange(out - 1, dtype=dtype)
    u = samples.astype(dtype)[:, None]
    starts = ((i + u) * alpha).astype(np.int64) - (u * alpha).astype(np.int64)
    return np.concatenate([starts, np.full((samples.shape[0], 1), size - kernel, np.int64)], 1)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """``fractional_max_pool2d`` returning ``(values, indices)`` (flat positions in each
    H*W plane)."""
    _check_tensor(input)
    if output_size is None and output_ratio is None:
        raise ValueError("fractional_max_pool2d requires specifying either an output_size or an "
                         "output_ratio")
    if input.dim() not in (3, 4):
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(input.dim(), 1)}, {max(input.dim(), 1) - 1}], but got -3)")
    kh, kw = _pair(kernel_size)
    H, W = input.shape[-2], input.shape[-1]
    if output_size is None:
        ratio = tuple(output_ratio)                     # PyTorch's functional needs a pair
        output_size = (int(H * float(ratio[0])), int(W * float(ratio[1])))
    Ho, Wo = _pair(output_size)
    if Ho + kh - 1 > H:
        raise RuntimeError(f"fractional_max_pool2d(): pool height {kh} too large relative to "
                           f"input height {H}")
    if Wo + kw - 1 > W:
        raise RuntimeError(f"fractional_max_pool2d(): pool width {kw} too large relative to "
                           f"input width {W}")
    unbatched = input.dim() == 3
    x = input.unsqueeze(0) if unbatched else input
    N, C = x.shape[:2]
    dtype = x._array.dtype
    if _random_samples is None:
        samples = default_generator._rng.random((N, C, 2)).astype(dtype)
    else:
        if _random_samples._array.dtype != dtype:
            raise RuntimeError("Expect _random_samples to have the same dtype as input")
        samples = _random_samples._array
        if samples.shape != (N, C, 2):
            raise RuntimeError(f"Expect _random_samples to have shape ({N}, {C}, 2), but got "
                               f"{list(samples.shape)}")
    planes = N * C
    samples = samples.reshape(planes, 2)
    rows = _window_starts(samples[:, 1], H, Ho, kh, dtype)          # sample 1: the height
    cols = _window_starts(samples[:, 0], W, Wo, kw, dtype)          # sample 0: the width
    # Flat position of every tap of every window: (planes, Ho, Wo, kh*kw), taps row-major.
    tap_r = rows[:, :, None, None, None] + np.arange(kh)[None, None, None, :, None]
    tap_c = cols[:, None, :, None, None] + np.arange(kw)[None, None, None, None, :]
    taps = (tap_r * W + tap_c).reshape(planes, Ho, Wo, kh * kw)
    flat = x._array.reshape(planes, H * W)
    values = np.take_along_axis(flat, taps.reshape(planes, -1), 1).reshape(taps.shape)
    # First maximum of each window (row-major, as PyTorch scans it).
    chosen = np.argmax(values, axis=-1)
    index = np.take_along_axis(taps, chosen[..., None], -1)[..., 0]
    out = _Gather.apply(x, index.reshape(planes, -1), (N, C, Ho, Wo))
    ind = _wrap(index.reshape(N, C, Ho, Wo).astype(np.int64))
    if unbatched:
        return out.squeeze(0), ind.squeeze(0)
    return out, ind


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Fractional max pooling of (N, C, H, W) or (C, H, W) to ``output_size`` (or
    ``output_ratio`` times the input size) with ``kernel_size`` windows at pseudo-random,
    increasing offsets; ``return_indices`` also gives flat positions for max_unpool2d."""
    out, index = fractional_max_pool2d_with_indices(input, kernel_size, output_size,
                                                    output_ratio, True, _random_samples)
    return (out, index) if return_indices else out
