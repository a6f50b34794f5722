"""torch.nn.functional.fractional_max_pool2d/3d: max pooling over pseudo-randomly spaced windows.

Each (sample, channel) plane draws one number u in [0, 1) per pooled axis (or takes them from
``_random_samples``); along each axis the window starts are ``int((i + u) * a) - int(u * a)``
with ``a = (input - kernel) / (output - 1)`` (in the input's dtype, as PyTorch computes them),
the last window ending at the input's edge.  All windows of all planes are read by one gather of
their taps, the first maximum of each chosen, and the output is a
differentiable gather of those elements (its gradient a scatter-add).
"""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core
from .._random import default_generator
from ._conv_ops import _check_tensor, _Gather
from .._saved_indices import saves_returned_indices

_wrap = _core.wrap_array

__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d", "fractional_max_pool3d_with_indices"]


def _pair(value):
    return tuple(int(v) for v in value) if isinstance(value, (list, tuple)) else \
        (int(value), int(value))


def _window_starts(samples, size, out, kernel, dtype):
    """(planes, out) window starts along one axis from each plane's sample."""
    if out == 0:
        return np.zeros((samples.shape[0], 0), dtype=np.int64)
    if out == 1:
        return np.full((samples.shape[0], 1), size - kernel, dtype=np.int64)
    alpha = dtype.type(size - kernel) / dtype.type(out - 1)
    i = np.arange(out - 1, dtype=dtype)
    u = samples.astype(dtype)[:, None]
    starts = ((i + u) * alpha).astype(np.int64) - (u * alpha).astype(np.int64)
    return np.concatenate([starts, np.full((samples.shape[0], 1), size - kernel, np.int64)], 1)


def _check_nonempty_planes(input, name: str) -> None:
    """PyTorch pools no empty plane: every dim but the first must be non-empty (an empty batch,
    or the channels of an unbatched input, give an empty result)."""
    for d in range(1, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but got{list(input.shape)} with dimension {d} "
                               f"being empty.")


def _check_samples(samples, x, dtype, n_axes: int) -> None:
    """PyTorch's checks of the given samples, shape (N' >= N, C, n_axes)."""
    if samples.dtype != dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}"
                           if n_axes == 2 else
                           f"Expect _random_samples to be 3D, got {samples.ndim}D")
    if samples.shape[0] < x.shape[0]:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != x.shape[1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != n_axes:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {n_axes}; got "
                           f"{samples.shape[2]}.")


@saves_returned_indices
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
    _check_nonempty_planes(input, "fractional_max_pool2d")
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
        _check_samples(_random_samples._array, x, dtype, 2)
        samples = _random_samples._array[:N]
    planes = N * C
    samples = samples.reshape(planes, 2)
    rows = _window_starts(samples[:, 1], H, Ho, kh, dtype)          # sample 1: the height
    cols = _window_starts(samples[:, 0], W, Wo, kw, dtype)          # sample 0: the width
    # Flat position of every tap of every window: (planes, Ho, Wo, kh*kw), taps row-major.
    tap_r = rows[:, :, None, None, None] + np.arange(kh)[None, None, None, :, None]
    tap_c = cols[:, None, :, None, None] + np.arange(kw)[None, None, None, None, :]
    taps = (tap_r * W + tap_c).reshape(planes, Ho, Wo, kh * kw)
    flat = x._array.reshape(planes, H * W)
    # (sizes spelt out: an empty batch or output leaves -1 nothing to infer from)
    values = np.take_along_axis(flat, taps.reshape(planes, Ho * Wo * kh * kw), 1) \
        .reshape(taps.shape)
    # First maximum of each window (row-major, as PyTorch scans it).
    chosen = np.argmax(values, axis=-1) if values.size else \
        np.zeros(taps.shape[:-1], dtype=np.int64)
    index = np.take_along_axis(taps, chosen[..., None], -1)[..., 0]
    out = _core._name_grad_fn(_Gather.apply(x, index.reshape(planes, Ho * Wo), (N, C, Ho, Wo)),
                              "FractionalMaxPool2DBackward0")
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


def _triple(value):
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * 3


