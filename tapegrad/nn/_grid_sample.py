"""torch.nn.functional.affine_grid and grid_sample (2-d and 3-d; bilinear/trilinear, nearest,
and 2-d bicubic; padding modes zeros, border and reflection; both align_corners conventions).

Both are compositions of the core's differentiable ops plus one gather, so gradients reach the
input and the grid (and create_graph works) without a hand-written VJP:

- the grid's coordinates are unnormalised to pixel units by an affine map, and the padding
  mode's fold (border clip, reflection) is itself piecewise affine: its slope (0 or +-1) and
  offset per point are computed in numpy from the values and applied as ``c * slope + offset``,
  so the gradient of a folded coordinate is the slope, exactly as PyTorch's kernels set it;
- the interpolation taps' positions are floor/round of the coordinates (constant); their
  weights are polynomials in the fractional part (differentiable in the grid);
- all taps of all points are read by ONE gather of the (N*C, D*H*W) input planes (its adjoint,
  the input gradient, a bincount scatter-add), then weighted and summed over the taps.

That composition took some forty array passes per call (15-25x PyTorch's time at the sizes of a
spatial transformer), so a float32/float64 input sampled bilinearly (trilinearly) or nearest
runs as one node of C kernels (src/tapegrad/grid_kernels.c: PyTorch's formulas and order of
rounding, so values and both gradients have its bits); the composition remains for bicubic and
other dtypes, and is what a create_graph backward differentiates.
"""
from __future__ import annotations as _annotations

import functools
import warnings

import numpy as np

from .. import _core
from .. import linspace as _linspace, stack as _stack, zeros as _zeros
from .._extra_functions import _torch_grad_fn_name
from ..autograd.function import Function, KernelFunction
from ._conv_ops import _check_tensor, _Gather

_wrap = _core.wrap_array

__all__ = ["affine_grid", "grid_sample"]

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the old "
                  "behavior is desired. See the documentation of grid_sample for details.")


# -- affine_grid ------------------------------------------------------------------------------------

def _base_coordinates(n: int, align_corners: bool, dtype) -> np.ndarray:
    """n evenly spaced normalised coordinates in [-1, 1] (pixel centres when not align_corners);
    a single step sits at 0.  Computed as PyTorch does, in theta's dtype: its linspace, then
    `* (n - 1)` and `/ n` rounded one after the other.  Exact values (-0.25 where PyTorch has
    -0.24999999) would put a sample a rounding error to the other side of a pixel centre, where
    bilinear interpolation's gradient with respect to the grid jumps to the other neighbour
    (an identity-initialised spatial transformer samples exactly at the centres)."""
    if n <= 1:
        return _zeros(max(n, 0), dtype=dtype)._array
    steps = _linspace(-1.0, 1.0, n, dtype=dtype)
    if not align_corners:
        steps = steps * (n - 1) / n
    return steps._array


def affine_grid(theta, size, align_corners=None):
    """Sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps ``theta`` (N, 2, 3)
    (or (N, 3, 4)) applied to the normalised coordinates of an output of ``size``
    (N, C, H, W) (or (N, C, D, H, W)); differentiable in theta."""
    _check_tensor(theta, "theta")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=2)
        align_corners = False
    _core.check_bool("affine_grid_generator", "align_corners", align_corners, 3)
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    given_size = size          # (PyTorch's messages show size as the caller passed it)
    size = tuple(int(s) for s in size)
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {given_size}.")
    nd = len(size) - 2
    if theta.dim() != 3 or tuple(theta.shape[1:]) != (nd, nd + 1):
        raise ValueError(f"Expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} "
                         f"for size {given_size}. Got {theta.shape}.")
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids "
                      "when align_corners=True. This is not an intended use case of affine_grid. "
                      "See the documentation of affine_grid for details.", UserWarning,
                      stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {given_size}")
    return affine_grid_generator(theta, size, align_corners)


