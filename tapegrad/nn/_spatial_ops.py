"""Resampling, padding modes and channel dropout for tapegrad.nn.functional.

interpolate is separable: nearest modes are an index_select per axis, linear modes two weighted
index_select taps per axis, bicubic four, the antialiased modes (bilinear, bicubic, lanczos) a
window per output ('area' is adaptive average pooling, as in PyTorch); the
non-constant F.pad modes are an index_select per padded dim.  All of it is the core's
differentiable ops, so gradients (and create_graph) come from the core.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import functools
import math
import warnings

import numpy as np

from .. import _core
from .._half_precision import in_float32_if_half
from .._memory_format import follow_channels_last
from ._conv_ops import _check_tensor, _wrap
from ._pool_ops import _shape_along, adaptive_avg_pool1d, adaptive_avg_pool2d
from ._tap_sum import corner_sum, fused_tap_sum

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


def _check_size_types(size, kernel_error) -> None:
    """PyTorch takes integer sizes only: a float size is refused, not truncated.
    `kernel_error(got)`: the TypeError of the kernel's own parser, which refuses a bool that
    F.interpolate's integer check let through."""
    if isinstance(size, (list, tuple)):
        if not all(_is_integer(s) for s in size):
            raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                            "Tuple[int, int, int], but got size with types "
                            f"{[type(s) for s in size]}")
        if size and isinstance(size[0], (bool, np.bool_)):
            # (PyTorch's parser of an int list looks at the first element's type only: a bool
            # later on is read as 0 or 1)
            raise kernel_error(type(size).__name__, None)
    elif isinstance(size, np.ndarray) and size.ndim == 0 and size.dtype.kind in "iu":
        return                  # (the kernel's parser reads a 0-d integer array by __index__)
    elif isinstance(size, bool) or not _is_integer(size):
        raise TypeError(f"interpolate() received an invalid combination of arguments: size must "
                        f"be an int or a tuple of ints, not {type(size).__name__}")


def _is_parser_float(value) -> bool:
    """Whether PyTorch's argument parser takes `value` as an element of a list of floats: a
    Python or numpy number (a bool too), not a Tensor, a 0-d ndarray, a Fraction or a str."""
    return isinstance(value, (int, float, np.integer, np.floating)) and \
        not isinstance(value, _core.TensorBase)


def _interp_kernel_error(mode, nd, antialias):
    """A maker of the TypeError PyTorch's interpolation kernel (upsample_bilinear2d,
    _upsample_nearest_exact2d, ...) raises when F.interpolate hands it an argument its parser
    refuses; error(size_type, scale_type) names the list arguments' Python types."""
    if mode == "area":          # (PyTorch's area is adaptive average pooling)
        return lambda size_type, scale_type: TypeError(
            f"adaptive_avg_pool{nd}d(): argument 'output_size' (position 2) must be tuple of "
            f"ints, but found element of type bool at pos 0")
    base = {"nearest-exact": "nearest_exact"}.get(mode, mode)
    name = f"upsample_{base}{nd}d"
    if mode == "nearest-exact" or antialias:
        name = f"_{name}{'_aa' if antialias else ''}"
    takes_align = mode not in ("nearest", "nearest-exact")

    def error(size_type, scale_type):
        got = ["Tensor", size_type or "NoneType"] + (["bool"] if takes_align else []) + \
            [scale_type or "NoneType"]
        return TypeError(f"{name}() received an invalid combination of arguments - got "
                         f"({', '.join(got)}), but expected one of:")
    return error