@saves_returned_indices
def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """``fractional_max_pool3d`` returning ``(values, indices)`` (flat positions in each
    D*H*W volume)."""
    _check_tensor(input)
    if output_size is None and output_ratio is None:
        raise ValueError("fractional_max_pool3d requires specifying either an output_size or an "
                         "output_ratio")
    if output_size is None:
        ratio = _triple(output_ratio)
        output_size = tuple(int(input.shape[d - 3] * float(r)) for d, r in enumerate(ratio))
    if _random_samples is None and input.dim() < 4:
        # PyTorch reads input.size(-4) to draw the samples
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(input.dim(), 1)}, {max(input.dim(), 1) - 1}], but got -4)")
    kernel = tuple(int(k) for k in _triple(kernel_size))
    out_sp = tuple(int(o) for o in _triple(output_size))
    if input.dim() not in (4, 5):
        raise RuntimeError(f"fractional_max_pool3d_out(): Expected 4D or 5D tensor, but got: "
                           f"{list(input.shape)}")
    _check_nonempty_planes(input, "fractional_max_pool3d_out")
    in_sp = tuple(input.shape[-3:])
    for name, o, k, n in zip(("time", "height", "width"), out_sp, kernel, in_sp):
        if o + k - 1 >= n:              # (strictly smaller, unlike the 2-d kernel)
            raise RuntimeError(f"fractional_max_pool3d_out(): pool {name} {k} too large "
                               f"relative to input {name} {n}")
    unbatched = input.dim() == 4
    x = input.unsqueeze(0) if unbatched else input
    N, C = x.shape[:2]
    dtype = x._array.dtype
    if _random_samples is not None:         # (checked before the dtype dispatch, as PyTorch)
        _check_samples(_random_samples._array, x, dtype, 3)
    if not input.is_floating_point():
        raise NotImplementedError(f"\"fractional_max_pool3d_out_frame\" not implemented for "
                                  f"'{_core.scalar_type_name_of(input._array.dtype)}'")
    if _random_samples is None:
        samples = default_generator._rng.random((N, C, 3)).astype(dtype)
    else:
        samples = _random_samples._array[:N]
    planes = N * C
    samples = samples.reshape(planes, 3)
    # sample k drives axis k (time, height, width), unlike the 2-d kernel's (width, height)
    starts = [_window_starts(samples[:, a], in_sp[a], out_sp[a], kernel[a], dtype)
              for a in range(3)]
    D, H, W = in_sp
    Do, Ho, Wo = out_sp
    kd, kh, kw = kernel
    # Flat position of every tap of every window: (planes, Do, Ho, Wo, kd*kh*kw), row-major taps.
    tap_d = starts[0][:, :, None, None, None, None, None] + \
        np.arange(kd)[None, None, None, None, :, None, None]
    tap_h = starts[1][:, None, :, None, None, None, None] + \
        np.arange(kh)[None, None, None, None, None, :, None]
    tap_w = starts[2][:, None, None, :, None, None, None] + \
        np.arange(kw)[None, None, None, None, None, None, :]
    taps = ((tap_d * H + tap_h) * W + tap_w).reshape(planes, Do, Ho, Wo, kd * kh * kw)
    flat = x._array.reshape(planes, D * H * W)
    values = np.take_along_axis(flat, taps.reshape(planes, -1), 1).reshape(taps.shape) \
        if planes else np.zeros(taps.shape, dtype)
    chosen = np.argmax(values, axis=-1) if values.shape[-1] else values[..., 0].astype(np.int64)
    index = np.take_along_axis(taps, chosen[..., None], -1)[..., 0]
    out = _core._name_grad_fn(_Gather.apply(x, index.reshape(planes, Do * Ho * Wo),
                                            (N, C, Do, Ho, Wo)),
                              "FractionalMaxPool3DBackward0")
    ind = _wrap(index.reshape(N, C, Do, Ho, Wo).astype(np.int64))
    if unbatched:
        return out.squeeze(0), ind.squeeze(0)
    return out, ind


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Fractional max pooling of (N, C, D, H, W) or (C, D, H, W) to ``output_size`` (or
    ``output_ratio`` times the input size) with ``kernel_size`` windows at pseudo-random,
    increasing offsets; ``return_indices`` also gives flat positions for max_unpool3d."""
    out, index = fractional_max_pool3d_with_indices(input, kernel_size, output_size,
                                                    output_ratio, True, _random_samples)
    return (out, index) if return_indices else out
