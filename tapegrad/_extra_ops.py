"""Ops PyTorch scripts use that the compiled core does not provide, built in Python.

Differentiable ones are composites of recorded ops (sort/topk values are a gather, flip/roll an
index_select, diag a where and a cat, meshgrid a view and an expand), or a small
autograd.Function where PyTorch's values need a numpy kernel (cumsum and log10/log2, whose
float32 results PyTorch computes at higher precision) and the backward is itself made of
differentiable ops (so create_graph works); those live in _extra_functions.py, imported on first
use so that `import tapegrad` does not load autograd.  The others (comparisons, histograms,
counting, unique) return tensors that do not require grad, as in PyTorch.

Every function is registered in the tapegrad namespace and, where PyTorch has one, as a Tensor
method (see `register`, called by tapegrad/__init__.py); names that already exist are left alone.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import builtins
import functools
import math
import warnings

import numbers
import sys

import numpy as np

from . import _core
from ._device import check_unpinned
from ._deprecated_overloads import NOT_GIVEN, scalar_first
from . import _profiling
from ._profiling import op_event
from ._layout import sparse_factory_layout
from ._class_members import has_member
from ._format import set_printoptions
from ._half_precision import in_float32_if_half
from ._preserve_layout import inverse, preserved_order
from ._shift_ops import _become_result, _write_back
from .grad_mode import is_grad_enabled

TensorBase = _core.TensorBase
_FLOAT16_NUM = np.dtype(np.float16).num       # (a type-number test: dtype == np.float16 costs ~1 us)

inf = math.inf
nan = math.nan
pi = math.pi
e = math.e


# -- helpers ------------------------------------------------------------------------------------

def _wrap(arr) -> TensorBase:
    arr = np.asarray(arr)
    return _core.wrap_array(arr if arr.flags.c_contiguous else arr.copy(), False)


def _wrap_like(arr, *operands) -> TensorBase:
    """The tensor of an elementwise op's result `arr` computed from `operands` (tensors; numbers
    and None are skipped), laid out as PyTorch's TensorIterator lays it out: in the stride order
    of the operands (the core's _iterator_layout, over the first two tensors' own arrays).  numpy
    drops that order in np.where, a float64 detour, a boolean-mask fill, or with operands of
    different layouts, and _wrap makes it row-major: a transposed, permuted or column-major
    (linalg) input then gave a row-major result, so stride() and .view() differed and
    flatten() / reshape(-1) aliased where PyTorch's copy (SILENT).  Row-major operands (the
    common case) cost the flag tests only."""
    arrays = [x._array for x in operands if isinstance(x, TensorBase)]
    arr = np.asarray(arr)
    if arr.ndim < 2 or all(a.flags.c_contiguous for a in arrays) or not arrays:
        return _wrap(arr)
    # (iterator_layout returns arr itself only when arr is already dense in that order; then it
    # may still be an operand's own memory, which the result must not alias)
    laid = _core._iterator_layout(arr, arrays[0], arrays[1] if len(arrays) > 1 else arrays[0])
    if laid is arr and any(np.may_share_memory(arr, a) for a in arrays):
        laid = np.copy(arr, order="K")
    return _core.wrap_array(laid, False)


def _relaid(result, *operands):
    """`result`, a (possibly recorded) tensor composed of several ops from `operands`, in the
    layout _wrap_like gives the same values: a recorded copy into that layout when the
    composition's last op left another (lerp's `where` follows its condition, made from the
    weight, where PyTorch's lerp kernel follows input)."""
    arrays = [x._array for x in operands if isinstance(x, TensorBase)]
    arr = result._array
    if arr.ndim < 2 or not arrays or all(a.flags.c_contiguous for a in arrays):
        return result if arr.flags.c_contiguous else result.contiguous()
    laid = _core._iterator_layout(arr, arrays[0], arrays[1] if len(arrays) > 1 else arrays[0])
    if laid is arr:
        return result
    from ._more_creation import empty_strided
    copy = empty_strided(tuple(arr.shape), tuple(s // arr.itemsize for s in laid.strides),
                         dtype=result.dtype)
    copy.copy_(result)
    return copy


def _index_tensor(arr) -> TensorBase:
    return _wrap(np.asarray(arr, dtype=np.int64))


def _check_tensor(x, fn: str, arg: str = "input", position: int = 1) -> None:
    if not isinstance(x, TensorBase):
        raise TypeError(f"{fn}(): argument '{arg}' (position {position}) must be Tensor, not "
                        f"{_type_name(x)}")


def _int_argument(value, fn: str, name: str, position: int) -> int:
    """An argument PyTorch's parser takes as an int only (diag's diagonal, kthvalue's k): a
    float or a bool is its TypeError, where int() would have computed with 1.5 as 1."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be int, not "
                        f"{_type_name(value)}")
    return value.__index__()


def _check_tensor_or_number(fn: str, args: tuple, signatures: tuple,
                            first_is_tensor: bool = False) -> None:
    """PyTorch's "invalid combination of arguments" TypeError when an argument of a function
    taking a Tensor or a Number in each place is neither (a numpy array, a list, ...), when no
    argument is a Tensor (every overload takes one: pow(2, 3) is refused, not computed), or,
    with `first_is_tensor`, when the first is not a Tensor."""
    if all(isinstance(a, (TensorBase, numbers.Number)) for a in args) and \
            any(isinstance(a, TensorBase) for a in args) and (
            not first_is_tensor or isinstance(args[0], TensorBase)):
        return
    got = ", ".join("Tensor" if isinstance(a, TensorBase) else _type_name(a) for a in args)
    lines = "".join(f"\n * ({signature})" for signature in signatures)
    raise TypeError(f"{fn}() received an invalid combination of arguments - got ({got}), but "
                    f"expected one of:{lines}\n")


def _dim(dim, ndim: int, fn: str = "", list_item: bool = False) -> int:
    """`dim` normalised for a tensor of `ndim` dims; a 0-d tensor takes dim 0 or -1 (axis 0 of
    its one-element view).  `dim` is read as PyTorch's `int` (_core.int_param: a 0-d integer
    tensor too), or with `list_item` as an element of its `int[]` (flip's, roll's dims:
    _core.symint_param, a one-element integer or bool tensor too); anything else is PyTorch's
    TypeError ("cumsum(): argument 'dim' must be int, not str", under the name of `fn` where
    given: the public entry then says at which position the call gave it), not int()'s
    ValueError."""
    if list_item and _core.symint_param(dim) is not None:
        dim = _core.symint_param(dim)
    axis = _core.normalize_dim(dim, ndim, fn or None)   # PyTorch's IndexError when out of range
    return 0 if ndim == 0 else axis


def _numpy_dim_names(fn):
    """Let fn also take numpy's spelling of its arguments, `axis` for `dim` and `keepdims` for
    `keepdim`, as PyTorch's argument parser accepts them for every op with a `dim`."""
    @functools.wraps(fn)
    def op(*args, **kwargs):
        if kwargs:
            for numpy_name, torch_name in (("axis", "dim"), ("keepdims", "keepdim")):
                if numpy_name in kwargs:
                    if torch_name in kwargs:
                        raise TypeError(f"{fn.__name__}() received an invalid combination of "
                                        f"arguments: both '{torch_name}' and '{numpy_name}' given")
                    kwargs[torch_name] = kwargs.pop(numpy_name)
        return fn(*args, **kwargs)
    return op


def _no_dims(dim) -> None:
    """PyTorch's error for an op that takes a dim of a 0-d tensor as an error (roll, unique)."""
    raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")


def _no_dims_of_scalar(dim, fname: str) -> None:
    """Tensor.size(dim) / stride(dim) of a 0-d tensor: unlike the ops, which read a 0-d tensor
    as one of shape (1,), PyTorch's refuses every dim, after its parser's TypeError for what is
    not an int (size(0) raised a TypeError from a tuple index, size(1) the range error)."""
    try:
        _core.normalize_dim(dim, 1, fname)
    except IndexError:
        pass
    _no_dims(int(dim))


def _check_autograd_dtype(input, out_dtype) -> None:
    """A recorded op cannot produce an integer result (PyTorch's check on dtype=)."""
    if _records(input) and np.dtype(out_dtype).kind not in "fc":
        raise RuntimeError(f"Autograd not support dtype: {_core.scalar_type_name_of(out_dtype)}")


def _records(*tensors) -> bool:
    """True when an op on `tensors` would be recorded (grad mode on, some input requires grad)."""
    return is_grad_enabled() and any(t.requires_grad for t in tensors)


def _dtype_name(arr: np.ndarray) -> str:
    """PyTorch's C++ scalar-type name (Float, Long, ...) used in its dtype error messages."""
    return _core.scalar_type_name_of(arr.dtype)


# -- comparisons --------------------------------------------------------------------------------

def _float_argument(value, fn: str, name: str, position: int) -> float:
    """A `float` argument as PyTorch's parser reads it: a real number, or a zero-dim tensor that
    does not require grad (its value); anything else is its TypeError."""
    if (isinstance(value, TensorBase) and value._array.ndim == 0
            and value._array.dtype.kind != "c" and not value.requires_grad):
        return value.item()
    if isinstance(value, (numbers.Real, np.floating, np.integer)):
        return value
    raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be float, not "
                    f"{_type_name(value)}")


def check_tolerances(rtol: float, atol: float) -> None:
    """isclose's refusal of negative tolerances (assert_close's tensor comparison shares it);
    PyTorch prints the doubles as C++ streams do (%g: -1, not -1.0)."""
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise |input - other| <= atol + rtol * |other| (and exact equality, for infinities)."""
    return close_elements("isclose", input, other, rtol, atol, equal_nan)


def unrounded(values):
    return values


def magnitude(values):
    """|values|; of complex ones as hypot(re, im), PyTorch's std::abs (numpy's complex64 abs
    can be one ulp off it, which shows in assert_close's reported relative difference)."""
    if np.iscomplexobj(values):
        return np.hypot(values.real, values.imag)
    return np.abs(values)


def close_elements(fn: str, input, other, rtol, atol, equal_nan, rounded=unrounded):
    """isclose's mask, for isclose and allclose (`fn` names the caller in errors).

    `rounded` rounds each arithmetic result to the compared dtype when the arrays hold it in a
    wider one (bfloat16 on float32 storage, _bfloat16.py): PyTorch computes the error and the
    allowed error with ops of the tensors' dtype, and rounding moves elements across the
    tolerance."""
    _check_tensor(input, fn)
    _check_tensor(other, fn, "other", 2)
    rtol = _float_argument(rtol, fn, "rtol", 3)
    atol = _float_argument(atol, fn, "atol", 4)
    _core.check_bool(fn, "equal_nan", equal_nan)
    a, b = input._array, other._array
    if a.dtype != b.dtype:
        raise RuntimeError(f"{_dtype_name(a)} did not match {_dtype_name(b)}")
    check_tolerances(rtol, atol)
    _broadcast_shapes(a.shape, b.shape)
    close = a == b
    if equal_nan and a.dtype.kind in "fc":
        close = close | (np.isnan(a) & np.isnan(b))
    if rtol != 0 or atol != 0:
        if a.dtype.kind not in "fc":  # integers and bools are compared in the default float dtype
            default = _core.get_default_dtype().np_dtype
            a, b = a.astype(default), b.astype(default)
        with np.errstate(invalid="ignore", over="ignore"):
            error = rounded(magnitude(a - b))
            allowed = rounded(atol + rounded(magnitude(rtol * b)))
            close = close | (np.isfinite(error) & (error <= allowed))
    return _wrap_like(close, input, other)


def _refuse_if_complex(name, input) -> None:
    """PyTorch's error for an op it does not implement for complex tensors (sort, topk, unique,
    signbit ...: _complex._REFUSED)."""
    if input._array.dtype.kind == "c":
        from ._complex import refuse
        refuse(name, input)


def _broadcast_shapes(sa, sb) -> None:
    """PyTorch's size-mismatch error for shapes that do not broadcast."""
    n = max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + tuple(sa), (1,) * (n - len(sb)) + tuple(sb)
    for i in range(n - 1, -1, -1):
        if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
            raise RuntimeError(f"The size of tensor a ({pa[i]}) must match the size of tensor b "
                               f"({pb[i]}) at non-singleton dimension {i}")


def _check_broadcast(input, other) -> None:
    """_broadcast_shapes for an elementwise op's two operands when both are tensors (a function
    computed on numpy arrays would raise numpy's ValueError, not PyTorch's RuntimeError)."""
    if isinstance(input, TensorBase) and isinstance(other, TensorBase):
        _broadcast_shapes(input._array.shape, other._array.shape)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """True when isclose(input, other, ...) holds everywhere."""
    return bool(close_elements("allclose", input, other, rtol, atol, equal_nan)._array.all())


def equal(input, other) -> bool:
    """True when both tensors have the same shape and the same values (NaN is never equal)."""
    _check_tensor(input, "equal")
    _check_tensor(other, "equal", "other", 2)
    a, b = input._array, other._array
    return a.shape == b.shape and bool(np.array_equal(a, b))


# -- counting and histograms ---------------------------------------------------------------------

def bincount(input, weights=None, minlength=0):
    """Occurrences of each value 0..max(input) of a 1-d non-negative integer tensor (summed
    weights, when given)."""
    _check_tensor(input, "bincount")
    arr = input._array
    if arr.dtype.kind not in "iu":
        name = "Bool" if arr.dtype.kind == "b" else _dtype_name(arr)
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{name}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if arr.ndim != 1 or (arr.size and arr.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None or arr.size == 0:
        # (PyTorch ignores the weights of an empty input: its counts are int64 zeros.)
        return _wrap(np.bincount(arr, minlength=minlength).astype(np.int64))
    w = weights._array
    if w.ndim != 1 or w.shape[0] != arr.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    # PyTorch keeps float32 weights' dtype and counts every other weight dtype in float64.
    # Its loop adds each weight in turn into the output's dtype: float32 sums round at every
    # step (np.bincount's float64 sums, rounded once, differed in the last bits), float64 ones
    # are np.bincount's own sequential loop.
    if w.dtype == np.float32:
        counts = np.zeros(max(int(arr.max()) + 1, minlength), dtype=np.float32)
        np.add.at(counts, arr, w)
    else:
        counts = np.bincount(arr, weights=w.astype(np.float64), minlength=minlength)
    from ._more_math import without_derivative
    return without_derivative((weights,), counts,
                              "derivative for aten::bincount is not implemented", RuntimeError)


def _check_histogram_input(arr, kernel: str) -> None:
    # (PyTorch's histogramdd kernel is built for float and double only; histc and histogram
    # with given edges also take half)
    if arr.dtype.kind != "f" or (kernel == "histogramdd" and arr.dtype == np.float16):
        name = "Bool" if arr.dtype.kind == "b" else _dtype_name(arr)
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{name}'")


def _finite_range(lo, hi, fn: str):
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"{fn}: range of [{_c_float(lo)}, {_c_float(hi)}] is not finite")