def affine_grid_generator(theta, size, align_corners):
    """``torch.affine_grid_generator``: the kernel behind F.affine_grid, without its argument
    checks and warnings (an integer theta gives an integer grid, the base coordinates truncated
    to its dtype, as PyTorch's)."""
    _check_tensor(theta, "theta")
    _core.check_bool("affine_grid_generator", "align_corners", align_corners, 3)
    size = tuple(int(s) for s in size)
    if len(size) not in (4, 5):
        raise RuntimeError("AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.")
    nd = len(size) - 2
    if theta.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if theta.shape[0] != size[0] or theta.shape[2] != nd + 1:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{size[0]}, {nd + 1}] but got: [{theta.shape[0]}, "
                           f"{theta.shape[2]}].")
    spatial = size[2:]
    if theta.shape[1] != nd:
        raise RuntimeError(f"shape '{list(size[:1] + spatial + (nd,))}' is invalid for input of "
                           f"size {size[0] * int(np.prod(spatial)) * theta.shape[1]}")
    dtype = theta._array.dtype
    # Homogeneous base coordinates (x, y[, z], 1) of every output point, x along the last dim;
    # held in theta's dtype, as PyTorch's base grid is (an integer theta truncates them).
    float_dtype = theta.dtype if theta.is_floating_point() else None
    base = _base_grid(spatial, bool(align_corners), float_dtype, dtype)
    out_shape = (size[0],) + spatial + (nd,)
    if not (theta.requires_grad and _core.is_grad_enabled()):
        # (no node to record: the product alone; the Function's call was a third of a call)
        return _wrap(np.matmul(base, np.swapaxes(theta._array, 1, 2)).reshape(out_shape))
    grid = _AffineGrid.apply(theta, base)                     # (N, points, nd)
    return _core._name_grad_fn(grid.reshape(out_shape), "AffineGridGeneratorBackward0")


