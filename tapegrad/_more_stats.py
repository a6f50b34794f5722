"""Order statistics, moments, running extremes, integration and binning (issue 15), in Python.

Which element answers (the median's index, a quantile's two neighbours, the running maximum's
position) is decided in numpy; the values are then gathered from the input by recorded ops, so
gradients flow to exactly the elements PyTorch's backward sends them to.  logcumsumexp is an
autograd.Function (_more_functions.py): its values need numpy's exact running logaddexp.

Functions are registered in the tapegrad namespace and, where PyTorch has one, as Tensor
methods by `register` (called from tapegrad/__init__.py); names that already exist are left
alone.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import numpy as np

from . import _core
from ._ops_reduce import MOMENT_SIGNATURES
from ._complex import refuse_if_complex
from ._extra_ops import (values_at, _check_tensor, _dim, _int_argument, _dtype_name, _index_tensor, _no_dims,
                         _numpy_dim_names, _records, _wrap, register_family)
from ._out_arg import compute_then_write, write_into
from .creation import _is_number_argument

TensorBase = _core.TensorBase


# -- median --------------------------------------------------------------------------------------

def _median_order(arr: np.ndarray, ignore_nan: bool) -> np.ndarray:
    """Index, along the last axis of arr, of each row's lower median.  NaN sorts last; median
    answers a NaN (the first one) for a row holding any, nanmedian skips them (a row of NaNs
    answers the element PyTorch's selection leaves first: _all_equal_selection)."""
    n = arr.shape[-1]
    valid = (~np.isnan(arr)).sum(-1) if arr.dtype.kind == "f" else np.full(arr.shape[:-1], n)
    if ignore_nan:
        rank = np.maximum(valid - 1, 0) // 2
    else:
        rank = np.where(valid < n, valid, (n - 1) // 2)
    position = _stable_rank_position(arr, rank)
    if ignore_nan and n:
        position = np.where(valid == 0, _all_equal_selection(n), position)
    return position


def _stable_rank_position(arr: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Index, along the last axis of arr, of the element at position `rank` (one per row, the
    shape of arr without its last axis) of the row's stable ascending order (NaN last), in O(n)
    per row: a partition finds the value t there; of the elements equal to t, the answer is
    the one whose occurrence (by index) is rank minus the count of elements below t."""
    n = arr.shape[-1]
    rows, ranks = arr.reshape(-1, n), np.asarray(rank).reshape(-1, 1)
    if rows.size == 0:
        return np.zeros(rank.shape, dtype=np.int64)
    t = np.take_along_axis(np.partition(rows, np.unique(ranks), axis=1), ranks, 1)
    equal = rows == t
    nan = rows.dtype.kind == "f" and np.isnan(t).any()
    if nan:                             # NaNs are equal in the order
        equal |= np.isnan(rows) & np.isnan(t)
    position = equal.argmax(1)
    # (one total count first: the per-row counts and cumsum cost more than the rest together)
    if np.count_nonzero(equal) != len(rows):
        tied = np.flatnonzero(np.count_nonzero(equal, axis=1) > 1)
        sub, sub_t, sub_equal = rows[tied], t[tied], equal[tied]
        below = sub < sub_t
        if nan:
            below |= np.isnan(sub_t) & ~np.isnan(sub)
        occurrence = ranks[tied] - np.count_nonzero(below, axis=1)[:, None] + 1
        position[tied] = (sub_equal & (np.cumsum(sub_equal, axis=1) == occurrence)).argmax(1)
    return position.reshape(np.shape(rank))


def _all_equal_selection(n: int) -> int:
    """The index std::nth_element (libstdc++'s introselect, which PyTorch's CPU nanmedian uses)
    leaves at position 0 of n elements that all compare equal (a row of NaNs): each round swaps
    the middle element to the front as the pivot and partitions by swapping from both ends."""
    index = list(range(n))
    first, last = 0, n
    while last - first > 3:         # (equal elements split evenly: the depth limit never bites)
        middle = first + (last - first) // 2
        index[first], index[middle] = index[middle], index[first]
        low, high = first + 1, last
        while True:
            high -= 1
            if low >= high:
                break
            index[low], index[high] = index[high], index[low]
            low += 1
        if low <= 0:
            first = low
        else:
            last = low
    return index[0]


def _median(name: str, input, dim, keepdim: bool, out, ignore_nan: bool):
    _check_tensor(input, name)
    _core.check_bool(name, "keepdim", keepdim)
    refuse_if_complex("median", input)
    arr = input._array
    if arr.dtype == np.bool_ and (dim is None or arr.ndim == 0 or
                                  arr.shape[_dim(dim, arr.ndim, name)] != 0):
        # (one kernel for both, named median's: "median_cpu" for all elements, "median_out"
        # along a dim; an empty dim is refused first, below, as PyTorch's, fuzz 67401254)
        kernel = "median_cpu" if dim is None else "median_out"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    if dim is None:
        if keepdim:
            raise TypeError(f"{name}() missing 1 required positional arguments: \"dim\"")
        if out is not None:
            return compute_then_write(name, out, (input,),
                                      lambda: _median(name, input, None, False, None, ignore_nan))
        if arr.size == 0:
            # (an integer tensor's "NaN" is PyTorch's lowest value of the type)
            empty = np.nan if arr.dtype.kind == "f" else np.iinfo(arr.dtype).min
            value, mask = np.array(empty, dtype=arr.dtype), np.zeros(arr.shape, dtype=bool)
        else:
            value = arr.reshape(-1)[_median_order(arr.reshape(-1), ignore_nan)]
            mask = (arr == value) | (np.isnan(arr) & np.isnan(value) if arr.dtype.kind == "f"
                                     else False)
        if not _records(input):
            return _wrap(np.asarray(value))
        from ._more_functions import EvenlyDistributed
        result = EvenlyDistributed.apply(input, np.asarray(value), mask)
        if ignore_nan:
            _core._name_grad_fn(result, "NanmedianBackward0")   # (its own node in PyTorch)
        # PyTorch's node saves the input and the result (evenly_distribute_backward reads
        # both): a write into either makes backward raise; the mask here is a copy
        _core._guard_saved_version(result, input, result)
        return result
    result_type = getattr(_core.return_types, name)
    if out is not None:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors")
        if isinstance(out[1], TensorBase) and out[1]._array.dtype != np.int64:
            raise RuntimeError(f"Expected tensor for argument #1 'indices' to have scalar type "
                               f"Long; but got torch.{out[1].type().split('.')[-1]} instead "
                               f"(while checking arguments for {name})")
        return compute_then_write(name, tuple(out), (input,),
                                  lambda: _median(name, input, dim, keepdim, None, ignore_nan))
    d = _dim(dim, input.ndim, name)
    node = "NanmedianBackward1" if ignore_nan else "MedianBackward1"    # (the dim overload's)
    if input.ndim == 0:
        return result_type((_core._name_grad_fn(input.clone(), node), _index_tensor(0)))
    if arr.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    rows = np.moveaxis(arr, d, -1)
    position = np.expand_dims(_median_order(rows, ignore_nan), d)
    indices = _index_tensor(position if keepdim else np.squeeze(position, d))
    values = values_at(input, d, indices, keepdim)
    if not keepdim:
        # (in place, as PyTorch: its values are no view, so an in-place write into the result
        # of a no_grad call is allowed; fuzz 63009249's siblings)
        values = values.squeeze_(d)
    return result_type((_core._name_grad_fn(values, node), indices))


# median's and nanmedian's dim when the call gives none: PyTorch's signatures take `int dim`, whose
# parser refuses None (x.median(dim=None) is a TypeError, not the median of every element)
_NO_DIM = object()


def _given_dim(name: str, dim):
    if dim is _NO_DIM:
        return None
    if dim is None:
        raise TypeError(f"{name}(): argument 'dim' must be int, not NoneType")
    return dim


@_numpy_dim_names
def median(input, dim=_NO_DIM, keepdim=False, *, out=None):
    """The lower median of all elements (NaN if any is NaN), or (values, indices) of the lower
    median along dim."""
    return _median("median", input, _given_dim("median", dim), keepdim, out, ignore_nan=False)


@_numpy_dim_names
def nanmedian(input, dim=_NO_DIM, keepdim=False, *, out=None):
    """median ignoring NaNs (NaN only where every element is NaN)."""
    return _median("nanmedian", input, _given_dim("nanmedian", dim), keepdim, out,
                   ignore_nan=True)


@_numpy_dim_names
def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """(values, indices) of the k-th smallest element (k from 1) along dim; NaN sorts last."""
    _check_tensor(input, "kthvalue")
    k = _int_argument(k, "kthvalue", "k", 2)
    _core.check_bool("kthvalue", "keepdim", keepdim)
    refuse_if_complex("kthvalue", input)
    arr = input._array
    d = _dim(dim, input.ndim, "kthvalue")
    size = arr.shape[d] if arr.ndim else 1
    if size == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    # (after the size check, as PyTorch's kernel; a 0-d tensor is its own answer, of any
    # dtype: PyTorch copies it without reaching the kernel, fuzz 67302293, 67303034)
    if arr.dtype == np.bool_ and arr.ndim:
        raise NotImplementedError("\"kthvalue_cpu\" not implemented for 'Bool'")
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if out is not None:
        return compute_then_write("kthvalue", tuple(out), (input,),
                                  lambda: kthvalue(input, k, dim, keepdim))
    result_type = _core.return_types.kthvalue
    if input.ndim == 0:
        return result_type((_core._name_grad_fn(input.clone(), "KthvalueBackward0"),
                            _index_tensor(0)))
    position = _kth_positions(arr, k - 1, d)
    indices = _index_tensor(position if keepdim else np.squeeze(position, d))
    values = values_at(input, d, indices, keepdim)
    if not keepdim:
        # (in place, as PyTorch: its values are no view, so an in-place write into the result
        # of a no_grad call is allowed; fuzz 63009249's siblings)
        values = values.squeeze_(d)
    return result_type((_core._name_grad_fn(values, "KthvalueBackward0"), indices))


def _greater_or_nan(x, y) -> bool:
    """PyTorch's selection order: NaN above everything, equal NaNs not greater."""
    return (x != x and y == y) or x > y


def _quick_select_index(row: list, k: int) -> int:
    """The index PyTorch's CPU kthvalue answers for rank k (0-based) of one row: Sedgewick's
    quickselect with a median-of-three pivot, whose swaps decide which of several equal values
    (and so which element receives the gradient) is the answer."""
    values, index = list(row), list(range(len(row)))

    def swap(i, j):
        values[i], values[j] = values[j], values[i]
        index[i], index[j] = index[j], index[i]

    low, high = 0, len(values) - 1
    while high > low:
        if high == low + 1:
            if _greater_or_nan(values[low], values[high]):
                swap(low, high)
            break
        swap((low + high) >> 1, low + 1)
        if _greater_or_nan(values[low + 1], values[high]):
            swap(low + 1, high)
        if _greater_or_nan(values[low], values[high]):
            swap(low, high)
        if _greater_or_nan(values[low + 1], values[low]):
            swap(low + 1, low)
        i, j, pivot = low + 1, high, values[low]
        while True:
            i += 1
            while _greater_or_nan(pivot, values[i]):
                i += 1
            j -= 1
            while _greater_or_nan(values[j], pivot):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(low, j)
        if j <= k:
            low = i
        if j >= k:
            high = j - 1
    return index[k]


def _kth_positions(arr: np.ndarray, k: int, axis: int) -> np.ndarray:
    """Index along `axis` (kept, size 1) of each row's k-th smallest value (0-based, NaN largest).
    A value held once has one index; where several elements hold the k-th value, PyTorch's
    quickselect decides which, so those rows (only) replay it.  The compiled kernel runs that
    quickselect on every row (the same answers, 10-50x faster where rows hold ties); this numpy
    path remains for the dtypes it does not take."""
    fast = _core._kth_positions_c(arr, k, axis)
    if fast is not None:
        return fast
    moved = np.moveaxis(arr, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    chosen = np.partition(rows, k, axis=-1)[:, k, None]
    same = rows == chosen
    if rows.dtype.kind == "f":
        same |= np.isnan(rows) & np.isnan(chosen)
    position = same.argmax(-1)          # (the only one, where one element holds the value)
    tied = (np.flatnonzero(np.count_nonzero(same, axis=1) > 1)
            if np.count_nonzero(same) != len(rows) else ())       # (one total count first)
    for row in tied:
        position[row] = _quick_select_index(rows[row].tolist(), k)
    return np.expand_dims(position.reshape(moved.shape[:-1]), axis)


def msort(input):
    """input sorted along its first dim (the values of sort(input, 0))."""
    _check_tensor(input, "msort")
    from . import sort
    return sort(input, 0).values


# -- quantiles -----------------------------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name: str, input, q, dim, keepdim: bool, interpolation: str, out,
              ignore_nan: bool):
    _check_tensor(input, name)
    _core.check_bool(name, "keepdim", keepdim)
    arr = input._array
    if arr.size == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if arr.dtype.kind != "f" or arr.dtype == np.float16:
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if isinstance(q, TensorBase):
        qs = q._array
        if qs.dtype != arr.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        if qs.ndim > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        if not bool(np.all((qs >= 0) & (qs <= 1))):
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
    elif isinstance(q, (int, float, np.floating, np.integer)) and not isinstance(q, bool):
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
        qs = np.array(q, dtype=arr.dtype)
    else:
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"(Tensor, {_type_name(q)}), but expected one of: (Tensor input, "
                        f"Tensor q, ...), (Tensor input, float q, ...)")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if out is not None:
        return compute_then_write(name, out, (input, q), lambda: _quantile(
            name, input, q, dim, keepdim, interpolation, None, ignore_nan))
    from . import sort
    from ._extra_ops import lerp
    if dim is None:
        rows = input.reshape(-1)
        kept_shape = [1] * input.ndim
    else:
        d = _dim(dim, input.ndim)
        rows = (input.reshape(1) if input.ndim == 0 else input).movedim(d, -1)
        kept_shape = list(input.shape)
        if input.ndim:
            kept_shape[d] = 1
    ordered = sort(rows, -1).values                 # NaN last; a differentiable gather
    values = ordered._array
    n = values.shape[-1]
    # Ranks in the input's dtype, as PyTorch computes them (float32 rounding included).
    if ignore_nan:
        count = (~np.isnan(values)).sum(-1, keepdims=True).astype(arr.dtype)
        slope = count - 1
        ranks = np.maximum(qs.reshape(-1) * slope, 0)
        fixed = qs.reshape(-1) * slope < 0      # (ranks clamped to 0: constant in q)
    else:
        slope = np.array(n - 1, dtype=arr.dtype)
        ranks = qs.reshape(-1) * slope
        ranks = np.broadcast_to(ranks, values.shape[:-1] + ranks.shape)
        fixed = np.isnan(values).any(-1, keepdims=True)     # (a NaN row's rank is n - 1)
        ranks = np.where(fixed, arr.dtype.type(n - 1), ranks)
    ranks = ranks.astype(arr.dtype)
    if interpolation in ("lower", "higher", "nearest"):
        pick = {"lower": np.floor, "higher": np.ceil, "nearest": np.round}[interpolation]
        result = ordered.gather(-1, _index_tensor(pick(ranks)))
    else:
        below = np.floor(ranks)
        weights = ranks - below if interpolation == "linear" else np.where(ranks > below, 0.5, 0)
        weights = _wrap(weights.astype(arr.dtype))
        if interpolation == "linear" and isinstance(q, TensorBase) and q.requires_grad \
                and _core.is_grad_enabled():
            # the linear weight is q * slope - floor(rank), so q has a gradient (PyTorch's
            # ranks are tensor ops on q); the same products in the same dtype give the same
            # weights bit for bit, constant where the rank did not come from q
            from . import where
            moving = q.reshape(-1) * _wrap(slope.astype(arr.dtype)) - _wrap(below.astype(arr.dtype))
            weights = where(_wrap(np.asarray(fixed)), weights, moving)
        low = ordered.gather(-1, _index_tensor(below))
        high = ordered.gather(-1, _index_tensor(np.ceil(ranks)))
        result = lerp(low, high, weights)
    # result: (..., len(q)) -> (len(q), ...) with the reduced dim kept or dropped.
    result = result.movedim(-1, 0)
    if keepdim:
        result = result.reshape(result.shape[0], *kept_shape)
    result = result[0] if qs.ndim == 0 else result
    # PyTorch's result is no view (it squeezes in place): an in-place write into a quantile
    # taken under no_grad is allowed there (fuzz 63009249), refused into a view here; its node
    # is that in-place squeeze's, whatever the arguments
    result = result.clone() if result._base is not None else result
    return _core._name_grad_fn(result, "SqueezeBackward4")


@_numpy_dim_names
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles of input (all elements, or along dim); NaN where a row holds a NaN.
    A 1-d q adds a leading dim of its length."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, out, ignore_nan=False)


@_numpy_dim_names
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """quantile ignoring NaNs (NaN only where a row is all NaN)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, out, ignore_nan=True)


# -- moments ------------------------------------------------------------------------------------

def _moment_accumulation(input):
    """The dtype PyTorch's CPU var_mean / std_mean accumulate `input` in, where it is wider
    than input's: float64 for float32, float32 for float16 (None otherwise; a bfloat16
    tensor's ops already compute in float32 and round once)."""
    if getattr(type(input), "_dtype_class", False):
        return None
    from . import float32, float64
    return {np.float32: float64, np.float16: float32}.get(input._array.dtype.type)


def _moment_mean(name: str, reducer: str, input, dim, unbiased, keepdim, correction, out):
    _check_tensor(input, name)
    _core.check_bool(name, "keepdim", keepdim, 0, MOMENT_SIGNATURES)
    if input._array.dtype.kind not in "fc":
        raise RuntimeError(f"{name} only support floating point and complex dtypes")
    if isinstance(dim, bool):           # the (input, unbiased) overload
        dim, unbiased = None, dim
    elif unbiased is not None:
        _core.check_bool(name, "unbiased", unbiased, 0, MOMENT_SIGNATURES)
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{name}: can't specify both unbiased and correction")
    if correction is None:
        correction = 1 if unbiased is None else int(bool(unbiased))
    if out is not None:
        return compute_then_write(name, tuple(out), (input,), lambda: _moment_mean(
            name, reducer, input, dim, None, keepdim, correction, None))
    if dim is not None and not isinstance(dim, (list, tuple)):
        dim = (dim,)
    spread = getattr(input, reducer)(dim, keepdim=keepdim, correction=correction)
    # PyTorch's mean here is its Welford accumulator's, kept in the variance's accumulation
    # dtype (float64 for float32, float32 for the half types) and rounded once: float32's own
    # mean, a float32 sum divided by n, was an ulp off (its gradient, g / n, is the same either
    # way: one correctly rounded division)
    acc = _moment_accumulation(input)
    source = input if acc is None else input.to(acc)
    centre = source.mean(dim, keepdim) if dim is not None else source.mean()
    if acc is not None:
        centre = centre.to(input.dtype)
    if dim is None and keepdim:
        centre = centre.reshape([1] * input.ndim)
    # (one node in PyTorch with two outputs, VarMeanBackward0; two records here, both so named)
    node = "VarMeanBackward0" if reducer == "var" else "StdMeanBackward0"
    return _core._name_grad_fn(spread, node), _core._name_grad_fn(centre, node)


@_numpy_dim_names
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """(variance, mean) of input over dim (all elements by default); correction (or unbiased)
    as in var."""
    return _moment_mean("var_mean", "var", input, dim, unbiased, keepdim, correction, out)


@_numpy_dim_names
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """(standard deviation, mean) of input over dim (all elements by default)."""
    return _moment_mean("std_mean", "std", input, dim, unbiased, keepdim, correction, out)


# -- running extremes and log-sum-exp ------------------------------------------------------------

def _running_extreme_positions(arr: np.ndarray, axis: int, maximum: bool) -> np.ndarray:
    """For each position along axis, the index of the running max (min) so far: a later tie
    takes over, and a NaN takes over and then holds (later NaNs take over from it).
    Vectorised (a loop over the positions took 20 s for a million elements): the running
    extreme never moves back, so position j takes over exactly where arr[j] equals the running
    extreme at j (or is a NaN), and the answer at i is the last such j <= i."""
    if arr.shape[axis] == 0:
        return np.zeros(arr.shape, dtype=np.int64)
    fast = _core._running_extreme_c(arr, axis, maximum)     # (the same rule, one C scan)
    if fast is not None:
        return fast
    with np.errstate(invalid="ignore"):
        running = (np.maximum if maximum else np.minimum).accumulate(arr, axis=axis)
        takes = arr == running          # (numpy's extreme propagates a NaN, as the scan does)
    if arr.dtype.kind == "f":
        takes |= np.isnan(arr)
    shape = [1] * arr.ndim
    shape[axis] = arr.shape[axis]
    at = np.arange(arr.shape[axis], dtype=np.int64).reshape(shape)
    # (position 0 always takes: it is the running extreme of itself)
    return np.maximum.accumulate(np.where(takes, at, 0), axis=axis)


def _cumulative_extreme(name: str, input, dim, out, maximum: bool):
    _check_tensor(input, name)
    refuse_if_complex(name, input)
    # PyTorch's kernel returns for a tensor without elements before it wraps dim: any int goes
    empty = input.numel() == 0 and isinstance(dim, int) and not isinstance(dim, bool)
    d = None if empty else _dim(dim, input.ndim, name)
    if out is not None:
        return compute_then_write(name, tuple(out), (input,),
                                  lambda: _cumulative_extreme(name, input, dim, None, maximum))
    result_type = getattr(_core.return_types, name)
    node = "CummaxBackward0" if maximum else "CumminBackward0"
    if empty:
        result = result_type((input.clone(), _index_tensor(np.zeros(input.shape, np.int64))))
    elif input.ndim == 0:
        result = result_type((_core._name_grad_fn(input.clone(), node), _index_tensor(0)))
    else:
        positions = _index_tensor(_running_extreme_positions(input._array, d, maximum))
        return result_type((_core._name_grad_fn(input.gather(d, positions), node), positions))
    # PyTorch's CummaxBackward0 saves the input (gather's record keeps it; a clone does not)
    _core._guard_saved_version(result, input)
    return result


@_numpy_dim_names
def cummax(input, dim, *, out=None):
    """(values, indices) of the running maximum along dim (the latest position of a tie; NaN
    propagates)."""
    return _cumulative_extreme("cummax", input, dim, out, maximum=True)


@_numpy_dim_names
def cummin(input, dim, *, out=None):
    """(values, indices) of the running minimum along dim."""
    return _cumulative_extreme("cummin", input, dim, out, maximum=False)


def _logcumsumexp_array(arr: np.ndarray, axis: int) -> np.ndarray:
    """log(cumsum(exp(arr))) along axis, exact for any range (a running logaddexp in float64)."""
    if arr.ndim == 0:
        return arr.copy()
    if arr.dtype.kind == "c":
        return _complex_logcumsumexp_array(arr, axis)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.logaddexp.accumulate(arr.astype(np.float64), axis=axis).astype(arr.dtype)


def _complex_logcumsumexp_array(arr: np.ndarray, axis: int) -> np.ndarray:
    """The complex running log(exp(acc) + exp(x)) (numpy's logaddexp is real only), in
    complex128, as PyTorch's scan: it starts from acc = -inf+0j, takes max/min by real part (the
    accumulator is min on a tie), and factors out exp(max) so that neither exp overflows.  Where
    both real parts are -inf the sum is 0 and its phase is undefined: PyTorch keeps min's (so a
    leading log(0) of any phase gives -inf+0j); a NaN in either operand gives NaN+NaNj."""
    x = np.moveaxis(arr.astype(np.complex128), axis, 0)
    out = np.empty_like(x)
    acc = np.full(x.shape[1:], complex(-np.inf, 0.0))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for k in range(len(x)):
            b = x[k]
            b_is_min = b.real < acc.real
            lo = np.where(b_is_min, b, acc)
            hi = np.where(b_is_min, acc, b)
            step = hi + np.log1p(np.exp(lo - hi))
            same_inf = ~np.isfinite(lo.real) & (lo.real == hi.real)
            both_inf = np.where(lo.real < 0, lo, np.log(np.exp(lo) + np.exp(hi)))
            acc = np.where(np.isnan(lo) | np.isnan(hi), complex(np.nan, np.nan),
                           np.where(same_inf, both_inf, step))
            out[k] = acc
    return np.moveaxis(out, 0, axis).astype(arr.dtype)


@_numpy_dim_names
def logcumsumexp(input, dim, *, out=None):
    """log(cumsum(exp(input))) along dim, computed without overflow or underflow."""
    _check_tensor(input, "logcumsumexp")
    arr = input._array
    d = _dim(dim, input.ndim, "logcumsumexp")      # (PyTorch wraps the dim before its kernel)
    if arr.dtype.kind not in "fc":
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for "
                                  f"'{_dtype_name(arr)}'")
    if out is not None:
        return compute_then_write("logcumsumexp", out, (input,),
                                  lambda: logcumsumexp(input, dim))
    if _records(input):
        from ._more_functions import LogCumSumExp
        return LogCumSumExp.apply(input, d)
    return _wrap(_logcumsumexp_array(arr, d))


# -- integration ---------------------------------------------------------------------------------

def _integration_spacing(name: str, y, x, dx, d: int):
    """The spacing between samples along dim d: a number, or a tensor of differences of x
    (1-d x runs along d; otherwise x broadcasts with y)."""
    if x is not None and dx is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"(Tensor, Tensor, dx={_type_name(dx)}), but expected one of: "
                        f"(Tensor y, Tensor x, *, int dim), (Tensor y, *, Number dx, int dim)")
    reported = "trapezoid" if name == "trapz" else name
    if x is None:
        if y._array.dtype == np.bool_:
            raise RuntimeError(f"{reported}: received a bool input for `y`, but bool is not "
                               "supported")
        return 1 if dx is None else dx
    if isinstance(x, TensorBase):
        _check_tensor(x, name, "x", 2)
        if y._array.dtype == np.bool_ or x._array.dtype == np.bool_:
            raise RuntimeError(f"{reported}: received a bool input for `x` or `y`, but bool is "
                               "not supported")
    else:
        raise TypeError(f"{name}(): argument 'x' (position 2) must be Tensor, not "
                        f"{_type_name(x)}")
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{'trapezoid' if name == 'trapz' else name}: There must be one "
                               f"`x` value for each sample point")
        steps = x.diff()
        view = [1] * y.ndim
        view[d] = -1
        return steps.reshape(view)
    from ._extra_ops import diff
    return diff(x, dim=d - y.ndim)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule's integral of y along dim, with sample points x or spacing dx
    (default 1)."""
    _check_tensor(y, "trapezoid", "y", 1)
    if y.ndim == 0:
        _no_dims(dim)
    d = _dim(dim, y.ndim)
    n = y.shape[d]
    if n == 0:
        # PyTorch answers zero samples before it reads x or dx: zeros of y's own dtype (an
        # integer or bool y too; the sum's int64 was returned), requiring no grad
        from .creation import zeros
        return zeros(tuple(y.shape[:d]) + tuple(y.shape[d + 1:]), dtype=y.dtype)
    spacing = _integration_spacing("trapezoid", y, x, dx, d)
    pair_sums = y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)
    # (PyTorch's last step divides or multiplies by a Python number: its DivBackward1 and
    # MulBackward1 nodes, not the tensor forms')
    if isinstance(spacing, TensorBase):
        return _core._name_grad_fn((spacing * pair_sums).sum(d) / 2, "DivBackward1")
    # Constant spacing: PyTorch's form (sum minus half the ends) keeps integers integral.
    ends = (y.select(d, 0) + y.select(d, n - 1)) * 0.5
    return _core._name_grad_fn((y.sum(d) - ends) * spacing, "MulBackward1")


def trapz(y, x=None, *, dx=None, dim=-1):
    """The older name of trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid-rule integral of y along dim (one fewer element than y)."""
    _check_tensor(y, "cumulative_trapezoid", "y", 1)
    if y.ndim == 0:
        if x is None and y._array.dtype == np.bool_:   # (its bool refusal comes first)
            _integration_spacing("cumulative_trapezoid", y, x, dx, 0)
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = _dim(dim, y.ndim)
    spacing = _integration_spacing("cumulative_trapezoid", y, x, dx, d)
    n = y.shape[d]
    if n == 0:
        return y.narrow(d, 0, 0) * 1.0 if y._array.dtype.kind in "biu" else y.narrow(d, 0, 0) * 1
    pair_sums = y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)
    return (spacing * pair_sums / 2).cumsum(d)


# -- binning ------------------------------------------------------------------------------------

def _binary_search(name: str, boundaries, values, out_int32: bool, right: bool, sorter, out,
                   values_is_scalar: bool):
    b = boundaries._array
    v = np.asarray(values._array if isinstance(values, TensorBase) else values)
    if b.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    # PyTorch compares in the two sides' result type, with a kernel for real numbers only (its
    # bucketize is its searchsorted, whose name the error carries).  A Python number or a 0-d
    # tensor of values converts to the boundaries' dtype: 0.1 finds float32 0.1 (numpy's
    # promotion had compared it in float64, a silently other index).
    common = _core.result_type(boundaries, values).np_dtype
    if common == np.bool_ or common.kind == "c":
        raise NotImplementedError(f"\"searchsorted_out_cpu\" not implemented for "
                                  f"'{_dtype_name(np.empty(0, common))}'")
    with _core.IeeeResults():
        b, v = b.astype(common, copy=False), v.astype(common, copy=False)
    if b.ndim > 1:
        if values_is_scalar:
            raise RuntimeError(f"torch.searchsorted(): input value can be a scalar only when "
                               f"boundaries tensor dimension is 1, but we got boundaries tensor "
                               f"dim({b.ndim}) and input value's dim({v.ndim}) numel({v.size})")
        if b.shape[:-1] != v.shape[:-1]:
            raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or "
                               f"the first N-1 dimensions of boundaries tensor and input value "
                               f"tensor must match, but we got boundaries tensor "
                               f"{list(b.shape)} and input value tensor {list(v.shape)}")
    if sorter is not None:
        s = sorter._array
        if s.dtype != np.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but "
                               f"got dtype {_dtype_name(s)}")
        if s.shape != b.shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(b.shape)}and got sorter "
                               f"tensor {list(s.shape)}")
        if s.size and (s.min() < 0 or s.max() >= b.shape[-1]):
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
        b = np.take_along_axis(b, s, -1)
    if b.ndim == 1:
        found = _bisect(b.reshape(1, -1), v.reshape(1, -1), right).reshape(v.shape)
    else:
        count = int(np.prod(b.shape[:-1]))
        # (an empty batch has no rows: numpy cannot infer a -1 of a zero-row reshape)
        found = _bisect(b.reshape(count, b.shape[-1]),
                        v.reshape(count, v.size // count if count else 0),
                        right).reshape(v.shape)
    result = _wrap(np.asarray(found, dtype=np.int32 if out_int32 else np.int64))
    if out is not None:
        wanted = np.int32 if out_int32 else np.int64
        if not isinstance(out, TensorBase) or out._array.dtype != wanted:
            got = _dtype_name(out._array) if isinstance(out, TensorBase) else type(out).__name__
            raise RuntimeError(f"torch.searchsorted(): output tensor's dtype is wrong, it can "
                               f"only be Int(int32) or Long(int64) depending on whether "
                               f"out_int32 flag is True, but we got output tensor's dtype {got} "
                               f"and out_int32 flag is {out_int32}")
        return write_into(name, out, result)
    return result


# PyTorch's signatures of searchsorted and bucketize, which its parser lists for a call that fits
# none (out_int32=1: an int is no bool)
_SEARCHSORTED_SIGNATURES = "".join(
    f" * (Tensor sorted_sequence, {kind} {name}, *, bool out_int32 = False, bool right = False, "
    "str side = None, Tensor sorter = None, Tensor out = None)\n"
    for kind, name in (("Tensor", "input"), ("Number", "self")))
_BUCKETIZE_SIGNATURES = "".join(
    f" * ({kind} {name}, Tensor boundaries, *, bool out_int32 = False, bool right = False"
    f"{out})\n" for kind, name, out in (("Tensor", "input", ", Tensor out = None"),
                                        ("Number", "self", "")))


def _check_binary_search_flags(name: str, out_int32, right, overloads: str) -> None:
    _core.check_bool(name, "out_int32", out_int32, 0, overloads)
    _core.check_bool(name, "right", right, 0, overloads)


def _check_values_argument(name: str, values, given: tuple, overloads: str) -> None:
    """The values searched for are a Tensor or a Number in PyTorch's two overloads: anything else
    (a list, None, a string) fits neither, and its parser lists them (before the dtype promotion
    of values with the boundaries would refuse it under result_type's name)."""
    if not _is_number_argument(values):
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({', '.join(map(_type_name, given))}), but expected one of:\n"
                        f"{overloads}")