def _c_float(v) -> str:
    # PyTorch formats the bounds as a C++ stream prints a double: 6 significant digits
    return "%g" % float(v)


def histc(input, bins=100, min=0, max=0):  # noqa: A002  (PyTorch's parameter names)
    """Histogram of all elements in `bins` equal bins over [min, max] (the data's range when both
    are 0); elements outside are ignored.  Same dtype as input."""
    _check_tensor(input, "histc")
    arr = input._array
    # PyTorch checks the arguments before the dtype: bins, then an explicit reversed range
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    # (PyTorch makes the bin edges with linspace in the input's dtype before the histogram
    # kernel runs, and linspace has no bool kernel)
    _check_histogram_input(arr, "linspace_cpu" if arr.dtype.kind == "b" else "histogram_cpu")
    flat = arr.reshape(-1)
    if lo == hi and flat.size:
        lo, hi = float(flat.min()), float(flat.max())
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    dt = arr.dtype.type
    if lo == hi:
        # widened by at least one representable step of a float32/float64 input (at least 1,
        # as for the other dtypes): a range at the dtype's extremes stays a range
        if arr.dtype in (np.float32, np.float64):
            info = np.finfo(arr.dtype)
            lo = builtins.min(float(np.nextafter(dt(lo), info.min)), lo - 1)
            hi = builtins.max(float(np.nextafter(dt(hi), info.max)), hi + 1)
        else:
            lo, hi = lo - 1, hi + 1
    _finite_range(lo, hi, "torch.histc")
    lo_t, hi_t = dt(lo), dt(hi)
    with np.errstate(over="ignore"):
        width = hi_t - lo_t
    # (a range wider than the dtype's largest value makes PyTorch's last bin edge, linspace's
    # max - 0 * inf, NaN: no element lies inside it)
    inside = flat[(flat >= lo_t) & (flat <= hi_t)] if np.isfinite(width) else flat[:0]
    # PyTorch's arithmetic, in the input's dtype: bin = (x - min) * bins / (max - min), with x ==
    # max counted in the last bin.  Where that overflows or is 0/0 (a range at the dtype's
    # extremes), PyTorch's integer conversion of inf/NaN lands in the first bin.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        position = (inside - lo_t) * dt(bins) / width
    pos = np.where(np.isfinite(position), position, 0).astype(np.int64)
    pos = np.minimum(pos, bins - 1)
    return _wrap(np.bincount(pos, minlength=bins).astype(arr.dtype))


def _check_weight(arr, weight, sample_shape):
    """The weights as a flat array (None without), checked as PyTorch's histogramdd checks them."""
    if weight is None:
        return None
    w = weight._array
    if w.dtype != arr.dtype:
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and "
                           f"weight tensor should have the same dtype, but got "
                           f"input({_c_type(arr)}), and weight({_c_type(w)})")
    if w.shape != sample_shape:
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have "
                           f"the same shape as the input tensor excluding its innermost "
                           f"dimension, but got input with shape {list(arr.shape)} and "
                           f"weight with shape {list(w.shape)}")
    return w.reshape(-1)


def _dimension_edges(column, bins, bounds, dim: int, check_order: bool):
    """The bin edges of one dimension: the given 1-d tensor of edges, or `bins` equal bins over
    `bounds` (None: the column's range, [0, 1] for no data; an empty range widens by 0.5 each
    way), made by
    linspace in the input's dtype as PyTorch makes them."""
    if isinstance(bins, TensorBase):
        edges = _edges_of_dtype(column, bins, dim)
        if check_order and np.any(np.diff(edges) < 0):
            raise RuntimeError("torch.histogramdd(): bin edges must be non-decreasing")
        return edges
    bins, lo, hi = _bin_count(bins, bounds, dim)
    if bounds is None:
        lo, hi = (float(column.min()), float(column.max())) if column.size else (0.0, 1.0)
        _finite_bounds(lo, hi, dim)     # ([0, 1]: PyTorch's range for no data)
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    from .creation import linspace
    return linspace(lo, hi, bins + 1, dtype=_core.np_dtype_to_dtype(column.dtype))._array


def _edges_of_dtype(column, bins, dim: int):
    """The given bin edges' array, of the input's dtype (PyTorch converts neither), 1-d with
    at least one bin: PyTorch checks these before the input's dtype has a kernel (surface
    60782133: an integer input with one edge is the bin count's error)."""
    edges = bins._array
    if edges.dtype != column.dtype:
        raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the "
                           f"same dtype, but got input with dtype {_c_type(column)} and bins "
                           f"for dimension {dim} with dtype {_c_type(edges)}")
    if edges.ndim != 1:
        raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got "
                           f"{edges.ndim} dimensions in the bins tensor for dimension {dim}")
    if edges.size == 0:
        raise RuntimeError(f"torch.histogramdd: bins tensor should have at least 1 element, but "
                           f"got 0 elements in the bins tensor for dimension {dim}")
    if edges.size == 1:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got 0 for dimension {dim}")
    return edges


def _bin_count(bins, bounds, dim: int):
    """(bins, lo, hi): a dimension's bin count and given range (None, None without), checked as
    PyTorch checks them, the count first."""
    bins = int(bins)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension "
                           f"{dim}")
    if bounds is None:
        return bins, None, None
    lo, hi = float(bounds[0]), float(bounds[1])
    _finite_bounds(lo, hi, dim)
    if lo > hi:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                           f"{lo:g} max {hi:g} for dimension {dim}")
    return bins, lo, hi


def _finite_bounds(lo: float, hi: float, dim: int) -> None:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histogramdd: dimension {dim}'s range [{lo:g}, {hi:g}] is "
                           "not finite")


def _bin_counts(samples, edges_per_dim, weights, density: bool):
    """The histogram of the rows of `samples` (N, D) over the given edges: bin i of a dimension
    holds edges[i] <= x < edges[i+1], its last bin also x == its right edge; points outside are
    dropped.  Counts (or summed weights) in the samples' dtype; density divides by the total
    and the bin volumes."""
    if not edges_per_dim:
        # (points of no dimensions: PyTorch's kernel leaves its 0-d histogram at zero, which
        # density divides by its zero total)
        return np.full((), np.nan if density else 0, dtype=samples.dtype)
    shape = tuple(e.size - 1 for e in edges_per_dim)
    bins = _core._histogram_bins_c(samples, list(edges_per_dim))
    if bins is not None:                # (one C pass: order_kernels.c)
        keep = bins >= 0
        flat = bins[keep]
    else:
        keep = np.ones(samples.shape[0], dtype=bool)
        for d, edges in enumerate(edges_per_dim):
            keep &= (samples[:, d] >= edges[0]) & (samples[:, d] <= edges[-1])
        positions = [np.minimum(np.searchsorted(edges, samples[keep, d], side="right") - 1,
                                n - 1)
                     for d, (edges, n) in enumerate(zip(edges_per_dim, shape))]
        flat = np.ravel_multi_index(positions, shape) if positions else np.zeros(0, np.int64)
    kept_w = None if weights is None else weights[keep]
    hist = _summed_in_kernel_order(samples.shape[0], np.flatnonzero(keep), flat, kept_w,
                                   int(np.prod(shape)), samples.dtype).reshape(shape)
    if density:
        # PyTorch divides in the input's dtype: by the total (its sum, read as a number), then
        # by each dimension's bin widths in turn (one float64 division rounded once differed
        # in the last bits)
        total = samples.dtype.type(float(_wrap(hist).sum().item()))
        with np.errstate(invalid="ignore", divide="ignore"):   # nothing counted: NaN, as torch
            hist = hist / total
            for d, edges in enumerate(edges_per_dim):
                hist = hist / np.diff(edges).reshape([-1 if k == d else 1
                                                      for k in builtins.range(len(shape))])
    return hist


# at::parallel_for's grain for the histogram kernel (HISTOGRAM_GRAIN_SIZE in ATen)
_HISTOGRAM_GRAIN = 200


