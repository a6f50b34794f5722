"""The scatter family: scatter / scatter_add / scatter_reduce, index_put / index_add /
index_copy / index_fill, their in-place forms, built on the compiled core.

Writes that overwrite (scatter with src or value, index_put without accumulate, index_copy,
index_fill) are a clone and the core's recorded `x[key] = v` (CopySlices): the overwritten
elements get no gradient and the written values get the gradient at their positions, as in
PyTorch.  Writes that accumulate (scatter_add, index_add, index_put with accumulate=True,
scatter_reduce) need np.*.at, so they are small autograd.Functions (_scatter_functions.py, loaded
on first use).  An in-place form computes the out-of-place result and copies it into self with
copy_, which applies the project's rules for in-place writes (leaf, view and version checks) and
records the copy when a gradient must flow through it.

Every op turns its arguments into one numpy advanced-index key into self (see _scatter_key and
_index_dim_key) after checking them as PyTorch does, with its exception types and messages.
"""
from __future__ import annotations as _annotations

import numbers

import numpy as np

from . import _core, _ops_shape
from ._class_members import has_member
from ._extra_ops import _fill_stretched, _leaf_error_first, _numpy_dim_names, _stretched
from .grad_mode import is_grad_enabled
from ._saved_indices import saves_index_args

TensorBase = _core.TensorBase


def _type_name(arr) -> str:
    return _core.scalar_type_name_of(arr.dtype)


def _records(*tensors) -> bool:
    return is_grad_enabled() and any(isinstance(t, TensorBase) and t.requires_grad
                                     for t in tensors)


def _in_place_source(self, *operands, shared_ok=False):
    """What an in-place op computed here from its out-of-place form reads: a copy of self when
    the op records (it may save its input, which the write into self then overwrites), else
    self (or, for a view overlapping itself, overlap_operand's copy).  `shared_ok`: the op is
    one PyTorch runs on a tensor whose elements share memory (index_fill_, index_put_)."""
    if _records(self, *operands):
        return _core._in_place_operand(self, shared_ok)
    return _core._overlap_operand(self, shared_ok)


def _refuse_shared_source(self, *operands):
    """PyTorch's refusal of an index or scatter write (index_copy_, index_add_, index_fill_,
    scatter_, scatter_add_, scatter_reduce_, index_put_) whose source or index shares any memory
    with self, even all of it with the same layout: which value lands, or where, would depend on
    the order of the writes."""
    _core._check_operands_overlap(self, operands, True)


def _write_in_place(self, source, result):
    """Finish the in-place op whose out-of-place result was computed from `source`: a recorded
    self becomes the op's output, its grad_fn the op's node (PyTorch's IndexCopyBackward0 or
    ScatterBackward0, not the CopyBackwards a copy_ would show); otherwise result's values are
    written back into self."""
    if source is not self and result.grad_fn is not None:
        from ._shift_ops import _become_result
        return _become_result(self, result)
    return self.copy_(result)


def _norm_dim(dim: int, ndim: int) -> int:
    """dim as PyTorch's `int` (a 0-d integer tensor too: _core.normalize_dim), wrapped into
    range (a 0-d tensor's is dim 0)."""
    return _core.normalize_dim(dim, max(ndim, 1))


def _check_bounds(idx: np.ndarray, size: int, dim: int, wrap: bool, prefix: str = "",
                  error=RuntimeError) -> np.ndarray:
    """idx with negative entries wrapped (only where PyTorch wraps them), or PyTorch's error
    naming the first index out of range."""
    low = -size if wrap else 0
    # (the extremes first: two reductions, where the mask of a large index was three passes)
    if idx.size and (idx.min() < low or idx.max() >= size):
        bad = (idx < low) | (idx >= size)
        if bad.any():
            raise error(f"{prefix}index {int(idx[bad].flat[0])} is out of bounds for dimension "
                        f"{dim} with size {size}")
    return np.where(idx < 0, idx + size, idx) if wrap else idx


def _wrap(arr) -> TensorBase:
    # asarray with order "C", not ascontiguousarray, which turns a 0-d result into shape (1,)
    return _core.wrap_array(np.asarray(arr, order="C"), False)


# -- scatter --------------------------------------------------------------------------------------

