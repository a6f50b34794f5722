"""Resampling, padding modes and channel dropout for tapegrad.nn.functional.

interpolate is separable: nearest modes are an index_select per axis, linear modes two weighted
index_select taps per axis, bicubic four, the antialiased modes (bilinear, bicubic, lanczos) a
window per output ('area' is adaptive average pooling, as in PyTorch); the
non-constant F.pad modes are an index_select per padded dim.  All of it is the core's
differentiable ops, so gradients (and create_graph) come from the core.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import math
import warnings

import numpy as np

from .. import _core
from .._half_precision import in_float32_if_half
from .._memory_format import follow_channels_last
from ._conv_ops import _check_tensor, _wrap
from ._pool_ops import _shape_along, adaptive_avg_pool1d, adaptive_avg_pool2d

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pad", "dropout1d",
           "dropout2d"]


# -- interpolation ---------------------------------------------------------------------------------

_INTERP_DIMS = {"nearest": None, "nearest-exact": None, "area": None, "linear": 1,
                "bilinear": 2, "bicubic": 2, "trilinear": 3}


def _interp_kernel_checks(input, mode, out_sp, antialias=False):
    """PyTorch's interpolation kernels' checks: every size positive, then a dtype they have
    (floating point; uint8 too for the nearest, bilinear and bicubic 2-d kernels; float32,
    float64 and uint8 for the antialiased ones, which check only when an axis changes size)."""
    nd = len(out_sp)
    labels = ("D", "H", "W")[3 - nd:]
    ins = ", ".join(f"{k}: {v}" for k, v in zip(labels, input.shape[2:]))
    outs = ", ".join(f"{k}: {v}" for k, v in zip(labels, out_sp))
    if any(o <= 0 for o in out_sp) or any(s <= 0 for s in input.shape[2:]):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({ins}){' and' if nd == 1 else ''} output ({outs})")
    if input.shape[1] == 0 and mode != "area":
        # (PyTorch's upsample kernels refuse an input without channels; area is an adaptive
        # pool, which takes it; surface 60719313)
        raise RuntimeError(f"Non-empty {input.ndim}D data tensor expected but got a tensor with "
                           f"sizes {list(input.shape)}")
    if antialias:
        if (tuple(out_sp) == tuple(input.shape[2:])
                or input._array.dtype in (np.float32, np.float64, np.uint8)):
            return
        raise NotImplementedError(f'"compute_index_ranges_weights" not implemented for '
                                  f"'{_core.scalar_type_name_of(input._array.dtype)}'")
    if input._array.dtype.kind == "f":
        return
    nearest = mode in ("nearest", "nearest-exact")
    if input._array.dtype == np.uint8 and (nearest or mode in ("bilinear", "bicubic")):
        return
    if nearest:
        kernel = "upsample_nearest2d_channels_last" if nd == 2 else "compute_indices_weights_nearest"
    else:
        kernel = {"bilinear": "upsample_bilinear2d_channels_last",
                  "bicubic": "compute_indices_weights_cubic"}.get(mode, "compute_indices_weights_linear")
    raise NotImplementedError(f'"{kernel}" not implemented for '
                              f"'{_core.scalar_type_name_of(input._array.dtype)}'")


def _is_integer(value) -> bool:
    if isinstance(value, _core.TensorBase):
        return not (value.is_floating_point() or value.is_complex())
    return isinstance(value, (int, np.integer))


def _check_size_types(size) -> None:
    """PyTorch takes integer sizes only: a float size is refused, not truncated."""
    if isinstance(size, (list, tuple)):
        if not all(_is_integer(s) for s in size):
            raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                            "Tuple[int, int, int], but got size with types "
                            f"{[type(s) for s in size]}")
    elif isinstance(size, bool) or not _is_integer(size):
        raise TypeError(f"interpolate() received an invalid combination of arguments: size must "
                        f"be an int or a tuple of ints, not {type(size).__name__}")


def _interp_sizes(x, nd, size, scale_factor):
    spatial = tuple(x.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        _check_size_types(size)
        out = tuple(int(s) for s in size) if isinstance(size, (list, tuple)) else (int(size),) * nd
        # as PyTorch's: only a sequence is checked against the input's spatial dims; a single
        # number on a 1-D or 2-D input falls through to the unsupported-input error below
        if isinstance(size, (list, tuple)) and len(out) != nd:
            raise ValueError(f"Input and output must have the same number of spatial dimensions,"
                             f" but got input with spatial dimensions of {list(spatial)} and "
                             f"output size of {size}. Please provide input tensor in "
                             f"(N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK)"
                             f" format.")
        return out, (None,) * nd
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = tuple(float(s) for s in scale_factor) if isinstance(scale_factor, (list, tuple)) \
        else (float(scale_factor),) * nd
    if isinstance(scale_factor, (list, tuple)) and len(scales) != nd:
        raise ValueError(f"Input and scale_factor must have the same number of spatial "
                         f"dimensions, but got input with spatial dimensions of {list(spatial)} "
                         f"and scale_factor of shape {scale_factor}. Please provide input tensor "
                         f"in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK)"
                         f" format.")
    return tuple(int(math.floor(s * f)) for s, f in zip(spatial, scales)), scales


def _source_scale(size, n, scale, align_corners):
    """The input step per output step along one axis, as PyTorch computes it."""
    if align_corners:
        return (size - 1) / (n - 1) if n > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else size / n


def _nearest_index(size, n, scale, exact, size_shortcuts=False):
    """The source index of each of n outputs along an axis of `size` inputs.  size_shortcuts:
    PyTorch's 2-d 'nearest' kernel ignores the scale when the output is as long as the input
    (a copy) or twice as long (each input twice), so that scale_factor=1.3 on 3 rows (3 output
    rows) copies them rather than reading rows 0, 0, 1; its 1-d and 3-d kernels do not."""
    if size_shortcuts and n == size:
        return np.arange(n, dtype=np.int64)
    if size_shortcuts and n == 2 * size:
        return np.arange(n, dtype=np.int64) // 2
    step = np.float32(_source_scale(size, n, scale, False))
    pos = np.arange(n, dtype=np.float32)
    src = np.floor((pos + np.float32(0.5)) * step if exact else pos * step)
    return np.minimum(src.astype(np.int64), size - 1)


def _linear_taps(size, n, scale, align_corners):
    """Per output position along one axis: the two source positions and their weights."""
    step = _source_scale(size, n, scale, align_corners)
    pos = np.arange(n, dtype=np.float64)
    src = pos * step if align_corners else np.maximum((pos + 0.5) * step - 0.5, 0.0)
    lo = np.minimum(np.floor(src).astype(np.int64), size - 1)
    hi = np.minimum(lo + 1, size - 1)
    frac = src - lo
    if n == size:
        # PyTorch reads x[i] * 1 + x[i] * 0 for an axis whose size does not change, whatever
        # the scale (finite values are copied exactly, an inf becomes NaN as in PyTorch)
        lo = hi = np.arange(n)
        frac = np.zeros(n)
    return lo, hi, 1 - frac, frac


def _cubic_taps(size, n, scale, align_corners):
    """Per output position along one axis: PyTorch's four bicubic taps (source positions
    floor(src) - 1 .. floor(src) + 2, clamped to the axis) and their weights, the cubic
    convolution kernel with A = -0.75 (the source position is not clamped at 0, as it is for
    linear modes)."""
    step = _source_scale(size, n, scale, align_corners)
    pos = np.arange(n, dtype=np.float64)
    src = pos * step if align_corners else (pos + 0.5) * step - 0.5
    base = np.floor(src)
    t = src - base
    a = -0.75
    near = lambda d: ((a + 2) * d - (a + 3)) * d * d + 1              # |d| <= 1
    far = lambda d: ((a * d - 5 * a) * d + 8 * a) * d - 4 * a          # 1 < |d| < 2
    weights = (far(t + 1), near(t), near(1 - t), far(2 - t))
    taps = [np.clip(base.astype(np.int64) + k, 0, size - 1) for k in (-1, 0, 1, 2)]
    return list(zip(taps, weights))


# The half width of each antialiasing filter's support, in output steps (it is stretched by the
# downsampling step).
_ANTIALIAS_HALF_WIDTH = {"bilinear": 1.0, "bicubic": 2.0, "lanczos": 3.0}


def _antialias_filter(mode: str):
    """PyTorch's antialiasing filters (PIL's): the triangle, the cubic kernel with A = -0.5, or
    Lanczos-3 (the sinc windowed by a sinc three times wider)."""
    if mode == "bilinear":
        return lambda d: np.maximum(1.0 - np.abs(d), 0.0)
    if mode == "lanczos":
        # np.sinc(x) is sin(pi x) / (pi x), 1 at 0
        return lambda d: np.where(np.abs(d) < 3.0, np.sinc(d) * np.sinc(d / 3.0), 0.0)
    a = -0.5

    def cubic(d):
        d = np.abs(d)
        near = ((a + 2) * d - (a + 3)) * d * d + 1
        far = (((d - 5) * d + 8) * d - 4) * a
        return np.where(d < 1, near, np.where(d < 2, far, 0.0))
    return cubic


def _antialias_taps(size, n, scale, align_corners, mode: str):
    """Per output position along one axis: PyTorch's antialiased taps. When downsampling by
    step s > 1 the filter is stretched by s (its support covers every source position the
    output stands for), so each output averages a window instead of sampling two or four
    points; the weights are normalised to sum to 1. Windows differ in width: the shorter
    ones are padded with zero-weight taps at their first position."""
    step = _source_scale(size, n, scale, align_corners)
    half_width = _ANTIALIAS_HALF_WIDTH[mode]
    stretch = step if step >= 1.0 else 1.0
    support = half_width * stretch
    centers = step * (np.arange(n, dtype=np.float64) + 0.5)
    # (C casts of the window ends: truncation toward zero)
    first = np.maximum((centers - support + 0.5).astype(np.int64), 0)
    stop = np.minimum((centers + support + 0.5).astype(np.int64), size)
    kernel = _antialias_filter(mode)
    indices, weights = [], []
    for j in range(int((stop - first).max())):
        index = first + j
        inside = index < stop
        indices.append(np.where(inside, index, first))
        weights.append(np.where(inside, kernel((index - centers + 0.5) / stretch), 0.0))
    total = np.sum(weights, axis=0)
    total[total == 0] = 1.0
    return [(index, w / total) for index, w in zip(indices, weights)]


def _taps_along(x, dim, taps):
    """Interpolation of x along `dim` as PyTorch computes it: sum of w * x[index] over the taps
    (index, w), each tap one index_select, so a NaN or inf reaches only the outputs (and its
    gradient only the inputs) whose taps touch it; a dense interpolation matrix would spread it
    along the axis."""
    shape = _shape_along(x.dim(), dim, len(taps[0][0]))
    dtype = x._array.dtype
    out = None
    for index, w in taps:
        term = x.index_select(dim, _wrap(index)) * _wrap(w.astype(dtype).reshape(shape))
        out = term if out is None else out + term
    return out


def _axis_taps(mode, antialias, size, n, scale, align_corners):
    """The (index, weight) taps of one axis of a weighted interpolation mode."""
    if antialias:
        return _antialias_taps(size, n, scale, align_corners, mode)
    if mode == "bicubic":
        return _cubic_taps(size, n, scale, align_corners)
    lo, hi, w_lo, w_hi = _linear_taps(size, n, scale, align_corners)
    return [(lo, w_lo), (hi, w_hi)]


def _fixed_point_pass(arr, dim, taps, size):
    """One axis of PyTorch's uint8 resampling (PIL's): the float64 weights of the taps that read
    one source position are summed (a clamped border tap adds to the edge's), scaled by
    2**precision (the largest precision that keeps the largest weight below 2**15) and rounded
    half away from zero to integers; each output is the integer sum of pixel * weight, plus a
    half, shifted right by the precision and clamped to 0..255."""
    n = len(taps[0][0])
    dense = np.zeros((n, size))
    rows = np.arange(n)
    for index, w in taps:
        np.add.at(dense, (rows, index), w)
    top = dense.max()
    precision = 0
    while precision < 22 and int(0.5 + top * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    scaled = dense * float(1 << precision)
    weights = np.trunc(scaled + np.where(scaled < 0, -0.5, 0.5)).astype(np.int64)
    acc = np.moveaxis(arr.astype(np.int64), dim, -1) @ weights.T + ((1 << precision) >> 1)
    return np.moveaxis(np.clip(acc >> precision, 0, 255), -1, dim)


def _check_upsample_align_corners(name: str, nd: int, align_corners) -> None:
    """PyTorch's interpolate passes align_corners on to its upsample builtin (`name`), whose
    parser takes a bool alone and lists both its signatures otherwise."""
    scales = ", ".join(f"float scales{axis} = None" for axis in
                       (("",), ("_h", "_w"), ("_d", "_h", "_w"))[nd - 1])
    _core.check_bool(name, "align_corners", align_corners, 0,
                     " * (Tensor input, tuple of ints output_size, bool align_corners, tuple of "
                     f"floats scale_factors)\n * (Tensor input, tuple of ints output_size, bool "
                     f"align_corners, {scales}, *, Tensor out = None)\n")


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resample (N, C, L), (N, C, H, W) or (N, C, D, H, W) input: mode 'nearest',
    'nearest-exact', 'area', 'linear' (3-D), 'bilinear', 'bicubic' or 'lanczos' (4-D, antialiased)
    or 'trilinear' (5-D),
    to `size` or by `scale_factor`."""
    _check_tensor(input)
    if align_corners is not None and mode in ("nearest", "nearest-exact", "area"):
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    nd = input.dim() - 2
    if size is not None and scale_factor is None and recompute_scale_factor:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    out_sp, scales = _interp_sizes(input, nd, size, scale_factor)
    if recompute_scale_factor:
        scales = (None,) * nd
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and nd == 2):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes "
                         "and requires a 4-D tensor as input")
    if mode == "lanczos" and nd == 2:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    want = _INTERP_DIMS.get(mode, 0)
    if mode == "lanczos" and nd == 2:
        want = 2        # (lanczos at another rank is PyTorch's "Input Error" below)
    if want == 0 or nd not in (1, 2, 3) or (mode == "bicubic" and nd != 2):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
            f"the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})")
    if want is not None and want != nd:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {want + 2}D "
                                  f"input")
    if align_corners is not None and mode in ("linear", "bilinear", "bicubic", "trilinear"):
        _check_upsample_align_corners(f"upsample_{mode}{nd}d", nd, align_corners)
    if mode == "area":          # PyTorch runs area as adaptive average pooling
        from ._volumetric import adaptive_avg_pool3d
        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[nd - 1]
        return pool(input, out_sp)
    _interp_kernel_checks(input, mode, out_sp, antialias)
    spatial = tuple(input.shape[2:])
    if input._array.dtype == np.uint8 and mode not in ("nearest", "nearest-exact"):
        # uint8 images take PyTorch's integer kernels, not the float ones rounded: one axis at a
        # time, width first, each pass in fixed point (weights scaled to int16, the sum rounded
        # and clamped to 0..255); an axis whose size does not change is not passed over
        arr = input._array
        for axis in reversed(range(nd)):
            s, n = spatial[axis], out_sp[axis]
            if n != s:
                taps = _axis_taps(mode, antialias, s, n, scales[axis], bool(align_corners))
                arr = _fixed_point_pass(arr, 2 + axis, taps, s)
        out = _wrap(np.ascontiguousarray(arr, dtype=np.uint8))
        return follow_channels_last(out, input)

    def resampled(out):
        given = out
        for axis in range(nd):
            s, n, f = spatial[axis], out_sp[axis], scales[axis]
            dim = 2 + axis
            if antialias and n == s:
                # PyTorch's separable antialiased kernel passes over an axis whose size does
                # not change, whatever the scale_factor (its gradient does not: gradcheck
                # fails there; this one is the copy's)
                continue
            if mode in ("nearest", "nearest-exact"):
                idx = _nearest_index(s, n, f, mode == "nearest-exact",
                                     size_shortcuts=mode == "nearest" and nd == 2)
                out = out.index_select(dim, _wrap(idx))
            else:
                out = _taps_along(out, dim, _axis_taps(mode, antialias, s, n, f,
                                                       bool(align_corners)))
        # (every axis passed over: still a new tensor, never the input itself)
        return out.clone() if out is given else out

    # float16 weighted taps in float32, rounded once (PyTorch's kernels accumulate in float32,
    # its gradients exactly so): in float16, bicubic's negative taps times values near 65504
    # overflowed to +-inf and their sum to NaN
    out = in_float32_if_half(resampled, input)
    out = follow_channels_last(out, input)     # PyTorch's kernels keep a channels_last layout
    return _core._name_grad_fn(out, _upsample_node(mode, nd, antialias))