def _summed_in_kernel_order(n_samples: int, sample_at, bin_of, weights, n_bins: int, dtype):
    """The bin totals PyTorch's histogramdd kernel computes, bit for bit: at::parallel_for
    splits the samples into one contiguous chunk per thread (when there are more than its
    grain), each thread adds its samples' weights (or ones) into its own histogram one at a time
    in the input's dtype, and the thread histograms are then summed in thread order.
    `sample_at` are the indices of the counted samples (in order), `bin_of` their flat bins."""
    from ._threads import get_num_threads
    tasks = 1 if n_samples <= _HISTOGRAM_GRAIN else \
        max(1, min(get_num_threads(), -(-n_samples // _HISTOGRAM_GRAIN)))
    chunk = -(-n_samples // tasks) if n_samples else 1
    if weights is None and n_samples < 2 ** 24 and np.dtype(dtype).itemsize >= 4:
        # counts below 2^24 are exact in float32 and float64 however they are added up
        return np.bincount(bin_of, minlength=n_bins).astype(dtype)
    total = np.zeros(n_bins, dtype=dtype)
    ones = np.ones(len(bin_of), dtype=dtype) if weights is None else weights
    bounds = np.searchsorted(sample_at, np.arange(tasks + 1) * chunk)
    for t in builtins.range(tasks):
        part = np.zeros(n_bins, dtype=dtype)
        np.add.at(part, bin_of[bounds[t]:bounds[t + 1]], ones[bounds[t]:bounds[t + 1]])
        total += part
    return total


# PyTorch's signatures of histogram, which its parser lists for a call that fits none
_HISTOGRAM_SIGNATURES = (
    " * (Tensor input, Tensor bins, *, Tensor weight = None, bool density = False, tuple of "
    "Tensors out = None)\n * (Tensor input, int bins = 100, *, tuple of floats range = None, "
    "Tensor weight = None, bool density = False, tuple of Tensors out = None)\n")


def histogram(input, bins=100, *, range=None, weight=None, density=False):  # noqa: A002
    """(hist, bin_edges) of all elements: `bins` equal bins over `range` (default: the data's
    range), or the given increasing bin edges (a 1-d tensor)."""
    _check_tensor(input, "histogram")
    _core.check_bool("histogram", "density", density, 0, _HISTOGRAM_SIGNATURES)
    arr = input._array
    # PyTorch checks a bin count and its range before the dtype; given edges, their dtype
    if isinstance(bins, TensorBase):
        if range is not None:
            # (its overload taking edges has no range: the parser's refusal)
            raise TypeError("histogram() received an invalid combination of arguments - got "
                            "(Tensor, Tensor, range=tuple), but expected one of:\n"
                            + _HISTOGRAM_SIGNATURES)
        _edges_of_dtype(arr, bins, 0)
        _check_histogram_input(arr, "histogram_cpu")
    else:
        _bin_count(bins, range, 0)
        _check_histogram_input(arr, "histogramdd")
    flat = arr.reshape(-1)
    # (PyTorch's histogram is histogramdd of the (N, 1) samples, weighted by the flat weight:
    # any weight with one value per element)
    w = _check_weight(flat.reshape(-1, 1), None if weight is None else weight.reshape(-1),
                      flat.shape)
    edges = _dimension_edges(flat, bins, range, 0, check_order=True)
    hist = _bin_counts(flat.reshape(-1, 1), [edges], w, density)
    # in the graph when input, weight or the edges require grad, with no derivative (PyTorch's)
    from ._more_math import without_derivative
    sources, message = (input, weight, bins), "derivative for aten::histogram is not implemented"
    return _core.return_types.histogram((without_derivative(sources, hist, message, RuntimeError),
                                         without_derivative(sources, edges, message, RuntimeError)))


def histogramdd(input, bins, *, range=None, weight=None, density=False):  # noqa: A002
    """The D-dimensional histogram of the points in the rows of `input` (..., D): `bins` is a
    count for every dimension, one count per dimension, or one 1-d tensor of edges per
    dimension; `range` is [min0, max0, min1, max1, ...] (default: the data's ranges); `weight`
    (input.shape[:-1]) weights each point.  Returns (hist, bin_edges), hist of shape
    (bins0, bins1, ...) and bin_edges a tuple of D tensors.

    Examples
    --------
    >>> x = tapegrad.tensor([[0., 1.], [1., 0.], [2., 0.], [2., 2.]])
    >>> tapegrad.histogramdd(x, bins=[2, 2]).hist
    tensor([[0., 1.],
            [2., 1.]])
    """
    _check_tensor(input, "histogramdd")
    _core.check_bool("histogramdd", "density", density, 0, _HISTOGRAM_SIGNATURES.replace(
        "histogram", "histogramdd"))
    arr = input._array
    if arr.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    _check_histogram_input(arr, "histogramdd")
    n_dims = arr.shape[-1]
    samples = arr.reshape(int(np.prod(arr.shape[:-1])), n_dims)
    w = _check_weight(arr, weight, arr.shape[:-1])
    if isinstance(bins, (int, np.integer)):
        bins = [int(bins)] * n_dims
    bins = list(bins)
    if len(bins) != n_dims:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    if range is not None:
        range = [float(v) for v in range]
        if len(range) != 2 * n_dims:
            raise RuntimeError(f"torch.histogramdd: for a {n_dims}-dimensional histogram range "
                               f"should have {2 * n_dims} elements, but got {len(range)}")
    edges = [_dimension_edges(samples[:, d], bins[d],
                              None if range is None else range[2 * d:2 * d + 2], d,
                              check_order=False)
             for d in builtins.range(n_dims)]
    hist = _bin_counts(samples, edges, w, density)
    # in the graph when input or weight requires grad, with no derivative (PyTorch's); edges
    # computed from bin counts too, given edges not
    from ._more_math import without_derivative
    counted = all(isinstance(b, (int, np.integer)) for b in bins)
    sources = (input, weight)
    hist = without_derivative(sources, hist, "derivative for aten::_histogramdd_from_bin_%s is "
                              "not implemented" % ("cts" if counted else "tensors"), RuntimeError)
    edges = tuple(without_derivative(sources if counted else (), e, "derivative for "
                                     "aten::_histogramdd_bin_edges is not implemented",
                                     RuntimeError) for e in edges)
    return _core.return_types.histogramdd((hist, edges))


def _c_type(arr) -> str:
    return _core.c_type_name_of(arr.dtype)


# -- unique ---------------------------------------------------------------------------------------

def _check_unique_dim_of_empty(shape, axis):
    """PyTorch's refusals of unique along a dim of an empty tensor: the zero-size dim must be the
    one selected, and there may be only one."""
    if 0 not in shape:
        return
    if shape[axis] != 0:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")
    if shape.count(0) > 1:
        raise RuntimeError("Number of zero sized dimensions is more than one, so unique cannot "
                           "be applied ")


def _unique_integers(arr: np.ndarray, inverse: bool, counts: bool):
    """np.unique(arr.reshape(-1), return_inverse=True, return_counts=True) of integers or bools,
    computing only what is asked for (None for the others): a sort, or an argsort for the inverse
    (equal integers are equal bits, so the order among them changes nothing).  np.unique always
    argsorted, 4x the plain sort for 1000 labels."""
    flat = arr.reshape(-1)
    if inverse:
        order = flat.argsort(kind="stable")
        ordered = flat[order]
    else:
        ordered = np.sort(flat)
    first = np.empty(ordered.shape, dtype=np.bool_)     # each value's first place in the order
    if ordered.size:
        first[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    where_inverse = where_counts = None
    if inverse:
        where_inverse = np.empty(flat.shape, dtype=np.intp)
        where_inverse[order] = np.cumsum(first) - 1
        where_inverse = where_inverse.reshape(arr.shape)
    if counts:
        where_counts = np.diff(np.append(np.flatnonzero(first), ordered.size))
    return ordered[first], where_inverse, where_counts


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values (sorted; along `dim`, the distinct slices), optionally with the inverse
    indices and the counts.  NaNs are all distinct, as in PyTorch."""
    _check_tensor(input, "unique")
    # (PyTorch's Python unique passes them by keyword to _unique2, or to unique_dim with a dim)
    for name, flag in (("sorted", sorted), ("return_inverse", return_inverse),
                       ("return_counts", return_counts)):
        _core.check_bool("_unique2" if dim is None else "unique_dim", name, flag)
    _refuse_if_complex("unique" if dim is None else "unique_dim", input)
    arr = input._array
    if dim is None and arr.dtype.kind in "biu":
        values, inverse, counts = _unique_integers(arr, return_inverse, return_counts)
    elif dim is None:
        values, inverse, counts = np.unique(arr.reshape(-1), return_inverse=True,
                                            return_counts=True, equal_nan=False)
        inverse = inverse.reshape(arr.shape)
    else:
        if arr.ndim == 0:
            _no_dims(dim)
        axis = _dim(dim, arr.ndim)
        _check_unique_dim_of_empty(arr.shape, axis)
        values, inverse, counts = np.unique(arr, return_inverse=True, return_counts=True,
                                            axis=axis, equal_nan=False)
        inverse = inverse.reshape(-1)
    from ._more_math import without_derivative
    out = without_derivative((input,), values, "the derivative for '%s' is not implemented."
                             % ("_unique2" if dim is None else "unique_dim"),
                             node="Unique2Backward0" if dim is None else "UniqueDimBackward0")
    if not (return_inverse or return_counts):
        return out
    result = [out]
    if return_inverse:
        result.append(_index_tensor(inverse))
    if return_counts:
        result.append(_index_tensor(counts))
    return tuple(result)


# -- sorting ---------------------------------------------------------------------------------------

def _sort_order(arr: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable sort indices along `axis`, NaN last ascending and first descending (PyTorch's
    order; ties keep their input order both ways)."""
    if not descending:
        return arr.argsort(axis=axis, kind="stable")
    # Stable descending: sort the reversed array ascending, then read that order backwards.
    backwards = (slice(None),) * axis + (slice(None, None, -1),)
    order = arr[backwards].argsort(axis=axis, kind="stable")
    return (arr.shape[axis] - 1) - order[backwards]


def _unstable_sort_order(arr: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """The order of PyTorch's sort with stable=False along `axis`: std::sort's among ties
    (_stl_order), except where PyTorch sorts by fbgemm's radix sort, which is stable: a 1-d
    integer tensor, ascending, of at least GRAIN_SIZE (32768) elements."""
    if (arr.ndim == 1 and arr.dtype.kind in "iu" and not descending
            and arr.shape[0] >= 32768) or arr.ndim == 0 or arr.size == 0:
        return _sort_order(arr, axis, descending)
    from ._stl_order import sort_order
    rows = np.moveaxis(arr, axis, -1)
    shape = rows.shape
    rows = rows.reshape(-1, shape[-1])
    order = sort_order(rows, _sort_order(rows, 1, descending), descending)
    return np.moveaxis(order.reshape(shape), -1, axis)


def values_at(input, dim: int, indices: TensorBase, keepdim: bool = True):
    """input's values at `indices` along dim (an int64 tensor of input's shape but along dim,
    without that dim unless keepdim), differentiable: the values of sort, topk, kthvalue and
    median, with dim kept.  An advanced index, not a gather: PyTorch's backward of those saves
    only the indices, so an in-place write to input after them must not fail their backward
    (gather's record guards its input's version).  `indices` is the tensor the op returns: the
    record saves it (_save_index_of), so writing it in place raises at backward, as PyTorch's;
    before, the record kept a copy, and the write went unnoticed."""
    positions = indices._array if keepdim else np.expand_dims(indices._array, dim)
    if input.ndim == 0:
        return input.clone()
    if not (input.requires_grad and is_grad_enabled()):
        # nothing to record: the values straight from the array (the index route below costs
        # ~10x the sort itself on small inputs)
        from ._ops_shape import _values_at_positions
        return _wrap(_values_at_positions(input._array, positions, dim))
    grid = list(np.indices(positions.shape, sparse=True))
    grid[dim] = positions
    values = input[tuple(grid)]
    _core._save_index_of(values, indices)
    return values


def _sort_overloads(fn):
    """PyTorch's two signatures of sort and argsort: (input, *, bool stable, int dim=-1,
    bool descending=False) and (input, int dim=-1, bool descending=False). Given stable, dim
    and descending are keywords too; dim is an int (not a bool), descending a bool, stable a
    bool (sort's may be None). A call that fits neither is PyTorch's TypeError, not a sort
    along dim 0 (positional dim beside stable=) or with a truthy non-bool."""
    name = fn.__name__
    signatures = (f"\n * (Tensor input, *, bool stable, int dim = -1, bool descending = False, "
                  f"{'tuple of Tensors' if name == 'sort' else 'Tensor'} out = None)\n"
                  f" * (Tensor input, int dim = -1, bool descending = False)\n")

    @functools.wraps(fn)
    def op(input, *args, **kwargs):
        named = dict(zip(("dim", "descending"), args), **kwargs)
        dim = named.get("dim", -1)
        stable = kwargs.get("stable", False)
        if (("stable" in kwargs and args)
                or isinstance(dim, (bool, np.bool_)) or not hasattr(dim, "__index__")
                or not isinstance(named.get("descending", False), bool)
                or not (isinstance(stable, bool) or (stable is None and name == "sort"))):
            from .tensor import invalid_arguments
            raise invalid_arguments(name, (input,) + args, kwargs, signatures)
        result = fn(input, *args, **kwargs)
        if name == "sort" and "stable" in kwargs:
            # a call passing stable= is PyTorch's sort.stable overload, whose node is
            # SortBackward1 (whatever the value)
            _core._name_grad_fn(result.values, "SortBackward1")
        return result
    return op


@_sort_overloads
@_numpy_dim_names
def sort(input, dim=-1, descending=False, *, stable=False):
    """(values, indices) of input sorted along dim (stably: equal values keep their order)."""
    _check_tensor(input, "sort")
    _refuse_if_complex("sort", input)
    d = _dim(dim, input.ndim)
    layout = preserved_order(input)
    if layout is not None:          # PyTorch's values and indices keep the input's layout
        back = inverse(layout)
        values, indices = sort(input.permute(*layout), dim=layout.index(d),
                               descending=descending, stable=stable)
        return _core.return_types.sort((_core._name_grad_fn(values.permute(*back), "SortBackward0"),
                                        indices.permute(*back)))
    arr = input._array.reshape(input._array.shape or (1,))
    if stable:
        order = _sort_order(arr, d, bool(descending))
    else:
        order = _unstable_sort_order(arr, d, bool(descending))
    order = order.reshape(input._array.shape)
    indices = _index_tensor(order)
    values = _core._name_grad_fn(values_at(input, d, indices), "SortBackward0")
    return _core.return_types.sort((values, indices))


@_sort_overloads
@_numpy_dim_names
def argsort(input, dim=-1, descending=False, *, stable=False):
    """The indices that sort input along dim (stably)."""
    _check_tensor(input, "argsort")
    return sort(input, dim=dim, descending=descending, stable=stable)[1]


def _topk_positions(arr: np.ndarray, d: int, k: int, largest: bool, sorted_: bool) -> np.ndarray:
    """The positions along d of the k elements PyTorch's CPU topk returns, in its order (its
    choice among ties, and its order with sorted=False: _stl_order)."""
    from ._stl_order import topk_order, topk_order_c
    rows = np.moveaxis(arr, d, -1)
    shape = rows.shape
    rows = rows.reshape(math.prod(shape[:-1]), shape[-1])     # (-1 is ambiguous when empty)
    order = topk_order_c(rows, k, largest, sorted_)
    if order is None:
        # topk_order reads the stable order's first k + 1 (the k and the one that may tie with
        # them)
        order = topk_order(rows, _stable_head(rows, min(k + 1, shape[-1]), largest), k, largest,
                           sorted_)
    return np.moveaxis(order.reshape(shape[:-1] + (k,)), -1, d)


def _stable_head(rows: np.ndarray, k: int, largest: bool) -> np.ndarray:
    """The first k columns of _sort_order(rows, 1, largest) for the (m, n) rows, in O(n) per row
    where k is small: a partition picks each row's k best, and only they are sorted (stably, by
    index first, so equal values keep their index order as in the stable order).  The partition
    is free to pick any of several elements equal to the k-th best value t; a row where it left
    one out (more elements equal t than it picked) takes those better than t and the first (by
    index) of those equal to t instead.  NaN is the largest value."""
    m, n = rows.shape
    if k * 8 >= n or n <= 64:       # a partition and its masks cost more than a short sort
        return _sort_order(rows, 1, largest)[:, :k]
    kth = n - k if largest else k - 1
    part = np.argpartition(rows, kth, axis=1)
    head = part[:, kth:] if largest else part[:, :k]
    t = np.take_along_axis(rows, part[:, kth, None], 1)
    equal = rows == t
    picked = np.take_along_axis(rows, head, 1) == t
    t_nan = np.isnan(t) if rows.dtype.kind == "f" else None
    if t_nan is not None and t_nan.any():        # NaNs are equal in PyTorch's order
        equal |= np.isnan(rows) & t_nan
        picked |= np.isnan(np.take_along_axis(rows, head, 1)) & t_nan
    # (one total count first: the per-row counts cost more than the rest together)
    if np.count_nonzero(equal) != np.count_nonzero(picked):
        left_out = np.flatnonzero(np.count_nonzero(equal, axis=1) !=
                                  np.count_nonzero(picked, axis=1))
        sub, sub_t, sub_equal = rows[left_out], t[left_out], equal[left_out]
        better = sub > sub_t if largest else sub < sub_t
        if t_nan is not None:
            nan, sub_t_nan = np.isnan(sub), t_nan[left_out]
            better |= (nan & ~sub_t_nan) if largest else (sub_t_nan & ~nan)
        need = k - np.count_nonzero(better, axis=1)[:, None]
        chosen = better | (sub_equal & (np.cumsum(sub_equal, axis=1) <= need))
        head = head.copy()
        head[left_out] = np.nonzero(chosen)[1].reshape(len(left_out), k)
    head = np.sort(head, axis=1)
    return np.take_along_axis(head, _sort_order(np.take_along_axis(rows, head, 1), 1, largest),
                              1)


@_numpy_dim_names
def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    """(values, indices) of the k largest (smallest) elements along dim, largest first."""
    _check_tensor(input, "topk")
    _core.check_bool("topk", "largest", largest)
    _core.check_bool("topk", "sorted", sorted)
    _refuse_if_complex("topk", input)
    if input._array.dtype == np.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    if not hasattr(k, "__index__"):
        raise TypeError(f"topk(): argument 'k' must be int, not {_type_name(k)}")
    d = _dim(dim, input.ndim, "topk")
    arr = input._array.reshape(input._array.shape or (1,))
    if k < 0 or k > arr.shape[d]:
        raise RuntimeError("selected index k out of range")
    order = _topk_positions(arr, d, k, bool(largest), bool(sorted))
    if input.ndim == 0:         # PyTorch returns the element and index 0 for k = 0 and 1 alike
        order = np.zeros((), dtype=np.int64)
    indices = _index_tensor(order)
    values = _core._name_grad_fn(values_at(input, d, indices), "TopkBackward0")
    return _core.return_types.topk((values, indices))


# -- cumulative sums and products ------------------------------------------------------------------

def _cumulative_dtype(arr: np.ndarray, dtype, fn: str = None):
    """The result dtype (integers and bools accumulate to int64) and the accumulator dtype
    (PyTorch's CPU acc_type: float32 accumulates in float64, complex64 in complex128, float16
    in float32)."""
    if dtype is not None:
        out = np.dtype(_core.np_dtype_of(dtype, fn))
    elif arr.dtype.kind in "biu":
        out = np.dtype(np.int64)
    else:
        out = arr.dtype
    return out, _ACCUMULATOR.get(out, out)


_ACCUMULATOR = {np.dtype(np.float16): np.dtype(np.float32), np.dtype(np.float32): np.dtype(np.float64),
                np.dtype(np.complex64): np.dtype(np.complex128)}


def _cumulative_array(running, arr: np.ndarray, axis: int, dtype=None) -> np.ndarray:
    """running (cumsum or cumprod: the numpy function or ndarray method) along axis at PyTorch's
    accumulator precision.  A float running sum gets + 0 on each value: PyTorch's starts from
    +0, numpy's from the first element, so a leading run of -0 stays -0 in numpy's and is +0 in
    PyTorch's (adding +0 changes no other value)."""
    out, acc = _cumulative_dtype(arr, dtype)
    if arr.ndim == 0:
        return arr.astype(out)
    product = running is np.ndarray.cumprod or running is np.cumprod
    if out == arr.dtype:
        # float32 / float64 in a C loop (None for the other dtypes and layouts: numpy's below)
        fast = _core._running(arr, axis, product)
        if fast is not None:
            return fast
    with _core.IeeeResults():               # a float16 total beyond 65504 is inf
        result = running(arr.astype(acc, copy=False), axis=axis).astype(out, copy=False)
    if not product and result.dtype.kind in "fc":
        np.add(result, 0.0, out=result)
    return result


def _check_running_bool(input, dt: np.dtype, kernel: str) -> None:
    """PyTorch's running sum and product kernels have no bool instance; a 0-d input (copied)
    and an empty one (nothing to run) never reach the kernel, so they take a bool dtype."""
    if input.ndim and input._array.size:
        from .creation import _check_not_bool
        _check_not_bool(dt, kernel)


def _running_in_place(self, name: str, args, kwargs) -> tuple:
    """(kwargs, args) of self.cumsum_ / cumprod_ computing in self's dtype: PyTorch's in-place
    form is the out= kernel with self as out, whose dtype is the result's (an int8 self sums in
    int8, a bool one reaches the kernel with no bool instance); a dtype= of another dtype is
    refused after the dim is checked (it was silently ignored: the sum ran in self's dtype)."""
    dim = args[0] if args else kwargs.get("dim")
    dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
    if isinstance(dim, int):
        _dim(dim, self.ndim, name)
    own = self._array.dtype
    if dtype is not None and _core.np_dtype_of(dtype, name) != own:
        raise RuntimeError(f"Bad in-place call: input tensor dtype {_core.c_type_name_of(own)} "
                           f"and output tensor dtype "
                           f"{_core.c_type_name_of(_core.np_dtype_of(dtype, name))} should match")
    kwargs = {k: v for k, v in kwargs.items() if k != "dtype"}
    return dict(kwargs, dtype=self.dtype), tuple(args[:1])


def _cumsum_array(arr: np.ndarray, axis: int, dtype=None) -> np.ndarray:
    return _cumulative_array(np.ndarray.cumsum, arr, axis, dtype)


@_numpy_dim_names
def cumsum(input, dim, *, dtype=None):
    """Running sums along dim (integers and bools sum to int64)."""
    _check_tensor(input, "cumsum")
    d = _dim(dim, input.ndim, "cumsum")
    if dtype is not None:
        _check_running_bool(input, _core.np_dtype_of(dtype, "cumsum"), "cumsum_out_cpu")
        _check_autograd_dtype(input, _core.np_dtype_of(dtype, "cumsum"))
    if dtype is not None and _records(input):
        input = input.to(dtype)
    if _records(input):
        from ._extra_functions import Cumsum
        return Cumsum.apply(input, d)
    return _wrap(_cumsum_array(input._array, d, dtype))


@_numpy_dim_names
def cumprod(input, dim, *, dtype=None):
    """Running products along dim (integers and bools multiply to int64)."""
    _check_tensor(input, "cumprod")
    d = _dim(dim, input.ndim, "cumprod")
    out, _ = _cumulative_dtype(input._array, dtype, "cumprod")
    if dtype is not None:
        _check_running_bool(input, out, "cumprod_out_cpu")
        _check_autograd_dtype(input, out)
    if not _records(input):
        return _wrap(_cumulative_array(np.ndarray.cumprod, input._array, d, dtype))
    if input.ndim == 0 or input.shape[d] == 0:      # (numpy has no running product of a 0-d array)
        result = input.to(_core.np_dtype_to_dtype(out)) * 1
    else:
        from ._extra_functions import Cumprod
        result = Cumprod.apply(input.to(_core.np_dtype_to_dtype(out)), d)
    # PyTorch's CumprodBackward saves self and the result: a write into either raises (a 0-d or
    # empty one's too: fuzz surface 60729782)
    _core._guard_saved_version(result, input, result)
    return result


# -- logarithms ------------------------------------------------------------------------------------

def _log_values(ufunc, arr: np.ndarray) -> np.ndarray:
    """log to a fixed base computed in float64 and rounded to the result dtype (integers and
    bools give the default float dtype, read at each call): closer to PyTorch's float32 values
    than float32 arithmetic."""
    out = arr.dtype if arr.dtype.kind == "f" else _core.get_default_dtype().np_dtype
    with np.errstate(divide="ignore", invalid="ignore"):
        return ufunc(arr.astype(np.float64)).astype(out)


def log10(input):
    """Base-10 logarithm, elementwise (integers give the default float dtype)."""
    _check_tensor(input, "log10")
    if input._array.dtype.kind == "c":
        from ._complex import dispatch
        return dispatch("log10", input)
    if _records(input):
        from ._extra_functions import Log10
        return Log10.apply(input)
    return _wrap_like(_log_values(np.log10, input._array), input)


def log2(input):
    """Base-2 logarithm, elementwise (integers give the default float dtype)."""
    _check_tensor(input, "log2")
    if input._array.dtype.kind == "c":
        from ._complex import dispatch
        return dispatch("log2", input)
    if _records(input):
        from ._extra_functions import Log2
        return Log2.apply(input)
    return _wrap_like(_log_values(np.log2, input._array), input)


# -- tangent and inverse hyperbolic functions ------------------------------------------------------

def _unary_float(name: str, ufunc, input):
    """`ufunc` of input's values in float64, rounded to input's float dtype (integers and bools
    give the default float dtype); recorded through the Function of the same name when input records.  Complex
    input: _complex.py's op of that name."""
    _check_tensor(input, name)
    if input._array.dtype.kind == "c":
        from ._complex import dispatch
        return dispatch(name, input)
    if _records(input):
        from . import _extra_functions
        return getattr(_extra_functions, name.capitalize()).apply(input)
    return _wrap_like(_log_values(ufunc, input._array), input)


def tan(input):
    """Tangent, elementwise."""
    return _unary_float("tan", np.tan, input)


def asinh(input):
    """Inverse hyperbolic sine, elementwise."""
    return _unary_float("asinh", np.arcsinh, input)


def acosh(input):
    """Inverse hyperbolic cosine, elementwise (nan below 1)."""
    return _unary_float("acosh", np.arccosh, input)


def atanh(input):
    """Inverse hyperbolic tangent, elementwise (nan outside [-1, 1], infinite at +-1)."""
    return _unary_float("atanh", np.arctanh, input)


arcsinh, arccosh, arctanh = asinh, acosh, atanh


# -- aliases and rounding division -----------------------------------------------------------------

def _number_first(input, other) -> bool:
    """Whether an alias of div / mul / sub got (Number, Tensor) or two Numbers, which PyTorch's
    aliases take as div / mul / sub do (true_divide(2.0, x) is div(2.0, x); multiply(2, 3) is
    mul(2, 3))."""
    number = (int, float, bool, complex, np.number, np.bool_)
    return (isinstance(other, (TensorBase,) + number) and not isinstance(input, TensorBase)
            and isinstance(input, number))


def divide(input, other, *, rounding_mode=None):
    """input / other; rounding_mode 'trunc' rounds toward zero, 'floor' down (integer inputs
    keep an integer result, as PyTorch's div)."""
    if rounding_mode is None and _number_first(input, other):
        return _core.div(input, other)
    if _number_first(input, other):
        # a number dividend (div(1.5, t, rounding_mode=...)): as a zero-dim tensor of the
        # promoted dtype, which gives the number's promotion to any other operand; an int wraps
        # into a narrower integer dtype as PyTorch's wrapped numbers do (300 into int8 is 44)
        promoted = np.dtype(_core.np_dtype_of(_core.result_type(input, other)))
        input = _wrap(np.asarray(input).astype(promoted))
    _check_tensor(input, "divide")
    if rounding_mode is None:
        return input.div(other)
    if rounding_mode in ("floor", "trunc"):
        promoted = _core.result_type(input, other)
        # (no complex kernel: rounding a complex is undefined; none for bool either)
        if promoted.is_complex or promoted.np_dtype == np.bool_:
            raise NotImplementedError(
                f"\"div_{rounding_mode}_cpu\" not implemented for "
                f"'{_core.scalar_type_name_of(promoted.np_dtype)}'")
    if rounding_mode in ("floor", "trunc") and _records(
            input, *([other] if isinstance(other, TensorBase) else [])):
        # the unrecorded values with PyTorch's zero gradient (floor_divide records none)
        from ._extra_functions import RoundedDivide
        return RoundedDivide.apply(input, other, rounding_mode)
    if rounding_mode == "floor":
        return input.floor_divide(other)
    if rounding_mode != "trunc":
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                           f"found '{rounding_mode}'")
    other_arr = other._array if isinstance(other, TensorBase) else other
    # PyTorch's promotion (a Python int keeps an integer tensor's dtype; a float makes it float)
    out_dtype = np.dtype(_core.np_dtype_of(_core.result_type(input, other)))
    if out_dtype.num == _FLOAT16_NUM and (not isinstance(other, TensorBase) or other.dim() == 0):
        # PyTorch's float16 div_trunc with a CPU scalar divisor (a number or a 0-d tensor):
        # the divisor read at float32, the quotient truncated in float32 and rounded once
        # (_core's half_scalar_read); the float16 quotient rounded first (44.1 / 0.1 to 441.0,
        # PyTorch's 440).  A float32 dividend reads the divisor so: a 0-d operand takes its dtype.
        return input.to(_core.float16).float().div(other).trunc().to(_core.float16)
    if out_dtype.kind in "fc":
        quotient = input.div(other)
        return quotient.trunc() if quotient.is_floating_point() else quotient
    # integers: exact truncating division (float division would round above 2**53)
    # both operands in the result dtype first, as PyTorch's kernel reads them (a zero-dim int8
    # -2 divides a uint8 tensor as 254)
    a, b = np.broadcast_arrays(input._array.astype(out_dtype, copy=False),
                               np.asarray(other_arr).astype(out_dtype))
    if (b == 0).any():
        raise RuntimeError("ZeroDivisionError")
    with np.errstate(over="ignore"):    # (the minimum // -1 wraps to itself, as in PyTorch)
        floor = a // b
    return _wrap_like((floor + ((a % b != 0) & ((a < 0) != (b < 0)))).astype(out_dtype), input, other)


def true_divide(input, other):
    """input / other, always true division (the alias PyTorch keeps for div)."""
    if _number_first(input, other):
        return _core.div(input, other)
    _check_tensor(input, "true_divide")
    if not isinstance(other, (TensorBase, int, float, complex, np.generic, np.ndarray)):
        # PyTorch names true_divide (not div) for an operand neither tensor nor number
        raise TypeError(f"true_divide() received an invalid combination of arguments - got "
                        f"({_type_name(input)}, {_type_name(other)}), but expected one of:\n"
                        f" * (Tensor input, Tensor other)\n * (Tensor input, Number other)")
    return input.div(other)


def multiply(input, other):
    """input * other (PyTorch's alias of mul)."""
    if _number_first(input, other):
        return _core.mul(input, other)
    _check_tensor(input, "multiply")
    return input.mul(other)


def subtract(input, other, *, alpha=1):
    """input - alpha * other (PyTorch's alias of sub)."""
    if _number_first(input, other):
        return _core.sub(input, other, alpha=alpha)
    _check_tensor(input, "subtract")
    return input.sub(other, alpha=alpha)


def negative(input):
    """-input (PyTorch's alias of neg)."""
    _check_tensor(input, "negative")
    return input.neg()


def positive(input):
    """input itself (PyTorch refuses bool tensors)."""
    _check_tensor(input, "positive")
    if input._array.dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


# -- broadcasting and stacking ---------------------------------------------------------------------

def broadcast_shapes(*shapes):
    """The shape PyTorch broadcasting gives `shapes` (ints count as 1-d shapes)."""
    from . import Size
    result = []
    for index, shape in enumerate(shapes):
        if shape is None:
            continue        # (PyTorch skips it)
        if not isinstance(shape, (int, np.integer, tuple, list)):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list "
                               f"of ints, got {shape}")
        # (the message shows a tuple/list/torch.Size argument as given, an int as a 1-tuple)
        given = shape = (shape,) if isinstance(shape, (int, np.integer)) else shape
        shape = tuple(shape)
        if len(shape) > len(result):
            result = [1] * (len(shape) - len(result)) + result
        for i in range(1, len(shape) + 1):
            size = shape[-i]
            if size != result[-i] and size != 1:
                if result[-i] != 1:
                    raise RuntimeError(
                        f"Attempting to broadcast a dimension of length {size} at {-i}! "
                        f"Mismatching argument at index {index} had {given}; but expected shape "
                        f"should be broadcastable to {result}")
                if size < 0:
                    # (PyTorch's check, after the mismatch one: ((3,), (-1,)) is a mismatch)
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                result[-i] = size
    return Size(result)


def broadcast_to(input, size):
    """input expanded (a view) to `size`."""
    _check_tensor(input, "broadcast_to")
    return input.expand(*size)


def broadcast_tensors(*tensors):
    """The tensors expanded to their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        _check_tensor(t, "broadcast_tensors", "tensors", i + 1)
    shape = ()
    for t in tensors:
        try:
            shape = np.broadcast_shapes(shape, tuple(t.shape))
        except ValueError:
            # PyTorch names the first disagreeing dimension, counted from the left of the result
            n = max(len(shape), t.ndim)
            a, b = (1,) * (n - len(shape)) + tuple(shape), (1,) * (n - t.ndim) + tuple(t.shape)
            d = next(i for i in range(n - 1, -1, -1) if a[i] != b[i] and 1 not in (a[i], b[i]))
            raise RuntimeError(f"The size of tensor a ({a[d]}) must match the size of tensor b "
                               f"({b[d]}) at non-singleton dimension {d}") from None
    return tuple(t.expand(*shape) for t in tensors)


def _tensor_sequence(tensors, fn: str) -> list:
    if isinstance(tensors, TensorBase) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{_type_name(tensors)}")
    if not tensors:
        raise RuntimeError(f"{fn} expects a non-empty TensorList")
    return list(tensors)


def hstack(tensors):
    """Concatenation along dim 1 (dim 0 for 1-d tensors) after atleast_1d."""
    from . import cat
    parts = [t.reshape(1) if t.ndim == 0 else t for t in _tensor_sequence(tensors, "hstack")]
    return cat(parts, 0 if parts[0].ndim == 1 else 1)


def vstack(tensors):
    """Concatenation along dim 0 after atleast_2d (1-d tensors become rows)."""
    from . import cat
    parts = [t.reshape(1, -1) if t.ndim < 2 else t for t in _tensor_sequence(tensors, "vstack")]
    return cat(parts, 0)


row_stack = vstack


def dstack(tensors):
    """Concatenation along dim 2 after atleast_3d (n -> 1 x n x 1, r x c -> r x c x 1)."""
    from . import cat

    def at_least_3d(t):
        if t.ndim == 0:
            return t.reshape(1, 1, 1)
        if t.ndim == 1:
            return t.reshape(1, -1, 1)
        return t.unsqueeze(-1) if t.ndim == 2 else t
    return cat([at_least_3d(t) for t in _tensor_sequence(tensors, "dstack")], 2)


def column_stack(tensors):
    """Tensors of 0 or 1 dims become columns, then concatenation along dim 1."""
    from . import cat
    parts = [t.reshape(-1, 1) if t.ndim < 2 else t
             for t in _tensor_sequence(tensors, "column_stack")]
    return cat(parts, 1)


def ravel(input):
    """input flattened to 1-d and contiguous: a view of input when input is contiguous, else of
    a contiguous copy (PyTorch's contiguous().view(-1): unlike reshape(-1), a 1-d input with a
    step is copied, so a write into the result never reaches input; its grad_fn is ViewBackward0
    after a CloneBackward0, where reshape's copy is an UnsafeViewBackward0)."""
    _check_tensor(input, "ravel")
    return input.contiguous().view(-1)


def fliplr(input):
    """input with its columns (dim 1) reversed; needs at least 2 dims."""
    _check_tensor(input, "fliplr")
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input):
    """input with its rows (dim 0) reversed; needs at least 1 dim."""
    _check_tensor(input, "flipud")
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


def is_same_size(input, other):
    """True when both tensors have the same shape."""
    _check_tensor(input, "is_same_size")
    _check_tensor(other, "is_same_size", "other", 2)
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input):
    """True unless the dtype is unsigned (uint8) or bool."""
    _check_tensor(input, "is_signed")
    return input._array.dtype.kind not in "ub"


def is_nonzero(input):
    """The truth of a one-element tensor; PyTorch refuses any other size."""
    _check_tensor(input, "is_nonzero")
    if input._array.size == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input._array.size > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input._array.reshape(-1)[0])


# -- pointwise combinations ------------------------------------------------------------------------

def _as_tensor_like(value, like):
    """A Python number as a 0-d tensor of `like`'s dtype (tensors pass through)."""
    return value if isinstance(value, TensorBase) else _wrap(np.asarray(value, like._array.dtype))


def lerp(input, end, weight):
    """input + weight * (end - input), computed from the nearer end as PyTorch does (weight
    >= 0.5 interpolates back from `end`), so lerp(a, b, 1) is exactly b.  Floating inputs only;
    `end` and a weight tensor of more than 0 dims of input's dtype (a 0-d weight is a scalar)."""
    _check_tensor(input, "lerp")
    _check_tensor(end, "lerp", "end", 2)
    if not isinstance(weight, (TensorBase, numbers.Number)):
        raise TypeError(f"lerp() received an invalid combination of arguments - got (Tensor, "
                        f"Tensor, {_type_name(weight)}), but expected one of:\n"
                        " * (Tensor input, Tensor end, Tensor weight)\n"
                        " * (Tensor input, Tensor end, Number weight)\n")
    for name, other in (("end", end), ("weight", weight)):
        if isinstance(other, TensorBase) and other.dtype != input.dtype and \
                (name == "end" or other.dim() > 0):
            from .nn._attention import _c_name
            raise RuntimeError(f"expected dtype {_c_name(input)} for `{name}` but got dtype "
                               f"{_c_name(other)}")
    if input._array.dtype.kind not in "fc":
        kernel = "lerp_kernel_tensor" if isinstance(weight, TensorBase) and weight.dim() else \
            "lerp_kernel_scalar"
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_core.scalar_type_name_of(input._array.dtype)}'")
    # (PyTorch's messages: input is a, end b; then their broadcast shape a, a weight tensor b)
    _check_broadcast(input, end)
    if isinstance(weight, TensorBase):
        _broadcast_shapes(np.broadcast_shapes(input._array.shape, end._array.shape),
                          weight._array.shape)
    weight = _kernel_scalar(weight, input._array.dtype)
    if not isinstance(weight, TensorBase):
        # (PyTorch's overflow error, against the dtype it computes in: weight 1e5 is fine for
        # float16, whose opmath is float32)
        _core._scalar_to_dtype(weight, _opmath_dtype(input._array.dtype))
    if not isinstance(weight, TensorBase):
        def interpolate(input, end):
            diff = end - input
            return input + weight * diff if abs(weight) < 0.5 else end - diff * (1 - weight)
        return _core._name_grad_fn(in_float32_if_half(interpolate, input, end),
                                   "LerpBackward0")
    from . import where
    if weight.dtype != input.dtype:         # a 0-d weight of another dtype, read as a scalar
        weight = weight.to(input.dtype)

    def interpolate_by(start_, end_, weight_):
        diff = end_ - start_
        complement = 1 - weight_
        # PyTorch's LerpBackward1 saves input and end when the weight requires grad (the
        # weight's derivative, end - input, reads them): a write into one before backward
        # raises there.  Guarded on the record of 1 - weight, which exists exactly then and
        # saves nothing (the result's has too few free slots).
        _core._guard_saved_version(complement, input, end)
        return where(weight_.abs() < 0.5, start_ + weight_ * diff, end_ - diff * complement)
    result = _core._name_grad_fn(_relaid(in_float32_if_half(interpolate_by, input, end, weight),
                                         input, end), "LerpBackward1")
    _core._guard_saved_version(result, weight)    # (saved whatever requires grad)
    return result


def addcmul(input, tensor1, tensor2, tensor2_after_scale=NOT_GIVEN, *, value=1):
    """input + value * tensor1 * tensor2 (addcmul(input, value, tensor1, tensor2): PyTorch's
    deprecated form)."""
    if tensor2_after_scale is not NOT_GIVEN:
        value, (tensor1, tensor2) = scalar_first("addcmul", "value", tensor1, value,
                                                 (tensor2, tensor2_after_scale))
    elif type(value) is not int and type(value) is not float:
        from .creation import _number_argument
        value = _number_argument(value, "addcmul", "value", None)
    _check_tensor(input, "addcmul")
    _check_tensor(tensor1, "addcmul", "tensor1", 2)
    _check_tensor(tensor2, "addcmul", "tensor2", 3)
    tensor1, tensor2 = _in_common_dtype(input, tensor1, tensor2)
    if tensor1._array.dtype == np.bool_ and input._array.dtype == np.bool_:
        # (PyTorch's kernel has no bool form; numpy's would compute True + True * True)
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")

    def combine(input, tensor1, tensor2):
        product = tensor1 * tensor2
        return input + _result_scalar(value, input, product) * product
    return _core._name_grad_fn(in_float32_if_half(combine, input, tensor1, tensor2),
                               "AddcmulBackward0")


def _in_common_dtype(input, tensor1, tensor2):
    """tensor1 and tensor2 converted (recorded) to the common dtype of all three operands, as
    PyTorch's addcmul/addcdiv kernel reads them: their own product or quotient first had wrapped
    in int8 (addcmul(int64 1, int8 100, int8 3) was 45, not 301) or rounded in float32 before
    meeting a float64 input.  Same-dtype operands (the optimizers' per-step calls) pass as
    they are.  The common dtype is torch.result_type's over the three (dimensioned tensors
    first, then 0-d ones: the core's promote_operands)."""
    dt = input._array.dtype
    if tensor1._array.dtype == dt and tensor2._array.dtype == dt:
        return tensor1, tensor2
    from ._ops_unary import _promote_operands
    common = _promote_operands(input, tensor1, tensor2)
    return tuple(t if t._array.dtype == common else t.to(_core.np_dtype_to_dtype(common))
                 for t in (tensor1, tensor2))


def _result_scalar(value, input, product):
    """addcmul/addcdiv's value as PyTorch's kernel reads it, in the result's dtype."""
    if ((type(value) is float or type(value) is int) and input._array.dtype.kind == "f"
            and product._array.dtype.kind == "f"):
        if abs(value) > 3.4e38:             # (beyond float32: PyTorch's overflow error)
            _core._scalar_to_dtype(value, _opmath_dtype(product._array.dtype))
        return value                        # (see _kernel_scalar)
    return _kernel_scalar(value, np.result_type(input._array.dtype, product._array.dtype))


def _opmath_dtype(dtype):
    """The dtype PyTorch's CPU kernels compute a floating dtype in: float32 for float16."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _kernel_scalar(value, dtype):
    """contractions.kernel_scalar(value, dtype), with the common case (a Python float or int
    into a floating result, which it returns unchanged) answered here: the optimizer updates
    addcmul_, addcdiv_ and lerp_ are per-step calls, and the import below costs a microsecond."""
    if (type(value) is float or type(value) is int) and np.dtype(dtype).kind == "f":
        return value
    from .contractions import kernel_scalar
    return kernel_scalar(value, dtype)


def addcdiv(input, tensor1, tensor2, tensor2_after_scale=NOT_GIVEN, *, value=1):
    """input + value * tensor1 / tensor2 (PyTorch refuses two integer tensors);
    addcdiv(input, value, tensor1, tensor2), PyTorch's deprecated form, too."""
    if tensor2_after_scale is not NOT_GIVEN:
        value, (tensor1, tensor2) = scalar_first("addcdiv", "value", tensor1, value,
                                                 (tensor2, tensor2_after_scale))
    elif type(value) is not int and type(value) is not float:
        from .creation import _number_argument
        value = _number_argument(value, "addcdiv", "value", None)
    _check_tensor(input, "addcdiv")
    _check_tensor(tensor1, "addcdiv", "tensor1", 2)
    _check_tensor(tensor2, "addcdiv", "tensor2", 3)
    if tensor1._array.dtype.kind in "biu" and tensor2._array.dtype.kind in "biu":
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future "
                           " release addcdiv will perform a true division of tensor1 and tensor2. "
                           "The historic addcdiv behavior can be implemented as (input + value * "
                           "torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and "
                           "as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * "
                           "tensor1 / tensor2), for all dtypes.")
    tensor1, tensor2 = _in_common_dtype(input, tensor1, tensor2)
    if _records(input, tensor1, tensor2):
        from ._extra_functions import Addcdiv
        return Addcdiv.apply(input, tensor1, tensor2, value)
    return addcdiv_values(input, tensor1, tensor2, value)