def _interp_sizes(x, nd, size, scale_factor, kernel_error, kernel_takes_scales):
    """(output sizes, scales handed to the kernel).  `kernel_takes_scales`: the scale factors
    go to the kernel as they are (no recompute_scale_factor, not 'area'), whose parser takes
    Python or numpy numbers only: a Tensor there is a TypeError, not read as its value."""
    spatial = tuple(x.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        _check_size_types(size, kernel_error)
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
    if kernel_takes_scales:
        given = scale_factor if isinstance(scale_factor, (list, tuple)) else (scale_factor,)
        if not all(_is_parser_float(f) for f in given):
            # (a single factor reaches the kernel as a list of it, one per spatial dim)
            raise kernel_error(None, type(scale_factor).__name__
                               if isinstance(scale_factor, (list, tuple)) else "list")
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


_fused_cache = None


def _kernel_fuses() -> bool:
    """Whether PyTorch's interpolation kernels contract a * b + c to fused multiply-adds: its
    AVX2 and AVX-512 builds do (the compiler contracts them, measured with torch 2.13 on an
    AVX-512 Xeon), its DEFAULT build (no FMA instructions) does not."""
    global _fused_cache
    if _fused_cache is None:
        from ..backends.cpu import get_cpu_capability
        _fused_cache = get_cpu_capability() != "DEFAULT"
    return _fused_cache


def _madd(a, b, c):
    """a * b + c for numpy arrays / scalars of one floating type, rounded once where PyTorch's
    kernel fuses it (see _kernel_fuses), else twice."""
    a, b, c = np.broadcast_arrays(a, b, c)
    if _kernel_fuses():
        out = np.empty(a.shape, a.dtype)
        if _core.fused_multiply_add(np.ascontiguousarray(a), np.ascontiguousarray(b),
                                    np.ascontiguousarray(c), out) is not None:
            return out
    return a * b + c


def _source_positions(size, n, scale, align_corners, op, cubic=False):
    """The source position of each of n outputs along an axis of `size` inputs, computed as
    PyTorch's kernels compute it: in `op`, the kernel's opmath type (float32 for float32 and
    half inputs, float64 for float64), so that its weights, and the interpolated values, have
    PyTorch's last bits.  Two positions: the one PyTorch's build takes the index from (step *
    (i + 0.5) rounded, then - 0.5) and the one it takes the fraction from (a fused multiply-add
    where it fuses, see _kernel_fuses; measured on one-hot inputs: float64 20 -> 60 needs
    both).  Linear modes clamp a negative position to 0; bicubic does not."""
    op = np.dtype(op).type
    if align_corners:
        step = op(size - 1) / op(n - 1) if n > 1 else op(0)
        src = np.arange(n, dtype=op) * step
        return src, src
    # (a given scale factor becomes a step in double, then in op; a size gives a step in op)
    step = op(1.0 / scale) if scale is not None and scale > 0 else op(size) / op(n)
    half = np.arange(n, dtype=op) + op(0.5)
    for_index = step * half - op(0.5)
    for_fraction = _madd(np.full(n, step, dtype=op), half, op(-0.5))
    if cubic:
        return for_index, for_fraction
    return np.maximum(for_index, op(0)), np.maximum(for_fraction, op(0))


def _linear_taps(size, n, scale, align_corners, op=np.float64):
    """Per output position along one axis: the two source positions and their weights (in op,
    see _source_positions)."""
    if n == size:
        # PyTorch reads x[i] * 1 + x[i] * 0 for an axis whose size does not change, whatever
        # the scale (finite values are copied exactly, an inf becomes NaN as in PyTorch)
        lo = hi = np.arange(n)
        return lo, hi, np.ones(n, dtype=op), np.zeros(n, dtype=op)
    src, fine = _source_positions(size, n, scale, align_corners, op)
    lo = np.minimum(src.astype(np.int64), size - 1)
    hi = np.minimum(lo + 1, size - 1)
    frac = np.clip(fine - lo.astype(op), 0, 1).astype(op)
    return lo, hi, (op(1) - frac).astype(op), frac


def _cubic_taps(size, n, scale, align_corners, op=np.float64):
    """Per output position along one axis: PyTorch's four bicubic taps (source positions
    floor(src) - 1 .. floor(src) + 2, clamped to the axis) and their weights, the cubic
    convolution kernel with A = -0.75, in op (see _source_positions; the source position is
    not clamped at 0, as it is for linear modes)."""
    op = np.dtype(op).type
    src, fine = _source_positions(size, n, scale, align_corners, op, cubic=True)
    base = np.minimum(np.floor(src).astype(np.int64), size - 1)
    t = np.clip(fine - base.astype(op), 0, 1).astype(op)
    a = op(-0.75)
    one = op(1)
    # ((A + 2) d - (A + 3)) d d + 1 for |d| <= 1 and ((A d - 5 A) d + 8 A) d - 4 A for
    # 1 < |d| < 2, rounded where PyTorch's build rounds them: its inner multiply-adds fused,
    # the last multiply and add apart (measured: its weights, read off one-hot inputs, match
    # this and no other pairing)
    near = lambda d: ((_madd(a + op(2), d, -(a + op(3))) * d) * d + one).astype(op)
    far = lambda d: (_madd(_madd(a, d, -op(5) * a), d, op(8) * a) * d - op(4) * a).astype(op)
    weights = tuple(w.astype(op) for w in (far(t + one), near(t), near(one - t), far(one - t + one)))
    taps = [np.clip(base + k, 0, size - 1) for k in (-1, 0, 1, 2)]
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
    along the axis.  The sum is PyTorch's: where its build fuses (_kernel_fuses) it computes
    acc = fma(x0, w0, x1 * w1), then acc = fma(xk, wk, acc) for the other taps (measured)."""
    shape = _shape_along(x.dim(), dim, len(taps[0][0]))
    dtype = x._array.dtype

    def gathered(tap):
        index, w = tap
        return x.index_select(dim, _wrap(index)), w.astype(dtype).reshape(shape)

    terms = [gathered(tap) for tap in taps]
    if not _kernel_fuses():
        out = None
        for xk, wk in terms:
            out = xk * _wrap(wk) if out is None else out + xk * _wrap(wk)
        return out
    if dtype == np.float32:
        return fused_tap_sum([terms[1], terms[0]] + terms[2:])
    (x0, w0), (x1, w1) = terms[:2]
    out = _fused_tap(x0, w0, x1 * _wrap(w1))
    for xk, wk in terms[2:]:
        out = _fused_tap(xk, wk, out)
    return out


def _bilinear_by_corners(input, out_sp) -> bool:
    """Whether PyTorch's bilinear kernel for this call is its channels-last one (which it runs
    on any layout: for a channels_last input of more than 3 channels, or an output whose height
    plus width is at most 128), rather than its generic separable-order one."""
    if sum(out_sp) <= 128:
        return True
    from .. import channels_last
    return input.shape[1] > 3 and input.is_contiguous(memory_format=channels_last)


# PyTorch's channels-last bilinear kernel sums the four corners x_hw * (wh * ww) in its SIMD
# order over whole vectors of channels (16 half, 8 float32 or 4 float64 lanes: its AVX2 build,
# which its dispatch runs on AVX-512 CPUs too), in its scalar order over the channels left
# over (another for half); each order is a first product, then fused multiply-adds (measured).
_CORNERS_VECTOR = ((1, 0), (1, 1), (0, 1), (0, 0))
_CORNERS_SCALAR = ((0, 1), (0, 0), (1, 0), (1, 1))
_CORNERS_SCALAR_HALF = ((0, 0), (0, 1), (1, 0), (1, 1))
_VECTOR_BYTES = 32


def _bilinear_corners(x, taps, stored):
    """Bilinear interpolation of (N, C, H, W) x as PyTorch's channels-last kernel computes it:
    taps = [[(h0, a0), (h1, a1)], [(w0, b0), (w1, b1)]], weights in the opmath dtype; `stored`
    the input's dtype, whose size sets the SIMD lanes (a half input is computed here in
    float32, in vectors of 16 half channels)."""
    (h_taps, w_taps) = taps
    dtype = x._array.dtype
    # (the columns gathered first, from the smaller input: a gather along the last axis reads
    # strided and costs several times one along the rows, which copies whole rows)
    cols = [x.index_select(3, _wrap(w)) for w, _ in w_taps]
    # float32 where PyTorch's build fuses: one node reading the rows of the two column gathers
    # in place (_tap_sum.corner_sum); otherwise the four corners gathered and summed in ops
    fused = dtype == np.float32 and _kernel_fuses()
    values = {} if fused else {(i, j): cols[j].index_select(2, _wrap(h))
                               for i, (h, _) in enumerate(h_taps) for j in (0, 1)}
    weights = {(i, j): (a[:, None] * b[None, :]).astype(dtype) for i, (_, a) in enumerate(h_taps)
               for j, (_, b) in enumerate(w_taps)}

    def summed(order, lo, hi):
        if fused:
            part = [c if (lo, hi) == (0, x.shape[1]) else c[:, lo:hi] for c in cols]
            return corner_sum(part, [(j, h_taps[i][0], weights[i, j]) for i, j in order])
        part = {k: v if (lo, hi) == (0, x.shape[1]) else v[:, lo:hi] for k, v in values.items()}
        first = order[0]
        acc = part[first] * _wrap(weights[first])
        for k in order[1:]:
            acc = (_fused_tap(part[k], weights[k], acc) if _kernel_fuses()
                   else acc + part[k] * _wrap(weights[k]))     # (float64: no wider type)
        return acc

    channels = x.shape[1]
    split = channels - channels % (_VECTOR_BYTES // stored.itemsize)
    if split == channels:
        return summed(_CORNERS_VECTOR, 0, channels)
    scalar = _CORNERS_SCALAR_HALF if stored == np.float16 else _CORNERS_SCALAR
    if split == 0:
        return summed(scalar, 0, channels)
    from .. import cat
    return cat([summed(_CORNERS_VECTOR, 0, split), summed(scalar, split, channels)], 1)


def _fused_tap(x, w, acc):
    """x * w + acc rounded once, as PyTorch's fused kernels compute it, in recorded ops (w a
    constant array or a tensor).  For float32 the product of two float32 values is exact in
    float64, so x * w + acc in float64 rounded to float32 is the fused result (but for a
    float64 sum exactly halfway between two float32 values, vanishingly rare); float64 has no
    wider type: x * w + acc rounded twice there (an ulp of float64 at most)."""
    if x._array.dtype != np.float32:
        return acc + x * (w if isinstance(w, _core.TensorBase) else _wrap(w))
    wide = w.double() if isinstance(w, _core.TensorBase) else _wrap(w.astype(np.float64))
    return (x.double() * wide + acc).float()     # (acc promoted)


def _axis_taps(mode, antialias, size, n, scale, align_corners, op=np.float64):
    """The (index, weight) taps of one axis of a weighted interpolation mode (the linear and
    bicubic weights computed in op, see _source_positions)."""
    if antialias:
        return _antialias_taps(size, n, scale, align_corners, mode)
    return list(_weighted_axis_taps(mode == "bicubic", size, n, scale, align_corners,
                                    np.dtype(op).type, _kernel_fuses()))


@functools.lru_cache(maxsize=256)
def _weighted_axis_taps(cubic, size, n, scale, align_corners, op, fuses):
    """_axis_taps' linear and bicubic taps, kept per axis geometry (and whether the kernels
    fuse, which their rounding follows): computing them took half the time of a small resize.
    Their arrays are read-only, shared by the calls."""
    if cubic:
        taps = _cubic_taps(size, n, scale, align_corners, op)
    else:
        lo, hi, w_lo, w_hi = _linear_taps(size, n, scale, align_corners, op)
        taps = [(lo, w_lo), (hi, w_hi)]
    for index, w in taps:
        index.flags.writeable = False
        w.flags.writeable = False
    return tuple(taps)


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
    if not isinstance(input, _core.TensorBase):
        input.dim()     # PyTorch's interpolate (Python) reads it first: its AttributeError
        _check_tensor(input)
    if align_corners is not None and mode in ("nearest", "nearest-exact", "area"):
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    nd = input.dim() - 2
    if size is not None and scale_factor is None and recompute_scale_factor:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    out_sp, scales = _interp_sizes(input, nd, size, scale_factor,
                                   _interp_kernel_error(mode, nd, antialias),
                                   not recompute_scale_factor and mode != "area")
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

    stored = input._array.dtype
    # the kernels' opmath: weights computed in float32 for float32 and half inputs, in float64
    # for float64
    op = np.float64 if stored == np.float64 else np.float32
    # PyTorch's bilinear kernel for small outputs (and channels_last inputs) is its channels-last
    # one, which sums the four corners (_bilinear_corners); its other linear and bicubic
    # kernels interpolate along the last axis first: the value at (h, w) is
    # sum_i wh_i * (sum_j ww_j * x[h_i, w_j]), so passing over the axes last to first rounds
    # the same partial sums (first to last differed in the last bit)
    corners = mode == "bilinear" and not antialias and _bilinear_by_corners(input, out_sp)
    order = tuple(range(nd) if mode in ("nearest", "nearest-exact") else reversed(range(nd)))

    def weighted_taps(s, n, f):
        taps = _axis_taps(mode, antialias, s, n, f, bool(align_corners), op)
        if antialias or stored == op or corners:
            return taps     # (the channels-last kernel keeps its weights in opmath)
        # the other kernels store their weights in the input's dtype: a half input's are
        # rounded to half, a linear pair as 1 - w1 of the rounded w1
        if mode == "bicubic":
            return [(index, w.astype(stored).astype(op)) for index, w in taps]
        (lo, _), (hi, w1) = taps
        w1 = w1.astype(stored).astype(op)
        return [(lo, (op(1) - w1).astype(stored).astype(op)), (hi, w1)]

    def resampled(out):
        if corners:
            return _bilinear_corners(out, [weighted_taps(s, n, f)
                                           for s, n, f in zip(spatial, out_sp, scales)], stored)
        given = out
        for axis in order:
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
                out = _taps_along(out, dim, weighted_taps(s, n, f))
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