def _upsample_node(mode: str, nd: int, antialias: bool) -> str:
    """PyTorch's grad_fn name for interpolate's kernel: UpsampleNearest2DBackward0,
    UpsampleNearestExact1DBackward0, UpsampleBicubic2DAaBackward0 ..."""
    kernel = "NearestExact" if mode == "nearest-exact" else mode.capitalize()
    return f"Upsample{kernel}{nd}D{'Aa' if antialias else ''}Backward0"


# -- padding modes ---------------------------------------------------------------------------------

def _pad_index(n, before, after, mode):
    pos = np.arange(-before, n + after)
    if mode == "reflect":
        period = 2 * (n - 1)
        pos = np.abs(pos) % period if period else np.zeros_like(pos)
        return np.where(pos >= n, period - pos, pos)
    if mode == "replicate":
        return np.clip(pos, 0, n - 1)
    # circular: PyTorch first crops the negative pads, then wraps around what is left
    start = max(-before, 0)
    kept = n - start - max(-after, 0)
    return np.arange(-max(before, 0), kept + max(after, 0)) % kept + start


def _edge_pad_checks(shape, pad, n_dims, mode):
    """PyTorch's checks of reflect and replicate padding, in its order: reflect's pad sizes
    (innermost dim first), then the output size: its kernels raise when every padded output dim
    is below 1, and otherwise a negative one fails to allocate (an empty one is fine)."""
    nd = len(shape)
    # the reflection and replication kernels take an empty batch, never an empty channel or
    # spatial dim (checked first, even when every pad is zero)
    if 0 in shape[nd - n_dims - 1 if nd == n_dims + 1 else 1:]:
        raise RuntimeError(f"Expected {n_dims + 1}D or {n_dims + 2}D (batch mode) tensor with "
                           f"possibly 0 batch size and other non-zero dimensions for input, but "
                           f"got: {list(shape)}")
    if mode == "reflect":
        for i in range(n_dims):
            dim, before, after = nd - 1 - i, pad[2 * i], pad[2 * i + 1]
            if before >= shape[dim] or after >= shape[dim]:
                # (the argument number follows the offending pad pair: #4 for the innermost
                # dim's, #6 for the next, #8 for the third, whatever the padded-dims count)
                raise RuntimeError(f"Argument #{2 * i + 4}: Padding size should be less "
                                   f"than the corresponding input dimension, but got: padding "
                                   f"({before}, {after}) at dimension {dim} of input "
                                   f"{list(shape)}")
    ins = [shape[nd - 1 - i] for i in reversed(range(n_dims))]                # D, H, W
    outs = [shape[nd - 1 - i] + pad[2 * i] + pad[2 * i + 1] for i in reversed(range(n_dims))]
    if max(outs) < 1:
        if n_dims == 1:
            sizes = f"(W: {ins[0]})", f"W: {outs[0]}"
        elif n_dims == 2:       # (the replication kernel's message has a space before ')')
            sizes = (f"(H: {ins[0]}, W: {ins[1]}{' ' if mode == 'replicate' else ''})",
                     f"H: {outs[0]} W: {outs[1]}")
        else:
            sizes = (f"(D: {ins[0]} H: {ins[1]}, W: {ins[2]})",
                     f"D: {outs[0]} H: {outs[1]} W: {outs[2]}")
        raise RuntimeError(f"input {sizes[0]} is too small. Calculated output {sizes[1]}")
    if min(outs) < 0:
        if mode == "reflect" and n_dims == 2:
            raise RuntimeError("numel: integer multiplication overflow")
        full = list(shape[:nd - n_dims]) + outs
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{next(o for o in outs if o < 0)}: {full}")