def _scatter_key(self, dim: int, index, src, fname: str):
    """(normalised dim, numpy key into self for index's positions, the slice of src that is
    read) after PyTorch's checks of scatter/scatter_add/scatter_reduce."""
    if not isinstance(index, TensorBase):
        raise TypeError(f"{fname}(): argument 'index' (position 2) must be Tensor, not "
                        f"{_core.type_name(index)}")
    idx = index._array
    if idx.dtype not in (np.int64, np.int32) and idx.size:
        # PyTorch names scatter() here for the whole family.
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    shape = self._array.shape
    dim = _norm_dim(dim, len(shape))
    if not idx.size and len(shape):
        # PyTorch checks no shapes for an empty index: nothing is written, nothing read
        empty = np.zeros(0, dtype=np.intp)
        return dim, (empty,) * len(shape), (None if src is None else src.reshape(-1)[:0])
    if idx.ndim != len(shape) and not (idx.ndim <= 1 and len(shape) <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    ishape = idx.shape if idx.ndim else (1,) * min(len(shape), 1)
    sshape = shape if len(shape) else (1,)
    too_big = any(ishape[d] > sshape[d] for d in range(len(ishape)) if d != dim)
    if src is not None and not too_big:
        # PyTorch's order: index against src dim by dim (reading a size src lacks is its
        # IndexError), then the ranks, then the sizes' message
        sdims = src._array.shape
        for d in range(len(ishape)):
            if sdims and d >= len(sdims):
                raise IndexError(f"Dimension out of range (expected to be in range of "
                                 f"[{-len(sdims)}, {len(sdims) - 1}], but got {d})")
            if ishape[d] > (sdims[d] if sdims else 1):
                too_big = True
                break
    if src is not None and src._array.ndim != idx.ndim and not (idx.ndim <= 1
                                                                 and src._array.ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    if too_big:
        msg = (f"Expected index {list(idx.shape)} to be no larger than self {list(shape)} "
               f"apart from dimension {dim}")
        if src is not None:
            msg += f" and to be no larger size than src {list(src._array.shape)}"
        raise RuntimeError(msg)
    flat = idx.astype(np.int64).reshape(ishape)
    _check_bounds(flat, sshape[dim], dim, wrap=False)
    key = _positions_key(self, dim, flat)
    src_part = None
    if src is not None:
        src_part = src if src._array.ndim == 0 else src[tuple(slice(0, n) for n in ishape)]
    return dim, key, src_part


def _positions_key(self, dim: int, positions: np.ndarray):
    """The numpy key into self naming, for each element of an index-shaped array, the
    position `positions` holds along dim and its own position along the other dims (a 0-d
    self: its one element)."""
    if not self._array.ndim:
        return ()
    nd = positions.ndim
    # (the grid of each other dim only: np.indices also built dim's, unused, as large as it)
    return tuple(positions if d == dim else
                 np.arange(n).reshape((1,) * d + (n,) + (1,) * (nd - d - 1))
                 for d, n in enumerate(positions.shape))


def _check_same_dtype(self, src) -> None:
    if src._array.dtype != self._array.dtype:
        # PyTorch names scatter() here for the whole family
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")


def _overwrite(self, key, value, node: str):
    """A copy of self with self[key] = value (recorded as a clone and the core's index write),
    its grad_fn named `node`: PyTorch's node for the op (ScatterBackward0, IndexCopyBackward0)."""
    out = self.clone()
    if key is not None:
        out[_read_only(key)] = value
    return _core._name_grad_fn(out, node)


def _read_only(key):
    """key with its numpy arrays as read-only views: arrays of the op's own, which the core's
    x[key] = v then keeps as they are (it copies a caller's writeable array)."""
    def frozen(part):
        if not isinstance(part, np.ndarray):
            return part
        view = part.view()
        view.flags.writeable = False
        return view
    return tuple(frozen(part) for part in key) if isinstance(key, tuple) else frozen(key)


def _scatter_reduce_two(self, dim, index, src, reduce, fname):
    """scatter/scatter_ with reduce='add' or 'multiply' (PyTorch's older API, no gradient)."""
    if reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    is_tensor = isinstance(src, TensorBase)
    if is_tensor:
        # Once per process, as PyTorch's TORCH_WARN_ONCE, naming the user's line (a fixed
        # stacklevel named a tapegrad wrapper's line when the call came through one)
        _core.warn_once("The reduce argument of torch.scatter with Tensor src is deprecated "
                        "and will be removed in a future PyTorch release. Use "
                        "torch.scatter_reduce instead for more reduction options.",
                        "aten/src/ATen/native/TensorAdvancedIndexing.cpp:225")
    if is_tensor:
        _check_same_dtype(self, src)
    dim, key, part = _scatter_key(self, dim, index, src if is_tensor else None, fname)
    out = self._array.copy()
    if key is not None:
        values = part._array if is_tensor else np.asarray(src).astype(out.dtype)
        ufunc = np.add if reduce == "add" else np.multiply
        with _core.IeeeResults():   # (inf + -inf, inf * 0, overflow: nan or inf, silently)
            ufunc.at(out, key, np.broadcast_to(values, out[key].shape).astype(out.dtype))
    if _records(self, src):
        # PyTorch records the op and refuses in backward; so does the Function.
        from ._scatter_functions import no_derivative
        return no_derivative(_wrap(out), self, src, "aten::scatter")
    return _wrap(out)


@_numpy_dim_names
@saves_index_args("index")
def scatter(input, dim, index, src=None, reduce=None, *, value=None):
    """input with src's values (or one value) written at index along dim."""
    if src is None and value is None:
        raise TypeError("scatter() missing required argument 'src' or 'value'")
    if src is None:
        src = value
    if reduce is not None:
        return _scatter_reduce_two(input, dim, index, src, reduce, "scatter")
    if isinstance(src, TensorBase):
        _check_same_dtype(input, src)
        _, key, part = _scatter_key(input, dim, index, src, "scatter")
        if _zero_dim_self_many_positions(input, index):    # (the last write lands)
            return _one_element_form(scatter, input, index, src, (), "ScatterBackward0")
        return _overwrite(input, key, part, "ScatterBackward0")
    if not isinstance(src, numbers.Number):
        raise TypeError(f"scatter(): argument 'src' must be Tensor or Number, not "
                        f"{_core.type_name(src)}")
    _, key, _ = _scatter_key(input, dim, index, None, "scatter")
    return _overwrite(input, key, src, "ScatterBackward1")


def scatter_(self, dim, index, src=None, reduce=None, *, value=None):
    """In place: write ``src`` (a tensor or a number; or ``value=``) into self at ``index`` along
    ``dim``, as ``tapegrad.scatter``; ``reduce='add'|'multiply'`` combines instead of writing.
    Returns self.
    """
    with _leaf_error_first(self):
        source = _in_place_source(self, src, value)
        result = scatter(source, dim, index, src, reduce, value=value)
        _refuse_shared_source(self, src, index)
    return _write_in_place(self, source, result)


@_numpy_dim_names
@saves_index_args("index")
def scatter_add(input, dim, index, src):
    """input plus src's values added at index along dim (repeated indices accumulate)."""
    if not isinstance(src, TensorBase):
        raise TypeError(f"scatter_add(): argument 'src' (position 3) must be Tensor, not "
                        f"{_core.type_name(src)}")
    _check_same_dtype(input, src)
    quick = _vector_scatter_add(input, dim, index, src)
    if quick is not None:
        return quick
    dim, key, part = _scatter_key(input, dim, index, src, "scatter_add")
    if _zero_dim_self_many_positions(input, index):
        return _one_element_form(scatter_add, input, index, src, (), "ScatterAddBackward0")
    from ._scatter_functions import accumulate
    along = (dim, index._array) if input._array.ndim and index._array.size else None
    return accumulate(input, key, part, "ScatterAddBackward0", along)


def _vector_scatter_add(input, dim, index, src):
    """scatter_add of 1-d tensors with no gradient to record, or None for any other call: the
    compiled loop straight away, where _scatter_key's general checks and keys and the node's
    call were 90% of a call on 100 elements.  The checks are _scatter_key's for this case."""
    if not isinstance(index, TensorBase):
        return None
    x, idx, values = input._array, index._array, src._array
    if (x.ndim != 1 or idx.ndim != 1 or values.ndim != 1 or idx.dtype != np.int64
            or idx.size > values.shape[0] or type(dim) is not int or dim not in (0, -1)
            or (_core.is_grad_enabled() and (input.requires_grad or src.requires_grad))):
        return None
    out = x.copy()
    if idx.size:
        _check_bounds(idx, x.shape[0], 0, wrap=False)
        part = values[:idx.size]
        from ._ops_shape import _add_at, _scatter_along
        if not _scatter_along(out, 0, idx, part, "sum"):
            _add_at(out, (idx,), part)
    return _wrap(out)


def _zero_dim_self_many_positions(input, index) -> bool:
    """A 0-d self that a 1-d index writes into (each of its entries names self's one element):
    numpy cannot index a 0-d array with index arrays, so the op runs on self as one element."""
    return input._array.ndim == 0 and index._array.ndim == 1


def _one_element_form(op, input, index, src, args: tuple, node: str):
    """op (scatter, scatter_add, scatter_reduce) on 0-d input seen as shape (1,), back to 0-d; the
    grad_fn keeps PyTorch's name for op."""
    out = op(input.reshape(1), 0, index, src.reshape(-1), *args)
    return _core._name_grad_fn(out.reshape(()), node)


def scatter_add_(self, dim, index, src):
    """In place: add ``src``'s values into self at ``index`` along ``dim`` (repeated indices
    accumulate), as ``tapegrad.scatter_add``. Returns self.
    """
    with _leaf_error_first(self):
        source = _in_place_source(self, src)
        result = scatter_add(source, dim, index, src)
        _refuse_shared_source(self, src, index)
    return _write_in_place(self, source, result)


_SCATTER_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
# Spellings PyTorch also accepts (undocumented).
_REDUCTION_ALIASES = {"max": "amax", "min": "amin"}


@_numpy_dim_names
@saves_index_args("index")
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """input with src's values reduced into it at index along dim ('sum', 'prod', 'mean',
    'amax', 'amin'); include_self=False leaves input's own value out where anything lands."""
    _core.check_bool("scatter_reduce", "include_self", include_self)
    reduce = _REDUCTION_ALIASES.get(reduce, reduce)
    if reduce not in _SCATTER_REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if not isinstance(src, TensorBase):
        raise TypeError(f"scatter_reduce(): argument 'src' (position 3) must be Tensor, not "
                        f"{_core.type_name(src)}")
    _check_same_dtype(input, src)
    kind = input._array.dtype.kind
    if (kind == "b" and reduce == "mean") or (kind == "c" and reduce in ("amax", "amin")):
        # PyTorch's kernels: no mean of bools, no ordering of complex numbers
        raise NotImplementedError(f'"scatter_gather_tensor_cpu_reduce_{reduce}" not '
                                  f"implemented for '{_type_name(input._array)}'")
    dim, key, part = _scatter_key(input, dim, index, src, "scatter_reduce")
    if _zero_dim_self_many_positions(input, index):
        return _one_element_form(lambda *a: scatter_reduce(*a, include_self=include_self), input,
                                 index, src, (reduce,), "ScatterReduceBackward0")
    from ._scatter_functions import scatter_reduce_apply
    along = (dim, index._array) if input._array.ndim and index._array.size else None
    return scatter_reduce_apply(input, key, part, reduce, include_self, along=along)


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    """In place: reduce ``src``'s values into self at ``index`` along ``dim`` with ``reduce`` ('sum',
    'prod', 'mean', 'amax', 'amin'), as ``tapegrad.scatter_reduce``. Returns self.
    """
    with _leaf_error_first(self):
        source = _in_place_source(self, src)
        result = scatter_reduce(source, dim, index, src, reduce, include_self=include_self)
        _refuse_shared_source(self, src, index)
    return _write_in_place(self, source, result)


# -- index_put ------------------------------------------------------------------------------------

def _check_indices(indices, fn: str) -> None:
    """PyTorch's binding checks of index_put(_)'s `indices`: a tuple or list of Tensors (None
    allowed) -- checked first, so the message names the function the user called."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{fn}(): argument 'indices' (position 1) must be tuple of Tensors, "
                        f"not {_core.type_name(indices)}")
    for i, ind in enumerate(indices):
        if ind is not None and not isinstance(ind, TensorBase):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{_core.type_name(ind)}")


def _index_put_key(self, indices):
    _check_indices(indices, "index_put")
    shape = self._array.shape
    if not indices:
        # (PyTorch refuses an empty index list, as aten.index does; numpy would read it as
        # the whole tensor)
        raise RuntimeError("at least one index must be provided")
    if len(indices) > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)} (got "
                         f"{len(indices)})")
    key = []
    dim = 0                 # (the first dim of self the next index covers: a mask covers several)
    for ind in indices:
        if ind is None:
            key.append(slice(None))
            dim += 1
            continue
        arr = ind._array
        if arr.dtype == np.uint8:
            # (PyTorch's deprecation warning, as x[mask] gives it: at every call)
            _core.torch_warn("indexing with dtype torch.uint8 is now deprecated, please use a "
                             "dtype torch.bool instead.", "aten/src/ATen/native/IndexingUtils.h:37")
        if arr.dtype == np.bool_ or arr.dtype == np.uint8:
            for i in range(arr.ndim):
                if dim + i < len(shape) and arr.shape[i] != shape[dim + i]:
                    raise IndexError(f"The shape of the mask {list(arr.shape)} at index {i} does "
                                     f"not match the shape of the indexed tensor {list(shape)} "
                                     f"at index {dim + i}")
            key.append(arr.astype(bool))
            dim += arr.ndim
            continue
        dim += 1
        if arr.dtype.kind not in "iu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        key.append(arr.astype(np.int64))
    return tuple(key)


def _check_index_put(self, key, values):
    """PyTorch's order: the values must broadcast to the indexed shape, then the indices must
    be in range; returns the key with negative indices wrapped."""
    shape = self._array.shape
    # The indexed shape does not depend on the size of a dim an integer array indexes: probe it
    # at a size of at least 1, with the indices clipped into it (an empty self still checks its
    # values first; 60627883, index_put(accumulate=True) gave numpy's ValueError)
    integer = [isinstance(k, np.ndarray) and k.dtype != bool for k in key]
    if any(is_int and k.size and shape[d] == 0 for d, (k, is_int) in enumerate(zip(key, integer))):
        # (PyTorch's first check: any index into a dim of size 0 is out of range)
        raise IndexError("index is out of bounds for dimension with size 0")
    probe_shape = tuple(max(n, 1) if d < len(key) and integer[d] else n
                        for d, n in enumerate(shape))
    probe_key = tuple(np.clip(k, -n, n - 1) if is_int else k
                      for k, n, is_int in zip(key, probe_shape, integer))
    try:
        target = np.broadcast_to(np.empty((), np.int8), probe_shape)[probe_key].shape
    except IndexError as e:
        if str(e).startswith("shape mismatch"):         # (index arrays that do not broadcast)
            raise _ops_shape.index_shapes_error(tuple(key)) from None
        raise IndexError(str(e).replace("axis", "dimension")) from None
    vshape = values._array.shape
    while len(vshape) > len(target) and vshape[0] == 1:
        vshape = vshape[1:]
    try:
        fits = np.broadcast_shapes(vshape, target) == tuple(target)
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values._array.shape)} "
                           f"cannot be broadcast to indexing result of shape "
                           f"{list(target)}") from None
    if 0 in target:
        # nothing is written: PyTorch checks each index as its kernel writes through it, so
        # an index out of range raises nothing (zeros(2, 0).index_put_(([5],), v); fuzz
        # 65500344), as x[key] reads nothing (the core's empty_index_result); zeros stand in
        return tuple(np.zeros_like(k) if isinstance(k, np.ndarray) and k.dtype != bool else k
                     for k in key)
    return tuple(_check_bounds(k, shape[d], d, wrap=True, error=IndexError)
                 if isinstance(k, np.ndarray) and k.dtype != bool else k
                 for d, k in enumerate(key))


def _check_values(self, values, fname):
    if not isinstance(values, TensorBase):
        raise TypeError(f"{fname}(): argument 'values' (position 2) must be Tensor, not "
                        f"{_core.type_name(values)}")
    if values._array.dtype != self._array.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_type_name(self._array)} for the destination and "
                           f"{_type_name(values._array)} for the source.")


def _is_masked_fill(self, indices, values, accumulate):
    """Whether PyTorch's index_put_ takes this write as masked_fill_ with the value's number: one
    mask index (the other entries None), a one-element value, no accumulation.  The value's
    dtype then need not be self's (x[mask] = value's cast: a float32 0-d value into float64, 2.7
    into int64 as 2, a complex one only when its imaginary part is 0; the gradient reaches the
    value through the cast), and a uint8 mask is refused by masked_fill_.  Any other key or
    value is index_put_'s, whose dtypes must match (_check_values)."""
    if accumulate or not isinstance(values, TensorBase) or not isinstance(indices, (tuple, list)) \
            or values._array.size != 1 or len(indices) > self._array.ndim:
        return False            # (too many indices: _index_put_key's IndexError)
    given = [i for i in indices if i is not None]
    if len(given) != 1 or not isinstance(given[0], TensorBase) \
            or given[0]._array.dtype not in (np.bool_, np.uint8) or given[0]._array.ndim == 0:
        # (a 0-d mask: the core writes it as index_put_, which checks the dtypes)
        return False
    if given[0]._array.dtype == np.uint8:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           "unsigned char")
    return True