def addcdiv_values(input, tensor1, tensor2, value):
    """addcdiv's values in PyTorch's kernel's order: input + (value * tensor1) / tensor2 (value
    times the quotient rounds otherwise in about a quarter of the elements); float16 operands
    in float32, rounded once, as PyTorch's kernel computes them.  tensor1 and tensor2 come in
    the common dtype of the three (_in_common_dtype)."""
    scalar = _result_scalar(value, input, tensor1)
    return in_float32_if_half(lambda i, t1, t2: i + (scalar * t1) / t2,
                                   input, tensor1, tensor2)


def logaddexp(input, other):
    """log(exp(input) + exp(other)) without overflow: max + log1p(exp(-|input - other|)); equal
    infinities give themselves."""
    _check_tensor(input, "logaddexp")
    _check_tensor(other, "logaddexp", "other", 2)
    _check_broadcast(input, other)     # (PyTorch's RuntimeError, before numpy's ValueError)
    from . import float16, float32, result_type
    # PyTorch's kernel runs in the operands' promoted dtype (int8 with float16 is float16; a
    # zero-dim complex128 does not widen a complex64 tensor), float16 in float32 arithmetic
    dtype = result_type(input, other)
    if not (dtype.is_floating_point or dtype.is_complex):
        raise NotImplementedError(f'"logaddexp_cpu" not implemented for '
                                  f"'{_core.scalar_type_name_of(dtype.np_dtype)}'")
    if dtype == float16:
        return _core._name_grad_fn(logaddexp(input.to(float32), other.to(float32)).to(float16),
                                   "LogaddexpBackward0")
    input, other = input.to(dtype), other.to(dtype)
    if input.is_complex():
        return _complex_logaddexp(input, other)
    from ._tutorial_ops import _LogAddExp
    return _LogAddExp.apply(input, other)