def _circular_checks(shape, pad, n_dims):
    """The output shape of circular padding, after PyTorch's checks in PyTorch's order.

    PyTorch pads circularly by copying the kept (cropped) input into the output and then
    copying slices of the output onto its own pad regions, innermost dim first.  A pad wider
    than what is kept makes such a copy read what it writes: PyTorch's overlap check raises
    when both slices are dense (every dim before the padded one has size 1); otherwise the copy
    runs, and a right pad wider than the kept part comes out periodic, as here (a left one reads
    uninitialised memory there; here it is periodic too).  With nothing kept the slices coincide
    (no overlap error) and PyTorch's result is uninitialised memory: raised here.  PyTorch's
    gradient where a pad is wider than the kept part is wrong (autograd through the overlapping
    self-copies; torch.autograd.gradcheck fails); here it is the index selection's."""
    nd = len(shape)
    out_shape = list(shape)
    for i in reversed(range(n_dims)):                    # outermost padded dim first
        dim = nd - 1 - i
        before, after, n = pad[2 * i], pad[2 * i + 1], shape[dim]
        if before > n or after > n:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if n + before + after < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
        out_shape[dim] = n + before + after
    if 0 in out_shape:
        return tuple(out_shape)
    kept = [shape[nd - 1 - i] - max(-pad[2 * i], 0) - max(-pad[2 * i + 1], 0)
            for i in range(n_dims)]
    for i in range(n_dims):                              # innermost first, as PyTorch copies
        dim = nd - 1 - i
        if max(pad[2 * i], pad[2 * i + 1]) > kept[i] > 0 and int(np.prod(out_shape[:dim])) == 1:
            raise RuntimeError("unsupported operation: some elements of the input tensor and the "
                               "written-to tensor refer to a single memory location. Please "
                               "clone() the tensor before performing the operation.")
    if min(kept) <= 0:
        # (all of a dim cropped away: PyTorch returns uninitialised memory, never a spec)
        raise RuntimeError("Negative padding value is resulting in an empty dimension")
    return tuple(out_shape)