@saves_index_args("indices")
def index_put(input, indices, values, accumulate=False):
    """input with values written (or, accumulate=True, added) at the advanced index `indices`."""
    _core.check_bool("index_put", "accumulate", accumulate)
    # (PyTorch's order: the indices' count, masked_fill_'s refusal of a uint8 mask, the masks'
    # shapes, then the values' dtype)
    masked_fill = _is_masked_fill(input, indices, values, accumulate)
    key = _index_put_key(input, indices)
    if not masked_fill:
        # (a masked fill casts the value: the core's write, x[mask] = value, does it)
        _check_values(input, values, "index_put")
    key = _check_index_put(input, key, values)
    if not accumulate:
        return _overwrite(input, key, values, "IndexPutBackward0")
    from ._scatter_functions import accumulate as accumulate_at
    return accumulate_at(input, key, values, "IndexPutBackward0")


def index_put_(self, indices, values, accumulate=False):
    """In place: ``self[indices] = values`` where ``indices`` is a tuple of index tensors (advanced
    indexing), or ``+=`` with ``accumulate=True`` (repeated indices then add up). Returns self.
    """
    _core.check_bool("index_put_", "accumulate", accumulate)
    _check_indices(indices, "index_put_")
    # (PyTorch's autograd layer refuses a write into a leaf, or a view of one, before its kernel
    # checks the indices: fuzz seed 66410549)
    with _leaf_error_first(self):
        return _index_put_checked(self, indices, values, accumulate)