def _complex_logaddexp(input, other):
    """PyTorch's complex logaddexp: hi + log1p(exp(lo - hi)), hi the operand with the larger real
    part (input on a tie).  The imaginary part is hi's plus a principal log, NOT wrapped into
    (-pi, pi] as logsumexp wraps it; equal infinite real parts give lo (-inf) or log(exp + exp)
    (+inf)."""
    from . import where, log1p, exp, log
    take_other = other.real > input.real
    hi, lo = where(take_other, other, input), where(take_other, input, other)
    result = hi + log1p(exp(lo - hi))
    same_infinity = lo.real.isinf() & (lo.real == hi.real)
    if bool(same_infinity.any()):
        result = where(same_infinity, where(lo.real < 0, lo, log(exp(lo) + exp(hi))), result)
    return _core._name_grad_fn(result, "LogaddexpBackward0")


def _xlogy_values(x: np.ndarray, y: np.ndarray, log=np.log) -> np.ndarray:
    """x * log(y) (log1p for xlog1py) in the promoted float dtype, 0 where x is 0 and y is not
    nan."""
    out = np.result_type(x, y)
    out = out if out.kind == "f" else np.dtype(np.float32)
    with _core.IeeeResults():       # (0 * -inf, log 0, and a product beyond the dtype's range)
        product = x.astype(out) * log(y.astype(out))
    return np.where((x == 0) & ~np.isnan(y), out.type(0), product).astype(out)