def _deprecated_upsampling(name: str) -> None:
    warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=3)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated spelling of ``interpolate`` (warns as PyTorch does)."""
    _deprecated_upsampling("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(input, size, scale_factor, mode='nearest')``."""
    _deprecated_upsampling("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)`` (corners aligned)."""
    _deprecated_upsampling("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pad(input, pad, mode="constant", value=None):
    """torch.nn.functional.pad: 'constant' (the core op), and 'reflect', 'replicate', 'circular'
    as index selections along each padded dim (differentiable, gradients add up at the
    repeated positions); a channels_last input gives a channels_last result, as PyTorch's
    (except for 'circular', whose result PyTorch makes contiguous)."""
    if isinstance(value, (complex, np.complexfloating)):
        # F.pad's value is a float (torch.constant_pad_nd's a Scalar, a complex one allowed)
        raise TypeError(f"pad(): argument 'value' (position 4) must be float, not "
                        f"{_type_name(value)}")
    return padded_like_torch(input, pad, mode, value)


def padded_like_torch(input, pad, mode, value):
    """F.pad's work after its argument parsing (torch.constant_pad_nd's too, whose value may
    be complex)."""
    out = _padded(input, pad, mode, value)
    if mode in ("reflect", "replicate") and out is not input:
        # PyTorch's node for the whole pad (here index selections along each padded dim)
        kind = "Reflection" if mode == "reflect" else "Replication"
        out = _core._name_grad_fn(out, f"{kind}Pad{len(pad) // 2}DBackward0")
    if mode == "circular":
        # PyTorch builds circular padding by copying slices into a new contiguous tensor: its
        # node is the last copy's CopySlices (here index selections along each padded dim)
        return _core._name_grad_fn(out, "CopySlices") if out is not input else out
    return follow_channels_last(out, input)


def _padded(input, pad, mode, value):
    if mode == "constant":
        return _core.NN_FUNCTIONS["pad"](input, pad, mode, value)
    _check_tensor(input)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    for i, p in enumerate(pad):
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but "
                            f"found element of type {_type_name(p)} at pos {i}")
    pad = tuple(int(p) for p in pad)
    # PyTorch's order: the pad's length, then the value, then the supported ranks
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) > 2 * input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{input.dim()}")
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    n_dims = len(pad) // 2
    if input.dim() not in (n_dims + 1, n_dims + 2) or n_dims > 3:
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if mode == "circular":
        out_shape = _circular_checks(tuple(input.shape), pad, n_dims)
        if 0 in out_shape:
            # empty: no values to wrap (PyTorch copies nothing, whatever was cropped away)
            out = input
            for i in range(n_dims):
                dim = input.dim() - 1 - i
                out = out.index_select(dim, _wrap(np.zeros(out_shape[dim], dtype=np.int64)))
            return out
    else:
        _edge_pad_checks(tuple(input.shape), pad, n_dims, mode)
        if input.dtype == _core.bool_:       # (circular copies slices: any dtype)
            kernel = "reflection" if mode == "reflect" else "replication"
            raise NotImplementedError(f"\"{kernel}_pad{n_dims}d\" not implemented for 'Bool'")
    out = input
    for i in range(n_dims):
        dim = input.dim() - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        n = input.shape[dim]
        if before or after:
            out = out.index_select(dim, _wrap(_pad_index(n, before, after, mode)))
    if mode != "circular" and out is not input:
        _core._reads_saved_input(out, input)  # PyTorch's padding node saves self
    # all-zero padding: a new tensor all the same, as PyTorch (never input itself: a write into
    # the result must not reach input)
    return input.clone() if out is input else out