def _index_put_checked(self, indices, values, accumulate):
    if values is self and (accumulate or self.numel() != 1):
        # PyTorch's index_put_ refuses values that are self before it looks at shapes or
        # elements (x[k] = x, below, sees x without its leading size-1 dims: another tensor),
        # unless one element and no accumulation make it masked_fill_ (fuzz 62705660)
        _refuse_shared_source(self, values)
    if accumulate:
        # (self becomes the op's output when it records, as _extra_ops._in_place's ops do)
        from ._shift_ops import _become_result, _write_back
        source = _core._in_place_operand(self, True) if _records(self, values) else self
        result = index_put(source, indices, values, accumulate)
        _refuse_shared_source(self, values, *indices)
        return _become_result(self, result) if source is not self else _write_back(self, result)
    masked_fill = _is_masked_fill(self, indices, values, accumulate)
    key = _index_put_key(self, indices)
    if not masked_fill:
        _check_values(self, values, "index_put_")
    key = _check_index_put(self, key, values)
    _refuse_shared_source(self, *indices)
    if _stretched(self):
        return _fill_stretched(self, tuple(indices), values, "index_put_")
    # (the write itself, as x[indices] = values: recorded as PyTorch's IndexPutBackward0 on
    # self's history, not as a copy of an out-of-place result)
    self[_read_only(key)] = values
    return self