def _bisect(rows_b: np.ndarray, rows_v: np.ndarray, right: bool) -> np.ndarray:
    """For each value of row i of rows_v, PyTorch's binary search in row i of rows_b: the first
    position whose boundary is >= the value (> with right), moving right while that comparison
    is false.  Written as PyTorch's loop rather than numpy's searchsorted, which orders NaN last:
    boundaries holding NaN (or out of order) then give PyTorch's positions, not numpy's."""
    fast = _core._bisect_c(rows_b, rows_v, right)       # (the same loop in C, where it applies)
    if fast is not None:
        return fast
    n = rows_b.shape[-1]
    start = np.zeros(rows_v.shape, dtype=np.int64)
    end = np.full(rows_v.shape, n, dtype=np.int64)
    if n == 0:
        return start
    while True:
        active = start < end
        if not active.any():
            return start
        mid = start + ((end - start) >> 1)
        bound = np.take_along_axis(rows_b, np.minimum(mid, n - 1), axis=-1)
        with np.errstate(invalid="ignore"):
            past = ~(bound > rows_v) if right else ~(bound >= rows_v)
        start = np.where(active & past, mid + 1, start)
        end = np.where(active & ~past, mid, end)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None, out=None):
    """For each value of input, the index where it would be inserted into the innermost dim of
    sorted_sequence to keep it sorted (after equal values with right / side='right')."""
    _check_tensor(sorted_sequence, "searchsorted", "sorted_sequence", 1)
    _check_binary_search_flags("searchsorted", out_int32, right, _SEARCHSORTED_SIGNATURES)
    _check_values_argument("searchsorted", input, (sorted_sequence, input),
                           _SEARCHSORTED_SIGNATURES)
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    scalar = not isinstance(input, TensorBase)
    return _binary_search("searchsorted", sorted_sequence, input, bool(out_int32), bool(right),
                          sorter, out, scalar)


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The index of the bucket of each value of input among the 1-d boundaries: i with
    boundaries[i-1] < x <= boundaries[i] (or boundaries[i-1] <= x < boundaries[i] with right)."""
    _check_tensor(boundaries, "bucketize", "boundaries", 2)
    _check_binary_search_flags("bucketize", out_int32, right, _BUCKETIZE_SIGNATURES)
    _check_values_argument("bucketize", input, (input, boundaries), _BUCKETIZE_SIGNATURES)
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.ndim})")
    return _binary_search("bucketize", boundaries, input, bool(out_int32), bool(right), None,
                          out, not isinstance(input, TensorBase))


# -- registration --------------------------------------------------------------------------------

FUNCTIONS = ("median", "nanmedian", "kthvalue", "msort", "quantile", "nanquantile", "var_mean",
             "std_mean", "cummax", "cummin", "logcumsumexp", "trapezoid", "trapz",
             "cumulative_trapezoid", "searchsorted", "bucketize")
METHODS = ("median", "nanmedian", "kthvalue", "msort", "quantile", "nanquantile", "cummax",
           "cummin", "logcumsumexp")
RETURN_TYPES = {name: ("values", "indices")
                for name in ("kthvalue", "median", "nanmedian", "cummax", "cummin")}


def register(namespace: dict, tensor_cls) -> None:
    """Add the functions to `namespace` (tapegrad's globals) and the methods to `tensor_cls`;
    existing names win."""
    register_family(namespace, tensor_cls, globals(), FUNCTIONS, METHODS, RETURN_TYPES)