def xlogy(input, other):
    """input * log(other), 0 where input is 0 (unless other is nan)."""
    return _xlog(input, other, "xlogy")


def _xlog(input, other, _name):
    """xlogy, or with _name "xlog1py" input * log1p(other) (torch.special.xlog1py): one op,
    two logarithms."""
    from . import tensor
    _check_tensor_or_number(_name if _name == "xlogy" else "special_" + _name, (input, other), (
        "Tensor input, Tensor other, *, Tensor out = None",
        "Number self, Tensor other, *, Tensor out = None",
        "Tensor input, Number other, *, Tensor out = None"))
    from . import get_default_dtype, result_type
    # PyTorch's promotion, taken before a number becomes a tensor: a 0-d operand or a number
    # (numpy's float64 included) does not widen the other operand
    dtype = result_type(input, other)
    if dtype.is_complex:        # (a cast would drop the imaginary part; PyTorch names the
                                # promoted dtype's missing kernel)
        raise NotImplementedError(f'"{_name}_cpu" not implemented for '
                                  f"'{_core.scalar_type_name_of(dtype.np_dtype)}'")
    dtype = dtype if dtype.is_floating_point else get_default_dtype()
    if not isinstance(input, TensorBase):
        input = tensor(input, dtype=dtype if isinstance(input, (float, np.floating)) else None)
    if not isinstance(other, TensorBase):
        other = tensor(other, dtype=dtype if isinstance(other, (float, np.floating)) else None)
    _check_broadcast(input, other)
    input, other = (t if t.dtype == dtype else t.to(dtype) for t in (input, other))
    from ._extra_functions import Xlogy, Xlog1py
    op = Xlogy if _name == "xlogy" else Xlog1py     # (its logarithm and its gradients)
    if _records(input, other):
        return op.apply(input, other)
    return _wrap_like(_xlogy_values(input._array, other._array, op.log), input, other)


def sgn(input):
    """The sign of each element: z / |z| (0 at 0) for complex tensors, sign for real ones."""
    _check_tensor(input, "sgn")
    if input._array.dtype.kind == "c":
        from . import _complex
        return _complex.dispatch("sgn", input)
    result = input.sign()
    # PyTorch's SgnBackward0 saves the input and the result: a write into either makes
    # backward raise
    _core._guard_saved_version(result, result, input)
    return _core._name_grad_fn(result, "SgnBackward0")


def signbit(input):
    """True where the sign bit is set (including -0.0)."""
    _check_tensor(input, "signbit")
    _refuse_if_complex("signbit", input)
    return _wrap_like(np.signbit(input._array), input)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """nan, +inf and -inf replaced (infinities by the dtype's extremes unless given)."""
    _check_tensor(input, "nan_to_num")
    nan = 0.0 if nan is None else nan
    replacements = []
    for name, value in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if isinstance(value, TensorBase):
            # (PyTorch reads a zero-dim tensor that does not require grad as its float)
            from .creation import _number_argument
            value = _number_argument(value, "nan_to_num", name, None, "float")
        if value is not None and not isinstance(value, (numbers.Real, np.floating, np.integer)):
            raise TypeError(f"nan_to_num(): argument '{name}' must be float, not "
                            f"{_type_name(value)}")
        replacements.append(value)
    nan, posinf, neginf = replacements
    if input._array.dtype.kind not in "fc":
        return input.clone()
    if input._array.dtype.kind == "c":
        if input.requires_grad and is_grad_enabled():
            raise RuntimeError("nan_to_num does not support automatic differentiation for "
                               "outputs with complex dtype.")
        # each part on its own, as PyTorch's kernel does
        from . import complex as make_complex
        return make_complex(nan_to_num(input.real, nan, posinf, neginf),
                            nan_to_num(input.imag, nan, posinf, neginf))
    info = np.finfo(input._array.dtype)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    # PyTorch casts each replacement into the input's dtype (1e39 becomes inf in float32), where
    # a Python float beyond the dtype's range would be refused
    with np.errstate(over="ignore"):
        nan, posinf, neginf = (float(info.dtype.type(v)) for v in (nan, posinf, neginf))
    if is_grad_enabled() and input.requires_grad:
        # PyTorch's gradient is grad * isfinite(input), a product (an infinite or NaN gradient
        # at a replaced element is NaN, as nansum's: fuzz seed 62669567), its node saving the
        # input (a write into it makes backward raise)
        from ._extra_functions import NanToNum
        return NanToNum.apply(input, nan, posinf, neginf)
    return nan_to_num_values(input, nan, posinf, neginf)


def nan_to_num_values(input, nan, posinf, neginf):
    """nan_to_num's value for a real float input and replacements in its dtype."""
    from . import where
    out = where(input.isnan(), nan, input)
    out = where(input.isposinf(), posinf, out)
    return where(input.isneginf(), neginf, out)


@_numpy_dim_names
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """sum with nan elements counted as 0."""
    _check_tensor(input, "nansum")
    _core.check_bool("nansum", "keepdim", keepdim)
    if input._array.dtype.kind == "c":
        raise RuntimeError("nansum on CPU does not support complex inputs")
    if dtype is not None and dtype.is_complex and input._array.dtype.kind == "f":
        # (a float input is summed in the dtype asked for, which the NaN-skipping kernel lacks;
        # an integer one, which has no NaN, is a plain sum)
        raise NotImplementedError(f"\"nansum_cpu\" not implemented for "
                                  f"'{_core.scalar_type_name_of(dtype.np_dtype)}'")
    if dim is not None:
        _core._normalize_dims(dim, input.ndim)      # (PyTorch's error order: each dim in turn)
    if dim is None and keepdim and input.ndim:      # (every dim kept as a 1)
        dim = tuple(range(input.ndim))
    if (is_grad_enabled() and input.requires_grad
            and (dtype is None or dtype.is_floating_point)):    # (else sum's refusal)
        # PyTorch's gradient multiplies by the non-NaN mask (an infinite or NaN gradient at a
        # NaN element is NaN, not 0: fuzz seed 62669567), a node saving the input (a write into
        # it makes backward raise: 63015532)
        from ._extra_functions import Nansum
        return Nansum.apply(input, dim, keepdim, dtype)
    return nansum_values(input, dim, keepdim, dtype)


def nansum_values(input, dim, keepdim, dtype):
    """nansum's value (dim None or checked), recording nothing for an input outside a graph."""
    from . import where
    x = where(input.isnan(), 0, input) if input._array.dtype.kind in "fc" else input
    if dim is None:
        return x.sum(dtype=dtype) if dtype is not None else x.sum()
    return x.sum(dim, keepdim=keepdim, dtype=dtype) if dtype is not None else x.sum(dim, keepdim)


@_numpy_dim_names
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """mean over the non-nan elements (nan where all are nan)."""
    _check_tensor(input, "nanmean")
    _core.check_bool("nanmean", "keepdim", keepdim)
    if input._array.dtype.kind not in "fc":
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {_dtype_name(input._array)}")
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError("nanmean(): could not infer output dtype. Optional dtype must be "
                           "either a floating point or complex dtype. Got: "
                           f"{_core.scalar_type_name_of(dtype.np_dtype)}")
    if dim is not None:
        _core._normalize_dims(dim, input.ndim, True)    # (PyTorch's: every range, then repeats)
    # (an int64 count, as PyTorch's: the quotient keeps the sum's dtype, float16 for dtype=half)
    count = (~input.isnan()).sum(dim, keepdim) if dim is not None else \
        (~input.isnan()).sum().reshape([1] * input.ndim if keepdim else [])
    return nansum(input, dim, keepdim, dtype=dtype) / count


# -- dtype questions and index grids ---------------------------------------------------------------

def can_cast(from_, to):
    """True when PyTorch's type promotion lets a value of dtype `from_` be written into `to`
    (no float to integer, no non-bool to bool)."""
    for arg, position in ((from_, 1), (to, 2)):
        if not isinstance(arg, _core.dtype):
            raise TypeError(f"can_cast(): argument '{'from_' if position == 1 else 'to'}' "
                            f"(position {position}) must be torch.dtype, not "
                            f"{_type_name(arg)}")
    return _core.can_cast_np(from_.np_dtype, to.np_dtype)


def _scalar_type_name(dtype) -> str:
    """PyTorch's ScalarType name of a dtype, bfloat16 (which numpy lacks) too."""
    if dtype == _core.bfloat16:
        return "BFloat16"
    return _core.scalar_type_name_of(dtype.np_dtype)


def _triangle_indices(row, col, offset, upper: bool, fn: str, dtype):
    if dtype is not None and not isinstance(dtype, _core.dtype):
        raise TypeError(f"{fn}(): argument 'dtype' must be torch.dtype, not "
                        f"{_type_name(dtype)}")
    from .creation import _count_arg
    row, col, offset = (_count_arg(v, fn, name, position) for position, (name, v) in
                        enumerate((("row", row), ("col", col), ("offset", offset)), 1))
    for name, value in (("row", row), ("col", col)):
        if value < 0:
            raise RuntimeError(f"{name} must be non-negative, got{value}")
    if dtype not in (None, _core.int64, _core.int32):      # (their kernels' only two dtypes)
        raise NotImplementedError(f'"{fn}" not implemented for \'{_scalar_type_name(dtype)}\'')
    if upper:
        rows, cols = np.triu_indices(row, offset, col)
    else:
        rows, cols = np.tril_indices(row, offset, col)
    out = np.stack([rows, cols]).astype(np.int64 if dtype is None else dtype.np_dtype)
    return _wrap(out.reshape(2, -1))


def tril_indices(row, col, offset=0, *, dtype=None, device=None,
                 pin_memory: bool = False, layout=None):
    """The 2 x N (row, column) coordinates of the lower triangle of a row x col matrix."""
    check_unpinned(pin_memory)
    sparse_factory_layout(layout, "tril_indices", "tril_indices")
    return _triangle_indices(row, col, offset, False, "tril_indices", dtype)


def triu_indices(row, col, offset=0, *, dtype=None, device=None,
                 pin_memory: bool = False, layout=None):
    """The 2 x N (row, column) coordinates of the upper triangle of a row x col matrix."""
    check_unpinned(pin_memory)
    sparse_factory_layout(layout, "triu_indices", "triu_indices")
    return _triangle_indices(row, col, offset, True, "triu_indices", dtype)


# -- rotation and differences ---------------------------------------------------------------------

def rot90(input, k=1, dims=(0, 1)):
    """input rotated by 90 degrees k times in the plane of `dims`, from the first dim towards
    the second (a flip and a transpose, so the result records)."""
    _check_tensor(input, "rot90")
    from .creation import _count_arg
    k = _count_arg(k, "rot90", "k", 2)          # (a float or bool k is refused, not truncated)
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (_dim(d, input.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} "
                           f"and dim1 = {dims[1]}")
    turns = k % 4
    if turns == 1:
        out = flip(input, (d1,)).transpose(d0, d1)
    elif turns == 2:
        out = flip(input, (d0, d1))
    elif turns == 3:
        out = flip(input, (d0,)).transpose(d0, d1)
    else:
        out = input.clone()
    return _core._name_grad_fn(out, "Rot90Backward0")


@_numpy_dim_names
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along dim (after prepend / append are attached); bool
    tensors differ by xor, as in PyTorch."""
    _check_tensor(input, "diff")
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if n == 0:          # PyTorch returns a copy of input, ignoring prepend and append
        return input.clone()
    from . import cat
    d = _dim(dim, input.ndim)
    for name, extra in (("prepend", prepend), ("append", append)):
        if extra is None:
            continue
        if not isinstance(extra, TensorBase):
            raise TypeError(f"diff(): argument '{name}' must be Tensor, not {_type_name(extra)}")
        if extra.ndim != input.ndim:
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
        for i in range(input.ndim):     # (PyTorch checks before cat, with its own message)
            if i != d and extra.shape[i] != input.shape[i]:
                raise RuntimeError(
                    "diff expects the shape of tensor to prepend or append to match that of "
                    "input except along the differencing dimension; input.size(%d) = %d, but "
                    "got tensor.size(%d) = %d" % (i, input.shape[i], i, extra.shape[i]))
    parts = [t for t in (prepend, input, append) if t is not None]
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        length = x.shape[d]
        if length == 0:
            break
        ahead, behind = x.narrow(d, 1, length - 1), x.narrow(d, 0, length - 1)
        x = ahead.logical_xor(behind) if x._array.dtype == np.bool_ else ahead - behind
    return x


# -- extremes and scalars --------------------------------------------------------------------------

@_numpy_dim_names
def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) of input, overall or along dim: amin and amax, which share a tie's gradient
    evenly as PyTorch's aminmax."""
    _check_tensor(input, "aminmax")
    _core.check_bool("aminmax", "keepdim", keepdim)
    result_type = _core.return_types.aminmax
    if dim is not None:
        dim = _core.int_arg(dim, "aminmax", "dim")      # (a 0-d integer tensor is an int there)
    # (PyTorch's 0-d tensor along a dim takes another path, with its own words)
    _refuse_if_complex("aminmax_0d_dim" if dim is not None and input.ndim == 0 else "aminmax", input)
    if dim is None and input._array.size == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    if dim is not None and input.ndim:
        # (along a dim, only that dim must have elements: an empty result otherwise, as amin's)
        d = _dim(dim, input.ndim)
        if input.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    if dim is None:
        low, high = input.amin(), input.amax()
        if keepdim:
            low, high = low.reshape([1] * input.ndim), high.reshape([1] * input.ndim)
    else:
        low, high = input.amin(dim, keepdim), input.amax(dim, keepdim)
    # (one node in PyTorch, with two outputs; two records here, each given its name)
    return result_type((_core._name_grad_fn(low, "AminmaxBackward0"),
                        _core._name_grad_fn(high, "AminmaxBackward0")))