# -- index_add / index_copy / index_fill -----------------------------------------------------------

def _index_dim_key(self, dim, index, fname: str, wrap: bool, error=RuntimeError,
                   prefix: str = ""):
    """(dim, key) selecting the slices `index` names along dim, after PyTorch's checks.
    PyTorch's kernels do not range-check the index of a self without elements when the slices
    it names hold none (the dims other than dim multiply to 0; index_add, any self of two or
    more dims without elements): the key then names no slice (60630620)."""
    if not isinstance(index, TensorBase):
        raise TypeError(f"{fname}(): argument 'index' (position 2) must be Tensor, not "
                        f"{_core.type_name(index)}")
    idx = index._array
    if idx.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"{fname}(): Expected dtype int32/int64 for index")
    if idx.ndim > 1:
        raise IndexError(f"{fname}(): Index is supposed to be a vector")
    shape = self._array.shape
    dim = _norm_dim(dim, len(shape))
    size = shape[dim] if shape else 1
    others = shape[:dim] + shape[dim + 1:]
    if 0 in others or (fname == "index_add" and len(shape) > 1 and 0 in shape):
        return dim, (slice(None),) * dim + (np.zeros(0, np.int64),)
    flat = _check_bounds(idx.astype(np.int64).reshape(-1), size, dim, wrap, prefix, error)
    if not shape:
        return dim, () if flat.size else None
    return dim, (slice(None),) * dim + (flat,)