@functools.lru_cache(maxsize=64)
def _base_grid(spatial: tuple, align_corners: bool, float_dtype, dtype) -> np.ndarray:
    """The homogeneous base coordinates (points, nd + 1) of an output of `spatial` size, kept
    per geometry and dtype (read-only, shared by the calls: a training loop asks for the same
    one every step)."""
    axes = [_base_coordinates(n, align_corners, float_dtype) for n in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")                 # one array per spatial dim
    base = np.stack(list(mesh[::-1]) + [np.ones(spatial)], axis=-1).reshape(-1, len(spatial) + 1)
    base = base.astype(dtype, copy=False)
    base.flags.writeable = False
    return base


class _AffineGrid(Function):
    """grid = base @ theta^T, keeping only the constant base: like PyTorch's
    affine_grid_generator it holds no tensor of the graph, so the grid can be backpropagated
    through repeatedly (one grid sampled in several ways) without retain_graph."""

    @staticmethod
    def forward(ctx, theta, base):
        ctx.base = base
        return _wrap(np.matmul(base, np.swapaxes(theta._array, 1, 2)))

    @staticmethod
    def backward(ctx, g):
        # differentiable in g, so create_graph reaches theta's gradient through it
        return g.transpose(1, 2) @ _wrap(ctx.base), None


# -- grid_sample ------------------------------------------------------------------------------------

def _unnormalise(coord, size: int, align_corners: bool):
    """[-1, 1] to pixel units: the corner pixels' centres (align_corners) or their outer edges."""
    if align_corners:
        return (coord + 1.0) * ((size - 1) / 2.0)
    if coord._array.dtype == np.float32:
        # PyTorch's float32 kernels fuse the scaling and the shift (measured: 9 x 13 inputs)
        from ._spatial_ops import _fused_tap, _kernel_fuses
        if _kernel_fuses():
            return _fused_tap(coord + 1.0, np.float32(size / 2.0), -0.5)
    return (coord + 1.0) * (size / 2.0) - 0.5


def _fold_slope_offset(c: np.ndarray, size: int, padding_mode: str, align_corners: bool,
                       nan_to_far_edge: bool = False):
    """(slope, offset) of the padding mode's fold at each coordinate value c: the folded
    coordinate is c * slope + offset (slope 0 where a border clip holds it).

    The clip also catches non-finite coordinates, as PyTorch's kernels do: +-inf clip to the
    far/near edge (reflection first turns them into NaN), and a NaN lands on pixel 0 in 2-d
    (its vectorised clamp is written to send NaN to 0) but on the far edge size - 1 in 3-d
    (its scalar min(size - 1, max(c, 0)) keeps the limit when a comparison with NaN fails):
    ``nan_to_far_edge`` picks the 3-d rule."""
    slope = np.ones_like(c)
    offset = np.zeros_like(c)
    if padding_mode == "reflection":
        # Reflect about the edge pixels' centres (align_corners) or outer edges, in doubled units.
        low2, high2 = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        if low2 == high2:
            return np.zeros_like(c), np.zeros_like(c)
        low, span = low2 / 2.0, (high2 - low2) / 2.0
        d = c - low
        mirrored = np.where(d < 0, -1.0, 1.0).astype(c.dtype)
        d = np.abs(d)
        flips = np.floor(d / span)
        with np.errstate(invalid="ignore"):       # an inf folds to NaN, clipped below
            extra = np.fmod(d, span)
            odd = np.fmod(flips, 2) != 0
        folded = np.where(odd, span - extra + low, extra + low)
        slope = np.where(odd, -mirrored, mirrored).astype(c.dtype)
        offset = (folded - c * slope).astype(c.dtype)
    if padding_mode in ("border", "reflection"):
        value = c * slope + offset
        nan = np.isnan(value)
        low_clip = (value <= 0) | (nan & (not nan_to_far_edge))
        high_clip = (value >= size - 1) | (nan & nan_to_far_edge)
        slope = np.where(low_clip | high_clip, 0, slope).astype(c.dtype)
        offset = np.where(low_clip, 0, np.where(high_clip, size - 1, offset)).astype(c.dtype)
    return slope, offset


def _source_coordinates(grid, spatial, padding_mode, align_corners):
    """Per spatial axis (D, H, W order) the differentiable pixel coordinate (N, Q) of every grid
    point after the padding mode's fold."""
    n = grid.shape[0]
    nd = len(spatial)
    points = int(np.prod(grid.shape[1:-1]))
    flat = grid.reshape(n, points, nd)           # explicit count: -1 is ambiguous when n == 0
    coords = []
    for axis, size in enumerate(spatial):
        c = _unnormalise(flat.select(2, nd - 1 - axis), size, align_corners)
        if padding_mode != "zeros":
            slope, offset = _fold_slope_offset(c._array, size, padding_mode, align_corners,
                                               nd == 3)
            finite = np.isfinite(c._array)
            if not finite.all():
                # a clipped inf/NaN has slope 0, but inf * 0 would be NaN again
                c = c.masked_fill(_wrap(~finite), 0.0)
            c = c * _wrap(slope) + _wrap(offset)
        coords.append(c)
    return coords


def _fold_positions(p: np.ndarray, size: int, padding_mode, align_corners, dtype):
    """Integer tap positions p folded by the padding mode (they stay integers)."""
    value = p.astype(dtype)
    slope, offset = _fold_slope_offset(value, size, padding_mode, align_corners)  # (2-d only)
    return np.rint(value * slope + offset).astype(np.int64)


def _tap_position(p: np.ndarray) -> np.ndarray:
    """Integral-valued coordinates as int64 tap positions.  A coordinate left huge or
    non-finite (zeros padding; bicubic, which folds its taps later) becomes a position far
    outside on its own side (NaN on the low side), so that it is masked or clipped like the
    value itself (a masked tap's flat index may wrap around; it is never read)."""
    far = 2.0 ** 62
    return np.where(np.isnan(p), -far, np.clip(p, -far, far)).astype(np.int64)


def _cubic_weights(t):
    """The four cubic-convolution weights (A = -0.75) of taps at offsets -1, 0, 1, 2 from
    floor(x), t = x - floor(x)."""
    a = -0.75

    def near(x):                    # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):                     # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]


def _taps(coords, spatial, mode, padding_mode, align_corners, dtype):
    """Every interpolation tap: flat plane positions (N, T, Q) (int64), whether each lies
    inside the input, and the differentiable weights (N, T, Q) (None for nearest)."""
    if mode == "nearest":
        per_axis = [([_tap_position(np.rint(c._array))], None) for c in coords]
    else:
        per_axis = []
        for c, size in zip(coords, spatial):
            floor = np.floor(c._array)
            t = c - _wrap(floor.astype(dtype))
            base = _tap_position(floor)
            if mode == "bilinear":
                per_axis.append(([base, base + 1], [1.0 - t, t]))
            else:
                positions = [base + k for k in (-1, 0, 1, 2)]
                if padding_mode != "zeros":
                    # Bicubic folds each tap's position, not the coordinate.
                    positions = [_fold_positions(p, size, padding_mode, align_corners, dtype)
                                 for p in positions]
                per_axis.append((positions, _cubic_weights(t)))
    index, inside, weights = [0], [True], [None]
    stride = 1
    # Combine axes from the last (W) to the first: flat index = sum of position * stride.
    for (positions, axis_weights), size in zip(reversed(per_axis), reversed(spatial)):
        new_index, new_inside, new_weights = [], [], []
        for k, p in enumerate(positions):
            for i, ok, w in zip(index, inside, weights):
                new_index.append(i + p * stride)
                new_inside.append(ok & (p >= 0) & (p < size))
                if axis_weights is None:
                    new_weights.append(None)
                else:
                    new_weights.append(axis_weights[k] if w is None else axis_weights[k] * w)
        index, inside, weights, stride = new_index, new_inside, new_weights, stride * size
    return np.stack(index, 1), np.stack(inside, 1), weights


def _unit_weight_of(grid):
    """Ones shaped like grid[..., 0] that depend on the grid with derivative zero (a masked_fill
    of every element: no NaN or inf of the grid leaks through).  Nearest sampling's single tap
    is weighted by it, so the grid gets PyTorch's zero gradient and, under create_graph, the
    input's gradient depends on the grid as PyTorch's one backward node of (grad, input, grid)
    makes it (its requires_grad, a penalty's backward reaching the grid)."""
    first = grid.select(-1, 0)
    return first.masked_fill(_wrap(np.ones(first.shape, dtype=bool)), 1.0)


def _check_grid_sample_modes(input, grid, mode, padding_mode):
    """grid_sample's own checks, which PyTorch makes before its align_corners warning."""
    _check_tensor(input)
    _check_tensor(grid, "grid")
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")


def _check_grid_sample(input, grid, mode):
    """The grid_sampler kernel's checks of shapes and dtypes (after the warning), in PyTorch's
    order: the common checks (batch, grid's last size, empty spatial dims) come first, and only then
    the one on ranks, whose message names 4D for a 4-d input and 5D for any other."""
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    nd = input.dim() - 2
    if grid.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last dimension, "
                           f"but got grid with sizes {list(grid.shape)}")
    if any(s == 0 for s in input.shape[2:]):
        raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                           f"dimensions, but input has sizes {list(input.shape)} with dimension "
                           f"{2 + [s for s in input.shape[2:]].index(0)} being empty")
    if input.dim() != grid.dim() or input.dim() not in (4, 5):
        rank = 4 if input.dim() == 4 else 5
        raise RuntimeError(f"grid_sampler(): expected {rank}D input and grid with same number of "
                           f"dimensions, but got input with sizes {list(input.shape)} and grid "
                           f"with sizes {list(grid.shape)}")
    if mode == "bicubic" and nd == 3:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.is_floating_point():
        raise NotImplementedError(f'"grid_sampler_{nd}d_cpu_kernel_impl" not implemented for '
                                  f"'{_core.scalar_type_name_of(input._array.dtype)}'")
    if grid._array.dtype != input._array.dtype:
        raise RuntimeError(f"expected scalar type {_core.scalar_type_name_of(input._array.dtype)} "
                           f"but found {_core.scalar_type_name_of(grid._array.dtype)}")


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` (N, C, H, W) (or (N, C, D, H, W)) at the normalised positions ``grid``
    (N, H_out, W_out, 2) (or (N, D_out, H_out, W_out, 3)); x = grid[..., 0] runs along the
    width.  ``mode`` 'bilinear' (trilinear for 5-d), 'nearest' (ties to even) or 'bicubic'
    (4-d); ``padding_mode`` 'zeros', 'border' or 'reflection'.  Differentiable in the input and
    in the grid (nearest gives the grid zero gradient, as PyTorch)."""
    _check_grid_sample_modes(input, grid, mode, padding_mode)
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=2)
        align_corners = False
    _check_grid_sample(input, grid, mode)
    _core.check_bool("grid_sampler", "align_corners", align_corners, 5)
    if mode != "bicubic" and input._array.dtype in _KERNEL_DTYPES:
        if input.dim() == 4:
            return GridSampler2D.apply(input, grid, _kernel_sampling(
                grid._array, mode, padding_mode, align_corners))
        return GridSampler3D.apply(input, grid, (_INTERPOLATION_MODES.index(mode),
                                                 _PADDING_MODES.index(padding_mode),
                                                 int(bool(align_corners))))
    return _sampled(input, grid, mode, padding_mode, align_corners)


def _sampled(input, grid, mode, padding_mode, align_corners):
    """grid_sample composed of recorded ops (arguments checked)."""
    n, channels = input.shape[:2]
    spatial = tuple(input.shape[2:])
    out_spatial = tuple(grid.shape[1:-1])
    dtype = input._array.dtype
    if mode == "bicubic":
        # Bicubic folds each tap, so the coordinate itself is only unnormalised.
        coords = _source_coordinates(grid, spatial, "zeros", align_corners)
    else:
        coords = _source_coordinates(grid, spatial, padding_mode, align_corners)
    index, inside, weights = _taps(coords, spatial, mode, padding_mode, align_corners, dtype)
    taps, points = index.shape[1], index.shape[2]
    plane = int(np.prod(spatial))
    index = np.where(inside, index, 0)                         # masked taps read a valid 0th
    rows = np.broadcast_to(index.reshape(n, 1, taps * points),
                           (n, channels, taps * points)).reshape(n * channels, taps * points)
    values = _Gather.apply(input.reshape(n * channels, plane), rows,
                           (n, channels, taps, points))
    outside = _wrap(~inside.reshape(n, 1, taps, points))
    # PyTorch does not read an outside tap at all: it adds an exact +0, where `value * 0` would
    # give -0 for a negative value (printed "-0.") and NaN for an infinite one.  A masked tap read
    # the plane's 0th value; masked_fill also stops its gradient.
    values = values.masked_fill(outside, 0.0)
    if weights[0] is None:                                     # nearest: one tap
        out = values.select(2, 0)
        if grid.requires_grad:
            # (N, 1, Q): x * 1 is x exactly, -0 and inf included
            out = out * _unit_weight_of(grid).reshape(n, 1, -1)
    else:
        w = _stack(weights, 1).unsqueeze(1)               # (N, 1, T, Q)
        if len(spatial) == 3 and not np.isfinite(w._array).all():
            # PyTorch's 3-d kernel reads only the taps inside the input: an outside tap's
            # NaN weight (from a non-finite coordinate) adds nothing there
            w = w.masked_fill(outside, 0.0)
        out = _weighted_sum(values, w, len(spatial))
    result = _core._name_grad_fn(out.reshape((n, channels) + out_spatial),
                                 f"GridSampler{len(spatial)}DBackward0")
    # PyTorch's node saves the input and the grid: writing into either (a flow field or a
    # feature volume updated under no_grad) before backward raises there, where the composition
    # here had kept the values it read (its reshape record saves nothing: slots are free)
    _core._guard_saved_version(result, input, grid)
    return result


# -- the 4-d kernels (bilinear and nearest) ---------------------------------------------------------

_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _kernel_sampling(grid: np.ndarray, mode, padding_mode, align_corners) -> tuple:
    """The tuple that tells grid_kernels.c how to sample (grid_kernels.h, tg_grid2d): PyTorch's
    kernel works in chunks of a 32-byte vector, fusing multiply-adds where its build has them;
    its chunks run over the whole output plane when it can read the grid as one run (the grid
    C-contiguous, or each coordinate's (H, W) plane contiguous), else row by row."""
    from ._spatial_ops import _kernel_fuses
    ho, wo = grid.shape[1], grid.shape[2]
    item = grid.itemsize
    s_h, s_w, s_c = (s // item for s in grid.strides[1:])
    flat = _contiguous_geometry((ho, wo, 2), (s_h, s_w, s_c)) or (
        (s_w == 1 or wo == 1) and _contiguous_geometry((ho, wo), (s_h, s_w)))
    return (_INTERPOLATION_MODES.index(mode), _PADDING_MODES.index(padding_mode),
            int(bool(align_corners)), int(_kernel_fuses()), 32 // item, ho * wo if flat else wo)


def _contiguous_geometry(sizes, strides) -> bool:
    """PyTorch's geometry_is_contiguous: C-contiguous strides, a dim of size 1 taking any."""
    expected = 1
    for size, stride in zip(reversed(sizes), reversed(strides)):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True


class GridSampler2D(KernelFunction):
    """grid_sample of a 4-d input, bilinear or nearest, as one node: arguments (input, grid,
    sampling), sampling the tuple of _kernel_sampling.  PyTorch's node saves the input and the
    grid: a write into either before backward raises.  create_graph differentiates the
    composition (_sampled) instead."""

    saved_args = (0, 1)
    # grid_kernels.c's pair for this rank (GridSampler3D names the 5-d pair)
    forward_kernel = staticmethod(_core._grid_sample_2d)
    backward_kernel = staticmethod(_core._grid_sample_2d_backward)

    @classmethod
    def kernel_forward(cls, input, grid, sampling):
        input = np.ascontiguousarray(input)
        grid = np.ascontiguousarray(grid)
        return cls.forward_kernel(input, grid, sampling), (input, grid, sampling)

    @classmethod
    def kernel_backward(cls, state, needs, grads):
        input, grid, sampling = state
        g = grads[0]
        if g is None or not (needs[0] or needs[1]):
            return None, None, None
        grad_input, grad_grid = cls.backward_kernel(
            np.ascontiguousarray(g), input, grid, sampling, needs[0])
        return grad_input, (grad_grid if needs[1] else None), None

    @staticmethod
    def graph_backward(ctx, saved, g):
        if g is None:
            return None, None, None
        from ._attention import _composite_grads
        mode, padding, align_corners = ctx.params[2][:3]
        return _composite_grads(
            lambda i, gr: _sampled(i, gr, _INTERPOLATION_MODES[mode], _PADDING_MODES[padding],
                                   bool(align_corners)),
            saved, ctx.needs_input_grad, g) + (None,)


_torch_grad_fn_name(GridSampler2D, "GridSampler2DBackward0")


class GridSampler3D(GridSampler2D):
    """grid_sample of a 5-d input, trilinear or nearest, as one node (grid_kernels.c:
    PyTorch's scalar kernel): arguments (input, grid, (mode, padding, align_corners))."""

    forward_kernel = staticmethod(_core._grid_sample_3d)
    backward_kernel = staticmethod(_core._grid_sample_3d_backward)


_torch_grad_fn_name(GridSampler3D, "GridSampler3DBackward0")


def _weighted_sum(values, w, nd: int):
    """Sum over the taps (dim 2) of values * w, as PyTorch's kernels round it: its 2-d bilinear
    kernel (where its build fuses multiply-adds) computes nw * x_nw, then fma(x, w, acc) for
    the ne, sw and se taps in that order (measured: a plain sum was an ulp off for about half
    the float32 outputs)."""
    from ._spatial_ops import _kernel_fuses
    if not (nd == 2 and values.shape[2] == 4 and values._array.dtype == np.float32
            and _kernel_fuses()):
        return (values * w).sum(2)
    from ._tap_sum import GridTapSum
    return GridTapSum.apply(values, w)


# PyTorch's enums behind grid_sampler's int arguments (GridSamplerInterpolation, GridSamplerPadding)
_INTERPOLATION_MODES = ("bilinear", "nearest", "bicubic")
_PADDING_MODES = ("zeros", "border", "reflection")


def _grid_sampler(fn, input, grid, interpolation_mode, padding_mode, align_corners, ndim=None):
    from .._extra_ops import _int_argument
    _check_tensor(input)
    _check_tensor(grid, "grid")
    interpolation = _int_argument(interpolation_mode, fn, "interpolation_mode", 3)
    padding = _int_argument(padding_mode, fn, "padding_mode", 4)
    _core.check_bool(fn, "align_corners", align_corners, 5)
    # (PyTorch casts any int to its enum and its kernel's switch then reads an unnamed value:
    # what comes out is not defined, so an int outside the enums is refused here)
    if not 0 <= interpolation < len(_INTERPOLATION_MODES):
        raise RuntimeError(f"{fn}(): expected interpolation_mode to be 0 (bilinear), 1 (nearest) "
                           f"or 2 (bicubic), but got: {interpolation}")
    if not 0 <= padding < len(_PADDING_MODES):
        raise RuntimeError(f"{fn}(): expected padding_mode to be 0 (zeros), 1 (border) or "
                           f"2 (reflection), but got: {padding}")
    if ndim is not None and (input.dim() != ndim or grid.dim() != ndim):
        raise RuntimeError(f"grid_sampler(): expected {ndim}D input and grid with same number of "
                           f"dimensions, but got input with sizes {list(input.shape)} and grid "
                           f"with sizes {list(grid.shape)}")
    return grid_sample(input, grid, _INTERPOLATION_MODES[interpolation], _PADDING_MODES[padding],
                       align_corners)


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """``torch.grid_sampler``: F.grid_sample with PyTorch's enum values for the modes
    (interpolation 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection)
    and align_corners required; 4-d or 5-d input."""
    return _grid_sampler("grid_sampler", input, grid, interpolation_mode, padding_mode,
                         align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """``torch.grid_sampler_2d``: grid_sampler for a 4-d input (N, C, H, W) and grid."""
    return _grid_sampler("grid_sampler_2d", input, grid, interpolation_mode, padding_mode,
                         align_corners, 4)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """``torch.grid_sampler_3d``: grid_sampler for a 5-d input (N, C, D, H, W) and grid
    (bilinear, that is trilinear, or nearest)."""
    return _grid_sampler("grid_sampler_3d", input, grid, interpolation_mode, padding_mode,
                         align_corners, 5)