@_numpy_dim_names
def hash_tensor(input, dim=None, *, keepdim=False, mode=0, out=None):
    """The xor of input's elements along dim (all of them by default), each first widened to 64
    bits (floats to float64, integers to int64, bool to 0/1) and read as its bit pattern: a
    uint64 tensor (PyTorch's mode 0, the only one it has).  Never differentiable."""
    _check_tensor(input, "hash_tensor")
    _core.check_bool("hash_tensor", "keepdim", keepdim)
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    a = input._array
    # (dim None or [] reduces every dim; a 0-d input has none to reduce, whatever dim says)
    dims = (() if dim is None else _core._normalize_dims(dim, input.ndim, True)) or \
        tuple(range(input.ndim))
    dims = dims if input.ndim else ()
    if a.size == 0 and (dim is None or (not isinstance(dim, (int, np.integer)) and
                                        not len(dim))):
        raise RuntimeError("hash_tensor: Expected reduction dim to be specified for "
                           "input.numel() == 0. Specify the reduction dim with the 'dim' "
                           "argument.")
    for d in dims:
        if a.shape[d] == 0:
            raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
    # (after the dims' checks, and only for a non-empty result, as PyTorch: an empty input that
    # got this far kept an empty dim, so its result is empty)
    if a.dtype.kind == "c" and a.size:
        raise NotImplementedError(f"\"xor_sum_cpu\" not implemented for "
                                  f"'{_core.scalar_type_name_of(a.dtype)}'")
    if a.dtype.kind == "c":
        a = a.real                                  # (empty: only the result's shape matters)
    wide = np.float64 if a.dtype.kind == "f" else np.uint64 if a.dtype.kind == "u" else np.int64
    bits = np.array(a, dtype=wide, order="C").view(np.uint64)
    hashed = np.bitwise_xor.reduce(bits, axis=dims, keepdims=keepdim) if dims else bits.copy()
    result = _wrap(np.asarray(hashed, dtype=np.uint64))
    if out is None:
        return result
    from ._out_arg import write_into
    if out.dtype != _core.uint64:
        raise RuntimeError(f"Expected result to be of dtype uint64, but got "
                           f"{_core.scalar_type_name_of(out._array.dtype)}")
    return write_into("hash_tensor", out, result)


def scalar_tensor(s, *, dtype=None, device=None, layout=None, requires_grad=False,
                  pin_memory=False):
    """A 0-d tensor holding s, of the default float dtype unless dtype is given."""
    from . import get_default_dtype, tensor
    if dtype is not None and isinstance(s, (bool, int, float, complex, np.bool_, np.number)):
        # a Number, stored by the conversion every number written into a tensor shares
        s = _core._scalar_to_dtype(s, _core.np_dtype_of(dtype, "scalar_tensor"))
    return tensor(float(s) if dtype is None else s, dtype=dtype or get_default_dtype(),
                  requires_grad=requires_grad)


# -- in-place forms -------------------------------------------------------------------------------

# Elementwise methods whose in-place form `name_` PyTorch has; the ones in IN_PLACE_FUNCTIONS are
# also torch-level functions (torch.exp_(t)).
IN_PLACE = ("abs", "absolute", "acos", "arccos", "asin", "arcsin", "atan", "arctan", "atan2",
            "arctan2", "tan", "asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh", "sin",
            "cos", "sinh", "cosh", "tanh", "sigmoid", "relu", "exp", "expm1", "log", "log1p",
            "log2", "log10", "sqrt", "rsqrt", "square", "reciprocal", "neg", "sign", "erf",
            "ceil", "floor", "round", "trunc", "fix", "frac", "clamp", "clamp_min", "clamp_max",
            "clip", "pow", "fmod", "remainder", "floor_divide", "addmm", "baddbmm", "cumsum",
            "cumprod", "masked_fill", "eq", "ne", "not_equal", "lt", "less", "le", "less_equal",
            "gt", "greater", "ge", "greater_equal", "logical_and", "logical_or", "logical_xor",
            "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
            "bitwise_left_shift", "bitwise_right_shift", "divide", "true_divide", "multiply",
            "subtract", "negative", "lerp", "addcmul", "addcdiv", "xlogy", "sgn",
            "nan_to_num")
IN_PLACE_FUNCTIONS = ("abs", "acos", "arccos", "asin", "arcsin", "atan", "arctan", "tan", "asinh",
                      "arcsinh", "acosh", "arccosh", "atanh", "arctanh", "cos", "cosh", "sin",
                      "sinh", "tanh", "sigmoid", "relu", "exp", "expm1", "log", "log1p", "log2",
                      "log10", "sqrt", "rsqrt", "square", "reciprocal", "neg", "erf", "ceil",
                      "floor", "round", "trunc", "fix", "frac", "clamp", "clamp_min", "clamp_max",
                      "clip", "negative", "xlogy", "nan_to_num")


def _stretched(t) -> bool:
    """Whether two of t's elements share one memory location (an expand()ed view).  A tensor
    without elements has none to share (numpy gives its dims stride 0)."""
    return 0 not in t.shape and any(st == 0 and n > 1 for st, n in zip(t.stride(), t.shape))