def _index_arguments(self, dim, index, source, fname: str):
    """The index_* functions' first checks, PyTorch's parser's: index and source are tensors;
    then dim wrapped to self's rank.  Returns (dim, index array, self's shape, source's)."""
    for name, position, arg in (("index", 2, index), ("source", 3, source)):
        if not isinstance(arg, TensorBase):
            raise TypeError(f"{fname}(): argument '{name}' (position {position}) must be "
                            f"Tensor, not {_core.type_name(arg)}")
    return _norm_dim(dim, self.ndim), index._array, self._array.shape, source._array.shape


def _check_index_copy(self, dim, index, source):
    """PyTorch's index_copy checks of the index, and of source against self and the index
    count, in its order and words (a 0-d source or self stands for one slice)."""
    dim, idx, shape, sshape = _index_arguments(self, dim, index, source, "index_copy")
    if idx.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {idx.ndim})")
    n_index = idx.size
    if not sshape and n_index != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one "
                         f"element (got {n_index})")
    if shape and sshape and len(sshape) != len(shape):
        raise IndexError(f"index_copy_(): When source and destination are not scalars, "
                         f"their dimensionality must match. Source dimensionality "
                         f"({len(sshape)}), destination dimensionality ({len(shape)})")
    if idx.dtype != np.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got "
                           f"{_type_name(idx)}")
    if source._array.dtype != self._array.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, "
                           f"but got (self) {_type_name(self._array)} and (source) "
                           f"{_type_name(source._array)}")
    self_slice = shape[:dim] + shape[dim + 1:]
    source_slice = sshape[:dim] + sshape[dim + 1:]
    if self_slice != source_slice:
        words = lambda sizes: " ".join(str(n) for n in sizes)     # noqa: E731 (C++'s vector <<)
        raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice "
                           f"shapes. Destination slice shape: {words(self_slice)} at dimension "
                           f"{dim} and source slice shape: {words(source_slice)} at dimension 0.")
    if sshape and sshape[dim] != n_index:
        raise IndexError(f"index_copy_(): Number of indices ({n_index}) should be equal to "
                         f"source.size(dim) ({sshape[dim]})")


def _index_out_of_range_in_self(_message):
    return IndexError("index out of range in self")


def _check_index_func(self, dim, index, source, fname: str) -> int:
    """PyTorch's checks shared by index_add and index_reduce (its index_func_meta_impl), in its
    order and words; returns dim wrapped to self's rank."""
    dim, idx, shape, sshape = _index_arguments(self, dim, index, source, fname)
    if idx.ndim > 1:
        raise IndexError(f"{fname}_(): Index is supposed to be a vector, but got dim: "
                         f"{idx.ndim} with type: {_type_name(idx)} and size: {list(idx.shape)}")
    if idx.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"{fname}_(): Expected dtype int32/int64 for index but got: "
                           f"{_type_name(idx)}")
    if source._array.dtype != self._array.dtype:
        raise RuntimeError(f"{fname}_(): self ({_type_name(self._array)}) and source "
                           f"({_type_name(source._array)}) must have the same scalar type")
    if dim != 0 and dim >= len(sshape):
        raise RuntimeError(f"{fname}_(): Indexing dim {dim} is out of bounds of the source "
                           f"tensor with dim {len(sshape)}")
    if not sshape and idx.size != 1:
        # (PyTorch's check reads source.size(dim) unless there is one index: a 0-d source
        # has no dim to read)
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    slices = sshape[dim] if sshape else 1
    if idx.size != slices:
        raise RuntimeError(f"{fname}_(): Number of indices ({idx.size}) should be equal to "
                           f"source.size(dim): ({slices}), for dim: {dim}")
    # the shapes apart from dim; a 0-d self or source compares whole shapes
    if shape and sshape:
        shape, sshape = shape[:dim] + shape[dim + 1:], sshape[:dim] + sshape[dim + 1:]
    if tuple(shape) != tuple(sshape):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(self._array.shape)} "
                           f"source.shape = {list(source._array.shape)}")
    return dim


def _slices_written(key, source, dim):
    """The part of source that key's slices receive: all of it, or none when the key names no
    slice (_index_dim_key's key for slices without elements, whatever the index): source
    narrowed to 0 along dim then, whose gradient is still source's shape (zeros)."""
    if (key and isinstance(key[-1], np.ndarray) and key[-1].size == 0 and source._array.ndim
            and source._array.shape[dim] != 0):
        return source.narrow(dim, 0, 0)
    return source


@_numpy_dim_names
@saves_index_args("index")
def index_add(input, dim, index, source, *, alpha=1):
    """input plus alpha * source's slices added at index along dim (repeats accumulate)."""
    _check_index_func(input, dim, index, source, "index_add")
    # PyTorch's kernel for a self of at most one dim is index_select's loop, whose error is an
    # IndexError without the index (60634635); a wider self names it in a RuntimeError
    error = _index_out_of_range_in_self if input.ndim <= 1 else RuntimeError
    dim, key = _index_dim_key(input, dim, index, "index_add", wrap=False, error=error)
    if key is None:
        return input.clone()
    from ._scatter_functions import accumulate
    source = _slices_written(key, source, dim)
    values = source if alpha == 1 else source * alpha
    return accumulate(input, key, values, "IndexAddBackward0")


def index_add_(self, dim, index, source, *, alpha=1):
    """In place: add ``alpha * source`` into self at the positions ``index`` along ``dim``, as
    ``tapegrad.index_add``. Returns self.
    """
    with _leaf_error_first(self):
        read = _in_place_source(self, source)
        result = index_add(read, dim, index, source, alpha=alpha)
        _refuse_shared_source(self, source, index)
    return _write_in_place(self, read, result)