# -- channel dropout -------------------------------------------------------------------------------

def check_dropout_p(p) -> None:
    """F.dropout1d/2d/3d's first check, before any of the input's rank (NaN passes it)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _channel_dropout(input, p, training, inplace):
    from ..creation import default_generator
    _check_tensor(input)
    check_dropout_p(p)
    if p != p:      # NaN passes PyTorch's Python check; its kernel's (even in eval) raises
        raise RuntimeError("dropout probability has to be between 0 and 1, but got nan")
    # (PyTorch passes training on as its builtin feature_dropout's 3rd argument `train`)
    _core.check_bool("feature_dropout_" if inplace else "feature_dropout", "train", training, 3)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    # ATen's feature dropout draws one mask value per (dim 0, dim 1) entry, broadcast over the
    # later dims, whatever the rank: dropout2d on (N, C) input masks single elements, not rows.
    # Unbatched input reaches here with a batch dim of 1 added (_unbatched_channel_dropout).
    keep_shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    if p == 1.0:
        mask = np.zeros(keep_shape, dtype=input._array.dtype)
    else:
        # (checked after the p == 1 shortcut, as ATen does: 1-D input with p == 1 is zeros)
        if input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        keep = default_generator().random(keep_shape) < (1.0 - p)
        mask = (keep / (1.0 - p)).astype(input._array.dtype)
    if inplace:
        return input.mul_(_wrap(mask))
    return input * _wrap(mask)


def _unbatched_channel_dropout(input, p, training, inplace):
    """Channel dropout of input without its batch dim, the way PyTorch's dropout1d/3d run it:
    a batch dim of 1 added (unsqueeze_ in place), the batched dropout, the dim taken away again.
    So the result's grad_fn is a squeeze (SqueezeBackward1, in place SqueezeBackward4) and with
    p == 0 the result is a view of input, not input itself; one draw per channel either way."""
    if inplace:
        input.unsqueeze_(0)
        return _channel_dropout(input, p, training, True).squeeze_(0)
    batched = input.unsqueeze(0)
    return _channel_dropout(batched, p, training, False).squeeze(0)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) (or (C, L)) input with probability p, scale by 1/(1-p)."""
    check_dropout_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D "
                           f"input. Note that dropout1d exists to provide channel-wise dropout "
                           f"on inputs with 1 spatial dimension, a channel dimension, and an "
                           f"optional batch dimension (i.e. 2D or 3D inputs).")
    if input.dim() == 2:
        _check_tensor(input)
        return _unbatched_channel_dropout(input, p, training, inplace)
    return _channel_dropout(input, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) input with probability p, scale by 1/(1-p).  Other
    ranks (deprecated) get ATen's feature dropout too: one draw per (dim 0, dim 1) entry."""
    check_dropout_p(p)
    if input.dim() not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is "
                      f"deprecated and will result in an error in a future release. To retain "
                      f"the behavior and silence this warning, please use dropout instead. Note "
                      f"that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      f"spatial dimensions, a channel dimension, and an optional batch dimension "
                      f"(i.e. 3D or 4D inputs).", UserWarning, stacklevel=2)
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                      "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
                      "where C is the channel dim. This behavior will change in a future release "
                      "to interpret the input as one without a batch dimension, i.e. shape "
                      "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch"
                      " to using dropout1d instead.", UserWarning, stacklevel=2)
    return _channel_dropout(input, p, training, inplace)