def _fill_stretched(self, key, value, op: str):
    """self[key] = value into an expand()ed self, as PyTorch's masked_fill_ / index_fill_ write
    one: the selected elements only (memory they share gets the value), with its deprecation
    warning.  (copy_ of the whole result would refuse the overlap.)  Recorded, a backward that
    reaches the write raises PyTorch's overlap error (the core's OP_OVERLAPPING_SLICES)."""
    warnings.warn(f"Use of {op} on expanded tensors is deprecated. Please clone() the tensor "
                  "before performing this operation. This also applies to advanced indexing "
                  "e.g. tensor[mask] = scalar", UserWarning, stacklevel=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (the index_put_ warning of the write itself)
        self[key] = value
    return self


def _masked_fill_arguments(mask, value):
    return mask, value


class _leaf_error_first:
    """Around an in-place op computed here from its out-of-place form: where that raises the
    error of a value it checks (an index out of range: fuzz seed 60617181), PyTorch's refusal of
    a write into a leaf that requires grad comes first, as its autograd layer makes it before
    the kernel runs.  Argument TypeErrors stay first (PyTorch's parser raises them)."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if kind is not None and not issubclass(kind, TypeError):
            _refuse_leaf_write(self.tensor)
        return False


def _refuse_leaf_write(self) -> None:
    """PyTorch's refusal of an in-place op on a leaf that requires grad (or a view of one, with
    grad mode on).  Views taken in no_grad and the like are left to copy_'s checks (PyTorch
    names them differently)."""
    if not (is_grad_enabled() and self.requires_grad):
        return
    base = self._base
    if base is None:
        if self.is_leaf:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
    elif not self.is_leaf and base.is_leaf and base.requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")


# PyTorch has no derivative formula for these in-place forms: differentiating them raises
_NO_IN_PLACE_DERIVATIVE = {"asinh": "asinh", "arcsinh": "asinh", "acosh": "acosh",
                           "arccosh": "acosh", "atanh": "atanh", "arctanh": "atanh"}


# In-place forms PyTorch computes without its elementwise kernel's check that an operand does not
# partly share memory with self: the products (a matmul writes into a buffer first), masked_fill
# (its value is read as a number) and ldexp (self.mul_ of a fresh power of two)
_NO_OVERLAP_CHECK = frozenset(("addmm", "addbmm", "baddbmm", "addmv", "addr", "masked_fill",
                               "ldexp"))
# Index writes computed here (the others are in _scatter_ops) that PyTorch refuses when an index
# or the source shares self's memory even with self's layout: the values written, or where,
# would depend on the order of the writes
_INDEX_WRITES = frozenset(("put", "index_reduce"))
# In-place forms of binary ops whose operand is checked (shape, then cast of the promoted dtype)
# before the op runs, as PyTorch's TensorIterator does (comparisons and fills cast their operand
# instead, so they are not listed)
_BINARY_IN_PLACE = frozenset("""
bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift remainder fmod hypot
atan2 arctan2 divide true_divide floor_divide copysign logaddexp logaddexp2 xlogy fmax fmin
nextafter ldexp gcd lcm igamma igammac
""".split())
# ... of which these take no number operand: PyTorch's argument parser refuses one before any
# cast check (hypot_(2.5) on an int64 self is the TypeError, not the cast's RuntimeError)
_TENSOR_OPERAND_ONLY = frozenset("hypot atan2 arctan2 nextafter ldexp gcd lcm igamma "
                                 "igammac".split())
# ... and these compute in floating point: an integer or bool pair's result type is the default
# float dtype, which is what the cast check names (bool_t.divide_(2): "result type Float"; not
# divide with a rounding_mode, which keeps integers)
_FLOATING_RESULT = frozenset("divide true_divide copysign xlogy atan2 arctan2 ldexp".split())
# ... and these refuse an integer or bool self in their own words (a format string of {out});
# a float self's refusal (of a complex operand) is the generic one
_CAST_MESSAGE = {"ldexp": "ldexp can't be cast to the desired output type {out}"}


# Comparisons by their in-place names -> PyTorch's node (<Op>Backward1 for a tensor operand)
_COMPARISON_NODES = {"lt": "Lt", "less": "Lt", "le": "Le", "less_equal": "Le", "gt": "Gt",
                     "greater": "Gt", "ge": "Ge", "greater_equal": "Ge", "eq": "Eq", "ne": "Ne",
                     "not_equal": "Ne"}


# In-place forms computed as Functions whose PyTorch node saves its result (derivatives.yaml
# reads `result`): a write into self after the op must be refused at backward.
# (cumprod: CumprodBackward saves self and the result; in place, the result is self)
_SAVES_RESULT = frozenset("copysign hypot exp2 tan cumprod".split())


# the in-place products whose operands' dtypes are checked against self's (contractions)
_DTYPE_CHECKED_PRODUCTS = frozenset(("addmm", "addmv", "baddbmm", "addbmm"))


def _in_place(name: str):
    """Tensor.<name>_: the out-of-place result written into self with copy_, so the project's
    in-place rules (leaf, view, version counter) apply.  When the op records (self or a tensor
    operand requires grad), it reads a copy (_in_place_operand: a clone, or for a view that
    overlaps itself one whose gradient reaches each shared element once): it may save self for
    backward, and copy_ is about to overwrite self."""
    def apply(self, args, kwargs):
        if name in ("abs", "absolute"):
            _refuse_if_complex("abs_", self)
        if name in ("cumsum", "cumprod"):
            kwargs, args = _running_in_place(self, name, args, kwargs)
        _core._fresh_for_write(self)
        # (an operand that requires grad makes the op record too, and it may save self; under
        # no_grad, where optimizers make these calls, nothing records and nothing is scanned)
        records = is_grad_enabled() and (self.requires_grad or any(
            isinstance(a, _core.TensorBase) and a.requires_grad
            for a in (*args, *kwargs.values())))
        # (masked_fill_ is one write PyTorch runs on a tensor whose elements share memory)
        source = (_core._in_place_operand(self, name == "masked_fill") if records else self)
        if source is not self and name in _DTYPE_CHECKED_PRODUCTS:
            # (made on the float32 storage, the copy of a bfloat16 self is a float32 tensor:
            # the products' dtype checks read it as bfloat16, as PyTorch's copy is, fuzz
            # 67300305; contractions._dtype_key)
            bf16 = sys.modules.get("tapegrad._bfloat16")
            if bf16 is not None and bf16.is_bfloat16(self):
                bf16.mark(source)
        try:
            with _leaf_error_first(self):
                if name == "addr" and self.ndim != 2:   # (addr_ writes a matrix, checked first)
                    raise RuntimeError(f"2D tensor expected, got {self.ndim}D tensor for input")
                if name in _BINARY_IN_PLACE and (args or "other" in kwargs):
                    from ._shift_ops import check_in_place_operand
                    other = args[0] if args else kwargs["other"]
                    if name in _TENSOR_OPERAND_ONLY and not isinstance(other, TensorBase):
                        raise TypeError(f"{name}_(): argument 'other' (position 1) must be "
                                        f"Tensor, not {_type_name(other)}")
                    floating = name in _FLOATING_RESULT and kwargs.get("rounding_mode") is None
                    own_words = self._array.dtype.kind in "biu"
                    # (the overlap check follows the call, below)
                    check_in_place_operand(self, other, floating=floating,
                                           cast_message=_CAST_MESSAGE.get(name) if own_words
                                           else None, overlap=False)
                if name == "masked_fill" and source is not self \
                        and self._array.dtype.kind not in "fc":
                    # (an integer or bool self keeps the value's record: the in-place form's)
                    from ._ops_shape import _masked_fill_in_place
                    result = _masked_fill_in_place(source, *args, **kwargs)
                else:
                    result = getattr(source, name)(*args, **kwargs)
                # (after the call: PyTorch's argument errors come first)
                if name not in _NO_OVERLAP_CHECK:
                    _core._check_operands_overlap(self, (*args, *kwargs.values()))
                elif name == "masked_fill":     # (the mask only: a 0-d value is read first)
                    mask, _ = _masked_fill_arguments(*args, **kwargs)
                    _core._check_operands_overlap(self, (mask,))
                if name in _INDEX_WRITES:   # (an index or source sharing any of self's memory)
                    _core._check_operands_overlap(self, (*args, *kwargs.values()), True)
        except TypeError as error:      # (its argument errors: PyTorch's, under this name)
            message = str(error)
            # (a method taking no arguments words it as Python does for a C method:
            # "TensorBase.exp_() takes no arguments (1 given)")
            for called in (name, "TensorBase." + name):
                if message.startswith(called + "()"):
                    raise TypeError(called + "_" + message[len(called):]) from None
            raise
        if result._array.shape != self._array.shape:
            if name in ("addmm", "baddbmm"):    # (PyTorch's structured kernels' words)
                raise RuntimeError(f"Bad in-place call: input tensor size {list(self.shape)} and "
                                   f"output tensor size {list(result.shape)} should match")
            if name == "addr":
                vec1, vec2 = args[:2] if len(args) >= 2 else (kwargs.get("vec1"), kwargs.get("vec2"))
                raise RuntimeError(f"size mismatch, input: {list(self.shape)}, v1: "
                                   f"{list(vec1.shape)}, v2: {list(vec2.shape)}")
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(result.shape)}")
        if name == "masked_fill" and _stretched(self):
            mask, value = _masked_fill_arguments(*args, **kwargs)
            return _fill_stretched(self, mask.expand_as(self), value, "masked_fill_")
        if source is not self and name in _NO_IN_PLACE_DERIVATIVE:
            from ._more_math import without_derivative
            result = without_derivative(
                (source,), result.detach()._array, "the derivative for 'inplace version of "
                f"{_NO_IN_PLACE_DERIVATIVE[name]}' is not implemented.",
                node=f"{_NO_IN_PLACE_DERIVATIVE[name].capitalize()}Backward1")
        if source is not self and name in _COMPARISON_NODES and self._array.dtype.kind == "f":
            # PyTorch records a float self's in-place comparison with a node giving zeros (an
            # operand that requires grad makes self require grad, and gets a zero .grad; the
            # bool result copied in had no history: self did not require grad, fuzz 67100120)
            from ._more_math import with_zero_derivative
            result = with_zero_derivative(
                (source, *args, *kwargs.values()), result._array.astype(self._array.dtype),
                f"{_COMPARISON_NODES[name]}Backward1")
        op = (name, (self, *args), kwargs)
        if source is not self:
            out = _become_result(self, result, op)
            if name in _SAVES_RESULT:
                if out._base is not None:
                    from .autograd.function import _saved_result_becomes
                    _saved_result_becomes(result, out)
                # PyTorch's node saves the result, which is now self: a later write into self
                # (under no_grad) makes backward raise, where the gradient read the values
                # before it (tan_, exp2_) or after it (copysign_, hypot_), silently
                _core._guard_saved_version(out, out)
            return out
        return _write_back(self, result, op)

    def method(self, *args, **kwargs):
        if _profiling.RECORDING:
            with op_event(name + "_", self, args):     # (the profiler's aten::<name>_)
                return apply(self, args, kwargs)
        return apply(self, args, kwargs)
    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In-place form of Tensor.{name}."
    return method


# -- shape and index composites ------------------------------------------------------------------

def _one_int_tensor(value) -> bool:
    """A tensor PyTorch's parser takes as one int of an int list (_core.symint_param: a
    one-element integer or bool tensor: x.roll(torch.tensor(1)), x.flip(torch.tensor([0])),
    whose dims are *dims there)."""
    return isinstance(value, _core.TensorBase) and _core.symint_param(value) is not None


def _dims_list(dims, fn: str):
    if (isinstance(dims, (int, np.integer)) and not isinstance(dims, bool)) or \
            _one_int_tensor(dims):
        raise TypeError(f"{fn}(): argument 'dims' (position 2) must be tuple of ints, not "
                        f"{_type_name(dims)}")
    return list(dims)


def flip(input, dims):
    """input with the order of elements reversed along each of dims (a copy)."""
    _check_tensor(input, "flip")
    dims = _dims_list(dims, "flip")
    seen = set()
    out = input
    for dim in dims:
        d = _dim(dim, input.ndim, list_item=True)
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)
    if input.ndim == 0 or not seen:
        out = input.clone()
    elif (order := preserved_order(input)) is not None:     # PyTorch's result keeps the layout
        out = flip(input.permute(*order), [order.index(d) for d in seen]).permute(*inverse(order))
    else:
        for d in sorted(seen):
            n = input._array.shape[d]
            out = out.index_select(d, _index_tensor(np.arange(n - 1, -1, -1)))
    return _core._name_grad_fn(out, "FlipBackward0")


def roll(input, shifts, dims=None):
    """input with elements shifted along dims, wrapping around (flattened when dims is None)."""
    _check_tensor(input, "roll")
    if isinstance(shifts, bool):
        raise TypeError("roll(): argument 'shifts' must be tuple of ints, not bool")
    if isinstance(shifts, (int, np.integer)) or _one_int_tensor(shifts):
        shifts = [shifts]
    elif not isinstance(shifts, (list, tuple)):   # (a float, or a tensor of several shifts)
        raise TypeError(f"roll(): argument 'shifts' (position 2) must be tuple of ints, not "
                        f"{_type_name(shifts)}")
    shifts = list(shifts)
    bad = next((s for s in shifts if not hasattr(s, "__index__")), None)
    if bad is not None:
        raise TypeError(f"roll(): argument 'shifts' must be tuple of ints, not "
                        f"{type(bad).__name__}")
    if not shifts:
        raise RuntimeError("`shifts` required")
    if dims is not None and not (isinstance(dims, (int, np.integer)) or _one_int_tensor(dims)):
        dims = list(dims)
        if not dims:                # (PyTorch's default: an empty dims is dims=None)
            dims = None
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        if input.ndim == 0:
            return _core._name_grad_fn(input.clone(), "RollBackward0")
        # (a copy, not a view of the flat roll: PyTorch's result is no view)
        return _core._name_grad_fn(roll(input.flatten(), shifts, 0).reshape(input.shape).clone(),
                                   "RollBackward0")
    dims = [dims] if isinstance(dims, (int, np.integer)) or _one_int_tensor(dims) else list(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    out = input
    if input.ndim == 0:
        _no_dims(dims[0])
    if input._array.size == 0:       # PyTorch returns an empty input before checking the dims
        return _core._name_grad_fn(input.clone(), "RollBackward0")

    for shift, dim in zip(shifts, dims):
        d = _dim(dim, input.ndim, list_item=True)
        n = input._array.shape[d]
        if n == 0:
            continue
        out = out.index_select(d, _index_tensor((np.arange(n) - int(shift)) % n))
    return _core._name_grad_fn(out if out is not input else input.clone(), "RollBackward0")


def diag(input, diagonal=0):
    """A 1-d input becomes the `diagonal`-th diagonal of a square matrix; a 2-d input gives its
    `diagonal`-th diagonal as a 1-d tensor."""
    _check_tensor(input, "diag")
    diagonal = _int_argument(diagonal, "diag", "diagonal", 2)
    if input.ndim == 1:
        from ._more_ops import _diag_embedded
        return _core._name_grad_fn(_diag_embedded(input, diagonal), "DiagEmbedBackward0")
    if input.ndim == 2:
        return _core._name_grad_fn(_diagonal(input, diagonal), "DiagonalBackward0_copy")
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def _diagonal(m, k: int):
    rows, cols = m._array.shape
    start_row, start_col = max(-k, 0), max(k, 0)
    length = max(min(rows - start_row, cols - start_col), 0)
    positions = (np.arange(length) + start_row) * cols + np.arange(length) + start_col
    return m.reshape(-1).index_select(0, _index_tensor(positions))


def trace(input):
    """The sum of the main diagonal of a matrix (integers sum to int64)."""
    _check_tensor(input, "trace")
    if input._array.dtype.kind == "b":         # (PyTorch checks the dtype first)
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return _core._name_grad_fn(_diagonal(input, 0).sum(), "TraceBackward0")


def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 0-d/1-d tensors: 'ij' (matrix) or 'xy' (Cartesian) indexing; the
    outputs are expanded views of the inputs."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        # (TORCH_WARN_ONCE in PyTorch: once per process)
        _core.warn_once("torch.meshgrid: in an upcoming release, it will be required to pass the "
                        "indexing argument.", "aten/src/ATen/native/TensorShape.cpp:4215")
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        _check_tensor(t, "meshgrid", "tensors", 1)
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t.ndim}D tensor")
        if t.dtype != tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    # 'xy' is 'ij' with the first two inputs (and the first two output dims) swapped.
    swap = indexing == "xy" and len(tensors) >= 2
    order = list(tensors)
    if swap:
        order[0], order[1] = order[1], order[0]
    sizes = [t.numel() for t in order]
    grids = []
    for i, t in enumerate(order):
        view = [1] * len(order)
        view[i] = -1
        grids.append(t.reshape(view).expand(*sizes))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def numel(input) -> int:
    """The number of elements of input."""
    _check_tensor(input, "numel")
    return input._array.size


# -- registration --------------------------------------------------------------------------------

# Functions: the tapegrad namespace; methods: Tensor methods with the tensor as first argument.
FUNCTIONS = ("isclose", "allclose", "equal", "bincount", "histc", "histogram", "histogramdd",
             "unique", "sort",
             "argsort", "topk", "cumsum", "cumprod", "log10", "log2", "flip", "roll", "diag",
             "trace", "meshgrid", "numel", "set_printoptions",
             "tan", "asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "divide",
             "true_divide", "multiply", "subtract", "negative", "positive", "broadcast_shapes",
             "broadcast_to", "broadcast_tensors", "hstack", "vstack", "row_stack", "dstack",
             "column_stack", "ravel", "fliplr", "flipud", "is_same_size", "is_signed",
             "is_nonzero", "lerp", "addcmul", "addcdiv", "logaddexp", "xlogy", "sgn",
             "signbit", "nan_to_num", "nansum", "nanmean", "can_cast", "tril_indices",
             "triu_indices", "rot90", "diff", "aminmax", "hash_tensor",
             "scalar_tensor")
METHODS = ("isclose", "allclose", "equal", "bincount", "histc", "histogram", "unique", "sort",
           "argsort", "topk", "cumsum", "cumprod", "log10", "log2", "flip", "roll", "diag",
           "trace", "tan", "asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh",
           "divide", "true_divide", "multiply", "subtract", "negative", "positive",
           "broadcast_to", "ravel", "fliplr", "flipud", "is_same_size", "is_signed",
           "is_nonzero", "lerp", "addcmul", "addcdiv", "logaddexp", "xlogy", "sgn",
           "signbit", "nan_to_num", "nansum", "nanmean", "rot90", "diff",
           "aminmax", "hash_tensor")
CONSTANTS = {"inf": inf, "nan": nan, "pi": pi, "e": e}


def _method(name: str, fn):
    """fn(self, ...) as Tensor's method `name`, behind the methods' entry (PyTorch's wording of
    its argument errors, counted after self)."""
    from ._public_calls import method_entry
    return method_entry(name, fn)


def _packed_sequence_method(name: str, param: str, fn):
    """Tensor.<name>(seq) and Tensor.<name>(*ints): PyTorch's method parser packs loose ints into
    the method's one sequence argument (x.flip(0, 1), x.broadcast_to(2, 3)); the function form
    takes only the sequence."""
    def method(self, *values, **kwargs):
        if kwargs:
            if values or set(kwargs) != {param}:
                raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(kwargs))}'"
                                if set(kwargs) != {param} else
                                f"{name}() got multiple values for argument '{param}'")
            values = (kwargs[param],)
        if not values:
            raise TypeError(f'{name}() missing 1 required positional arguments: "{param}"')
        if len(values) == 1 and not (isinstance(values[0], (int, np.integer))
                                     or _one_int_tensor(values[0])):
            values = values[0]
        return fn(self, values)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = fn.__doc__
    return method


def register_return_types(return_types: dict) -> None:
    """Add tapegrad.return_types.<name> (printed as torch.return_types.<name>) for each name ->
    fields, once."""
    for name, fields in return_types.items():
        if not hasattr(_core.return_types, name):
            _core._make_return_type(name, fields)


def register_family(namespace: dict, tensor_cls, module_globals: dict, functions, methods,
                    return_types: dict, method_overrides: dict | None = None) -> None:
    """Register one module's ops: the named-tuple result types, `functions` into `namespace`
    (tapegrad's globals) and `methods` onto `tensor_cls`, taken from `module_globals`; a method
    in `method_overrides` uses that callable instead of wrapping the function.  Existing names
    win, so the compiled core's own versions are never replaced."""
    register_return_types(return_types)
    for name in functions:
        namespace.setdefault(name, module_globals[name])
    overrides = method_overrides or {}
    for name in methods:
        if not has_member(tensor_cls, name):
            setattr(tensor_cls, name, overrides.get(name) or _method(name, module_globals[name]))


def register(namespace: dict, tensor_cls) -> None:
    """Add the functions and constants PyTorch has and tapegrad lacks to `namespace` (the
    tapegrad module's globals) and the methods to `tensor_cls`; existing names win."""
    register_family(namespace, tensor_cls, globals(), FUNCTIONS, METHODS,
                    {"sort": ("values", "indices"), "topk": ("values", "indices"),
                     "histogram": ("hist", "bin_edges"), "histogramdd": ("hist", "bin_edges"),
                     "aminmax": ("min", "max")},
                    {"flip": _packed_sequence_method("flip", "dims", flip),
                     "broadcast_to": _packed_sequence_method("broadcast_to", "size", broadcast_to)})
    for name, value in CONSTANTS.items():
        namespace.setdefault(name, value)
    for name in IN_PLACE:
        if not has_member(tensor_cls, name + "_"):
            setattr(tensor_cls, name + "_", _in_place(name))
    for name in IN_PLACE_FUNCTIONS:
        namespace.setdefault(name + "_", getattr(tensor_cls, name + "_"))