@_numpy_dim_names
@saves_index_args("index")
def index_copy(input, dim, index, source):
    """input with source's slices written at index along dim."""
    _check_index_copy(input, dim, index, source)
    dim, key = _index_dim_key(input, dim, index, "index_copy", wrap=False, error=IndexError,
                              prefix="index_copy_(): ")
    return _overwrite(input, key, _slices_written(key, source, dim) if key else source,
                      "IndexCopyBackward0")


def index_copy_(self, dim, index, source):
    """In place: copy ``source``'s slices into self at the positions ``index`` along ``dim``, as
    ``tapegrad.index_copy``. Returns self.
    """
    with _leaf_error_first(self):
        # (PyTorch's index_copy_ refuses a shared source or index once dim is wrapped, before
        # it checks the index: x.index_copy_(0, i, x) with i of the wrong length or dtype)
        _index_arguments(self, dim, index, source, "index_copy")
        _refuse_shared_source(self, source, index)
        read = _in_place_source(self, source)
        result = index_copy(read, dim, index, source)
    return _write_in_place(self, read, result)


def _fill_number(input, value):
    """index_fill's number as PyTorch's kernel stores it: converted to input's dtype as fill_
    converts (float16 range checked), a complex one refused for a real input."""
    dt = input._array.dtype
    if isinstance(value, (complex, np.complexfloating)) and dt.kind != "c":
        raise RuntimeError("index_fill_(): Converting complex Scalar to non-complex type is not "
                           "supported")
    return _core._scalar_to_dtype(value, dt)


_FILL_NUMBER_TYPES = (bool, int, float, complex, np.bool_, np.number)


def _check_fill_value(name: str, input, dim, index, value) -> None:
    """PyTorch's parser's refusal of an index_fill value that is neither a Tensor nor a Number
    (a str, None, a list): its two signatures, not a failed conversion."""
    if not isinstance(value, (TensorBase,) + _FILL_NUMBER_TYPES):
        from .tensor import invalid_arguments
        raise invalid_arguments(name, (input, dim, index, value), {}, "".join(
            f"\n * (Tensor input, int dim, Tensor index, {kind} value)"
            for kind in ("Tensor", "Number")) + "\n")


@_numpy_dim_names
@saves_index_args("index")
def index_fill(input, dim, index, value):
    """input with the slices index names along dim set to value (a number or a 0-d tensor)."""
    _check_fill_value("index_fill", input, dim, index, value)
    if isinstance(value, TensorBase) and value._array.ndim != 0:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value._array.ndim} dimension(s).")
    if isinstance(index, TensorBase):
        if index._array.dtype != np.int64:
            raise IndexError("index_fill_(): Expected dtype int64 for index.")
        if index._array.ndim > 1:
            raise RuntimeError("Index has to be a vector/scalar")
    dim, key = _index_dim_key(input, dim, index, "index_fill", wrap=True, error=IndexError)
    if isinstance(value, _FILL_NUMBER_TYPES):
        value = _fill_number(input, value)
    elif value._array.dtype != input._array.dtype:
        # PyTorch fills with the value tensor's number in input's dtype (an int64 7 into a
        # float32 input); the cast is recorded, so a value's gradient still flows
        if value._array.dtype.kind == "c" and input._array.dtype.kind != "c":
            raise RuntimeError("index_fill_(): Converting complex Scalar to non-complex type is "
                               "not supported")
        _fill_number(input, value._array.item())   # (its number's range check, as fill_'s)
        if value.requires_grad and is_grad_enabled() and input._array.dtype.kind not in "fc":
            # PyTorch records the fill and then refuses an integer or bool result; the cast
            # below would silently drop the value's gradient
            raise RuntimeError("Autograd not support dtype: "
                               f"{_core.scalar_type_name_of(input._array.dtype)}")
        value = value.to(input.dtype)
    if key:
        # Each slice is filled once however often index names it: a tensor value's gradient
        # sums each filled position once.
        key = key[:-1] + (np.unique(key[-1]),)
    return _overwrite(input, key, value, "IndexFillBackward1" if isinstance(value, TensorBase)
                      else "IndexFillBackward0")


def index_fill_(self, dim, index, value):
    """In place: fill the slices of self at ``index`` along ``dim`` with ``value``, as
    ``tapegrad.index_fill``. Returns self.
    """
    _check_fill_value("index_fill_", self, dim, index, value)
    with _leaf_error_first(self):
        read = _in_place_source(self, value, shared_ok=True)
        if isinstance(value, TensorBase) and self._array.dtype.kind not in "fc":
            # (no gradient reaches an integer or bool self: the out-of-place form's refusal of
            # such a result is not the in-place one's, which PyTorch runs)
            value = value.detach()
        result = index_fill(read, dim, index, value)
        _refuse_shared_source(self, index)
    if _stretched(self):
        d = dim % self.ndim
        return _fill_stretched(self, (slice(None),) * d + (index.reshape(-1),), value,
                               "index_fill_")
    return _write_in_place(self, read, result)


_SEGMENT_REDUCTIONS = {"sum": "sum", "prod": "prod", "mean": "sum", "max": "amax",
                       "amax": "amax", "min": "amin", "amin": "amin"}


@saves_index_args("lengths", "indices", "offsets")
def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                   unsafe=False, initial=None):
    """``torch.segment_reduce``: reduce consecutive segments of ``data`` along ``axis``, their
    lengths given by ``lengths`` (or by ``offsets``, whose differences are the lengths).  A
    ``lengths`` of shape ``data.shape[:axis] + (n,)`` gives each leading row its own segments.

    Built as a scatter_reduce of ``data`` into one slot per segment, so the gradient is
    scatter_reduce's; an empty segment gives ``initial``, or the reduction's identity (nan for
    mean).  With ``initial``, max/min take it as a constant: it wins ties without taking the
    gradient, which stays split evenly among the tied data, as in PyTorch; mean divides
    ``initial + sum`` by the segment's length.  (PyTorch's own backward splits a tie's gradient
    only when it is positive, a negative one reaching every tied element in full; tapegrad
    always splits, as amax and scatter_reduce do.)

    Examples
    --------
    >>> tapegrad.segment_reduce(tapegrad.tensor([1., 2., 3.]), "sum", lengths=tapegrad.tensor([1, 2]))
    tensor([1., 5.])
    """
    from .creation import arange, full, tensor
    if reduce not in _SEGMENT_REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, "
                           f"got {reduce}")
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if _np_kind(data) not in "fc":
        raise NotImplementedError(f'"_segment_reduce_cpu" not implemented for '
                                  f"'{_type_name(data._array)}'")
    if lengths is None:
        if _np_kind(offsets) not in "iu":
            raise NotImplementedError(f'"_segment_reduce_cpu_kernel1" not implemented for '
                                      f"'{_type_name(offsets._array)}'")
        counts = np.diff(offsets._array, axis=-1)
    else:
        if _np_kind(lengths) not in "iu":
            raise NotImplementedError(f'"_segment_reduce_lengths_cpu_kernel1" not implemented '
                                      f"for '{_type_name(lengths._array)}'")
        counts = np.asarray(lengths._array)
    if data.dim() < counts.ndim:
        raise RuntimeError("Expected data.dim() >= lengths_value.dim() to be true, but got false.")
    axis = _norm_dim(axis, data.dim())
    if axis != counts.ndim - 1:
        raise RuntimeError(f"Expected axis == lengths_value.dim() - 1 to be true, but got false. "
                           f"(axis {axis}, lengths of {counts.ndim} dims)")
    if counts.shape[:-1] != tuple(data.shape[:axis]):
        raise RuntimeError(f"segment_reduce(): lengths of shape {list(counts.shape)} do not fit "
                           f"data of shape {list(data.shape)} along axis {axis}")
    if (counts < 0).any():
        raise RuntimeError("segment_reduce(): lengths contains negative value!")
    if not unsafe and (counts.sum(axis=-1) != data.shape[axis]).any():
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                           "data.size(lengths.dim()-1) when !unsafe.")
    n_seg = counts.shape[-1]
    # Each position along axis names its segment; rows of a multi-dimensional lengths differ.
    # Positions past the last segment (unsafe=True with short lengths) go to one extra slot,
    # dropped below.
    size = data.shape[axis]
    rows = counts.reshape(-1, n_seg)
    seg = _core._segment_ids(rows, size)
    seg = seg.reshape(counts.shape[:-1] + (size,) + (1,) * (data.dim() - axis - 1))
    index = _wrap(np.broadcast_to(seg, tuple(data.shape)))     # (our own array: no copy)
    out_shape = tuple(data.shape[:axis]) + (n_seg + 1,) + tuple(data.shape[axis + 1:])
    kind = _SEGMENT_REDUCTIONS[reduce]
    identity = {"sum": 0.0, "prod": 1.0, "amax": -np.inf, "amin": np.inf}[kind]
    fill = identity if initial is None or kind in ("amax", "amin") else initial
    out = full(out_shape, fill, dtype=data.dtype).scatter_reduce(axis, index, data, kind)
    out = out.narrow(axis, 0, n_seg)
    count = tensor(counts.reshape(counts.shape + (1,) * (data.dim() - axis - 1)))
    empty = count == 0
    if reduce == "mean":
        out = out / count.clamp(min=1)
        out = out.masked_fill(empty, np.nan if initial is None else initial)
    elif kind in ("amax", "amin") and initial is not None:
        keep = out >= initial if kind == "amax" else out <= initial
        out = out.where(keep, full((), initial, dtype=data.dtype))
    return _core._name_grad_fn(out, "SegmentReduceBackward0") if out.requires_grad else out


def _np_kind(t) -> str:
    return np.dtype(t._array.dtype).kind


FUNCTIONS = ("scatter", "scatter_add", "scatter_reduce", "index_put", "index_put_", "index_add",
             "index_copy", "index_fill",
             "segment_reduce")
METHODS = ("scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce",
           "scatter_reduce_", "index_put", "index_put_", "index_add", "index_add_", "index_copy",
           "index_copy_", "index_fill", "index_fill_")


def register(namespace: dict, tensor_cls) -> None:
    """Add the functions to the tapegrad namespace and the methods to Tensor (existing names
    win)."""
    g = globals()
    for name in FUNCTIONS:
        namespace.setdefault(name, g[name])
    for name in METHODS:
        if not has_member(tensor_cls, name):
            setattr(tensor_cls, name, g[name])
