"""Indexing, splitting, diagonal and product ops PyTorch scripts use (issue 15), built in Python.

Differentiable results are composites of recorded ops (index_select, gather, mm, mul, cat,
movedim), so gradients and create_graph come from the core; the index arithmetic that decides
which elements go where is numpy.  Index results (nonzero, argwhere, isin) are int64 / bool
tensors that do not require grad, as in PyTorch.

Functions are registered in the tapegrad namespace and, where PyTorch has one, as Tensor
methods by `register` (called from tapegrad/__init__.py); names that already exist are left
alone.  Statistics (median, quantile, ...) live in _more_stats.py.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import itertools
import math

import numpy as np

from . import _core
from ._extra_ops import (_check_tensor, _numpy_dim_names, _dim, _dtype_name, _index_tensor,
                         _refuse_if_complex, _wrap, register_family)
from ._out_arg import compute_then_write, require_dtype, write_into
from .autograd.function import Function as _Function
from .tensor import invalid_arguments, is_int

TensorBase = _core.TensorBase


def _slice_along(input, dim: int, start, stop):
    """input[..., start:stop, ...] along dim (Python slice rules, a differentiable view)."""
    return input[(slice(None),) * dim + (slice(start, stop),)]


# -- nonzero, argwhere, isin -------------------------------------------------------------------

def nonzero(input, *, out=None, as_tuple=False):
    """The coordinates of input's non-zero elements: an int64 (count, ndim) tensor, or with
    as_tuple one int64 vector per dim (a 0-d input counts as 1-d)."""
    _check_tensor(input, "nonzero")
    _core.check_bool("nonzero", "as_tuple", as_tuple)
    arr = input._array
    if as_tuple:
        if out is not None:
            raise RuntimeError("nonzero does not support the out kwarg when as_tuple is True")
        return tuple(_index_tensor(c) for c in np.nonzero(arr.reshape(arr.shape or (1,))))
    result = _index_tensor(np.argwhere(arr))
    if out is not None:
        require_dtype("nonzero", out, np.int64)
        return write_into("nonzero", out, result)
    return result


def argwhere(input):
    """nonzero(input): the (count, ndim) coordinates of the non-zero elements."""
    _check_tensor(input, "argwhere")
    return nonzero(input)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """A bool tensor shaped like `elements`: whether each element occurs in test_elements (NaN
    never does).  Either argument may be a Python number, not both."""
    from ._extra_ops import _check_tensor_or_number
    signatures = tuple(f"{kinds}, *, bool assume_unique = False, bool invert = False, Tensor "
                       f"out = None" for kinds in ("Tensor elements, Tensor test_elements",
                                                   "Number element, Tensor test_elements",
                                                   "Tensor elements, Number test_element"))
    _check_tensor_or_number("isin", (elements, test_elements), signatures)
    overloads = "".join(f" * ({signature})\n" for signature in signatures)
    _core.check_bool("isin", "assume_unique", assume_unique, 0, overloads)
    _core.check_bool("isin", "invert", invert, 0, overloads)
    if not isinstance(elements, TensorBase) and not isinstance(test_elements, TensorBase):
        _check_tensor_or_number("isin", (elements, test_elements, None), signatures)
    operands = [x if isinstance(x, TensorBase) else _wrap(np.asarray(x))
                for x in (elements, test_elements)]
    for operand in operands:        # (a Python number as PyTorch wraps it: float64, int64, ...)
        if operand._array.dtype == np.bool_:
            raise RuntimeError("Unsupported input type encountered for isin(): Bool")
        _refuse_if_complex("isin", operand)
    # Both sides meet in PyTorch's result type, a Python number or 0-d tensor converted to the
    # other side's dtype as it is: 0.1 matches float32 0.1, 300 matches int8 44 (it wraps).
    # (numpy's own promotion had compared 0.1 in float64 with float32 0.1: silently False.)
    common = _core.result_type(elements, test_elements).np_dtype
    with _core.IeeeResults():
        values, tests = (operand._array.astype(common, copy=False) for operand in operands)
    return _wrap(np.isin(values, tests, invert=bool(invert)))


# -- repeating and splitting -------------------------------------------------------------------

@_numpy_dim_names
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element (each slice along dim) of input repeated `repeats` times in place; with
    only a tensor of counts, the indices 0..n-1 repeated by those counts."""
    _check_tensor(input, "repeat_interleave")
    if repeats is None:       # torch.repeat_interleave(counts)
        _check_count_dtype(input._array)
        if input.ndim != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        counts = _repeat_counts(input, None)
        positions = np.repeat(np.arange(counts.size), counts)
        _check_output_size(positions.size, output_size, counts_given=True)
        # (the indices in the counts' own dtype: int32 counts give int32 indices)
        return _wrap(positions.astype(input._array.dtype))
    if dim is not None and input.ndim == 0:
        # (PyTorch's two overloads fail differently on a 0-d input with a dim)
        if isinstance(repeats, TensorBase):
            from ._extra_ops import _no_dims
            _no_dims(dim)
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    source = input.flatten() if dim is None else input
    d = 0 if dim is None else _dim(dim, input.ndim)
    length = source._array.shape[d]
    if isinstance(repeats, TensorBase):
        counts = _repeat_counts(repeats, length, 0 if dim is None else dim)
    else:
        if isinstance(repeats, np.ndarray) and repeats.ndim == 0 and repeats.dtype.kind in "iu":
            repeats = int(repeats)      # PyTorch's SymInt takes it through __index__
        if not is_int(repeats):
            raise TypeError(f"repeat_interleave(): argument 'repeats' (position 2) must be "
                            f"Tensor, not {_type_name(repeats)}")
        if repeats < 0:
            raise RuntimeError("Repeats must be non-negative")
        _check_output_size(length * int(repeats), output_size, counts_given=False)
        # PyTorch repeats by a count as a copy of an expanded view, not by an index: that graph
        # (ViewBackward0 <- CloneBackward0 <- ExpandBackward0) is what reprs print, and the
        # gradient sums each element's copies as expand's backward does.
        shape = list(source.shape)
        shape.insert(d + 1, int(repeats))
        return source.unsqueeze(d + 1).expand(shape).clone().flatten(d, d + 1)
    positions = np.repeat(np.arange(length), counts)
    _check_output_size(positions.size, output_size, counts_given=True)
    return source.index_select(d, _index_tensor(positions))


def _check_count_dtype(arr) -> None:
    if arr.dtype not in (np.int32, np.int64):     # (PyTorch's kernel takes these two only)
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for "
                                  f"'{_dtype_name(arr)}'")


def _repeat_counts(repeats, length, dim=0):
    """repeats as an int64 vector of `length` counts (a 0-d or 1-element tensor broadcasts).

    `dim` is the caller's dim as given (PyTorch's message names it unnormalized: input.size(-1))."""
    arr = repeats._array
    _check_count_dtype(arr)
    if arr.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    if arr.size and arr.min() < 0:
        raise RuntimeError("repeats can not be negative")
    if length is None:
        return arr.reshape(-1).astype(np.int64)
    if arr.size == 1:
        return np.full(length, int(arr.reshape(-1)[0]), dtype=np.int64)
    if arr.shape[0] != length:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {arr.shape[0]} and input.size({dim}) = {length}")
    return arr.astype(np.int64)


def _check_output_size(length: int, output_size, counts_given: bool):
    """The caller's `output_size` (a hint PyTorch checks) against the result's length."""
    if output_size is not None and output_size != length:
        if counts_given:
            raise RuntimeError("allocated size does not match required size")
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected "
                           f"{length} but got {output_size}")


# PyTorch's signatures of the splits: the split points are one argument, given positionally or
# under the keyword of the signature meant (sections=, indices=, tensor_indices_or_sections=).
_UNSET = object()
_TENSOR_SPLIT_SIGNATURES = ("\n * (Tensor input, tuple of ints indices, int dim = 0)\n"
                            " * (Tensor input, Tensor tensor_indices_or_sections, int dim = 0)\n"
                            " * (Tensor input, int sections, int dim = 0)\n")
_DIRECTIONAL_SPLIT_SIGNATURES = ("\n * (Tensor input, int sections)\n"
                                 " * (Tensor input, tuple of ints indices)\n")


def _is_int_sequence(value) -> bool:
    """Whether PyTorch's parser takes value as a tuple of ints: it judges the first element
    strictly (no bool), the others as it unpacks them (a bool is an int there)."""
    def integral(v, strict):
        return (is_int(v) if strict else isinstance(v, (int, np.integer))) or \
            (isinstance(v, TensorBase) and v.ndim == 0 and v._array.dtype.kind in "iu")
    return isinstance(value, (list, tuple)) and \
        all(integral(v, i == 0) for i, v in enumerate(value))


_SPLIT_FORMS = {"sections": is_int, "indices": _is_int_sequence,
                "tensor_indices_or_sections": lambda v: isinstance(v, TensorBase)}


def _split_points(name: str, input, positional, keywords: dict, signatures: str,
                  extra_kwargs: dict):
    """The split points of a call, checked against the signature they pick: one of positional
    and the keyword forms must be given, of its form's type (PyTorch's parser refuses a float
    or a bool, which Python's int() would have truncated into a split point)."""
    given = {k: v for k, v in keywords.items() if v is not _UNSET}
    if positional is not _UNSET:
        forms, points, shown = tuple(keywords), positional, (input, positional)
    else:
        forms, points, shown = tuple(given), next(iter(given.values()), None), (input,)
    if len(given) + (positional is not _UNSET) != 1 or \
            not any(_SPLIT_FORMS[form](points) for form in forms):
        raise invalid_arguments(name, shown, {**given, **extra_kwargs}, signatures)
    return points


@_numpy_dim_names
def tensor_split(input, indices_or_sections=_UNSET, dim=0, *, sections=_UNSET, indices=_UNSET,
                 tensor_indices_or_sections=_UNSET):
    """input split along dim into `sections` near-equal parts (the first size % sections are
    one longer), or at the given indices (Python slice rules); a tuple of views."""
    _check_tensor(input, "tensor_split")
    split = _split_points("tensor_split", input, indices_or_sections,
                          {"sections": sections, "indices": indices,
                           "tensor_indices_or_sections": tensor_indices_or_sections},
                          _TENSOR_SPLIT_SIGNATURES, {} if dim == 0 else {"dim": dim})
    return _tensor_split(input, split, dim)


def _tensor_split(input, split, dim):
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = _dim(dim, input.ndim)
    if isinstance(split, TensorBase):
        arr = split._array
        if arr.dtype != np.int64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype "
                               f"of long, but got {_dtype_name(arr)}")
        if arr.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a "
                               f"zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {arr.ndim} dims")
        split = int(arr) if arr.ndim == 0 else [int(i) for i in arr]
    size = input._array.shape[d]
    if is_int(split):
        if split <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {split}")
        base, extra = divmod(size, int(split))
        lengths = [base + 1] * extra + [base] * (int(split) - extra)
        bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
    else:
        bounds = [0, *[int(i) for i in split], size]
    return tuple(_slice_along(input, d, start, stop) for start, stop in zip(bounds, bounds[1:]))


def _directional_split(name: str, dim: int, min_ndim: int):
    def split(input, indices_or_sections=_UNSET, *, sections=_UNSET, indices=_UNSET):
        _check_tensor(input, name)
        points = _split_points(name, input, indices_or_sections,
                               {"sections": sections, "indices": indices},
                               _DIRECTIONAL_SPLIT_SIGNATURES, {})
        if input.ndim < min_ndim:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {min_ndim} "
                               f"dimension, but got a tensor with {input.ndim} dimensions!")
        d = 0 if (name == "hsplit" and input.ndim == 1) else dim
        if is_int(points):
            size = input._array.shape[d]
            if points == 0 or size % points:
                raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but "
                                   f"the size of the dimension {size} is not divisible by the "
                                   f"split_size {points}!")
        return _tensor_split(input, points, d)
    split.__name__ = split.__qualname__ = name
    split.__doc__ = (f"tensor_split along dim {dim} ({'dim 0 for 1-d input; ' if dim == 1 else ''}"
                     f"an int must divide the size evenly).")
    return split


hsplit = _directional_split("hsplit", 1, 1)
vsplit = _directional_split("vsplit", 0, 2)
dsplit = _directional_split("dsplit", 2, 3)


@_numpy_dim_names
def take_along_dim(input, indices, dim=None, *, out=None):
    """input's values at `indices` along dim (a gather, input and indices broadcast over the
    other dims); without dim, over the flattened input."""
    _check_tensor(input, "take_along_dim")
    _check_tensor(indices, "take_along_dim", "indices", 2)
    if out is not None:
        return compute_then_write("take_along_dim", out, (input, indices),
                                  lambda: take_along_dim(input, indices, dim))
    if dim is None:
        # (PyTorch flattens both with view(-1): a layout that no view flattens, a permuted
        # input, raises its view error; the gather's own check takes int32 indices too)
        return input.view(-1).gather(0, indices.view(-1))
    if indices._array.dtype != np.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{_dtype_name(indices._array)}")
    if input.ndim == 0:
        from ._extra_ops import _no_dims
        _no_dims(dim)
    d = _dim(dim, input.ndim)
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.ndim} dimensions for input, "
                           f"and {indices.ndim} dimensions for indices")
    if indices.numel():
        # PyTorch takes the indices along dim modulo its size: -1 is the last, and so is
        # size - 1 + k * size
        if input.shape[d] == 0:
            raise RuntimeError("ZeroDivisionError")
        indices = indices.remainder(input.shape[d])
    others_in = list(input.shape)
    others_ix = list(indices.shape)
    others_in[d] = others_ix[d] = 1
    # (PyTorch's infer_size message: torch.broadcast_shapes words its refusal otherwise)
    from ._extra_ops import _broadcast_shapes
    _broadcast_shapes(others_in, others_ix)
    common = list(np.broadcast_shapes(tuple(others_in), tuple(others_ix)))
    input_shape, index_shape = list(common), list(common)
    input_shape[d], index_shape[d] = input.shape[d], indices.shape[d]
    return input.expand(*input_shape).gather(d, indices.expand(*index_shape))


def take(input, index):
    """input's elements at the flat (row-major) positions of an int64 index, shaped like index;
    negative positions count from the end."""
    _check_tensor(input, "take")
    _check_tensor(index, "take", "index", 2)
    positions = index._array
    if positions.dtype != np.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{_dtype_name(positions)}")
    n = input._array.size
    if n == 0 and positions.size:
        raise IndexError("take(): tried to take from an empty tensor")
    bad = positions[(positions >= n) | (positions < -n)]
    if bad.size:
        raise IndexError(f"out of range: tried to access index {int(bad.reshape(-1)[0])} on a "
                         f"tensor of {n} elements.")
    # A new tensor, as PyTorch's (not a view of a gathered temporary: a later in-place op on it
    # must record as on a plain result, fuzz 62675549's sibling): an advanced index of index's
    # shape; a 0-d index would be a select (a view), so that one element is copied.
    flat_input = input.reshape(-1)
    if positions.ndim == 0:
        picked = flat_input.index_select(0, _index_tensor(positions.reshape(1) % max(n, 1)))
        result = picked.reshape(()).clone()
    else:
        result = flat_input[_index_tensor(positions % max(n, 1))]
    # (its key is positions wrapped into range, an array of its own: PyTorch's TakeBackward0
    # saves index itself, so writing it before backward raises)
    _core._save_index_of(result, index)
    return _core._name_grad_fn(result, "TakeBackward0")


# -- diagonals ---------------------------------------------------------------------------------

def _distinct_dims(dim1, dim2, ndim: int):
    d1, d2 = _dim(dim1, ndim), _dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


def _diagonal_positions(rows: int, cols: int, offset: int) -> np.ndarray:
    """Flat positions, in a row-major rows x cols matrix, of its offset-th diagonal."""
    first_row, first_col = max(-offset, 0), max(offset, 0)
    length = max(min(rows - first_row, cols - first_col), 0)
    steps = np.arange(length)
    return (steps + first_row) * cols + steps + first_col


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The offset-th diagonal of the (dim1, dim2) matrices of input, as its last dim.

    A view of input, as PyTorch's (writes through either reach the other): the diagonal of any
    layout is a strided view of input's storage (tapegrad.as_strided's, with the indices of the
    elements it covers known here, so its gradient is AsStridedBackward0's); a copy made by
    index_select only for a tensor whose memory numpy reinterprets."""
    _check_tensor(input, "diagonal")
    d1, d2 = _distinct_dims(dim1, dim2, input.ndim)
    from . import movedim
    from ._strided import storage_of, strided_view
    rows, cols = input.shape[d1], input.shape[d2]
    offset = int(offset)
    positions = _diagonal_positions(rows, cols, offset)
    arr = input._array
    found = storage_of(arr)
    if found is not None:
        storage, own = found
        itemsize = arr.itemsize
        steps = [s // itemsize for s in arr.strides]
        others = [d for d in range(arr.ndim) if d not in (d1, d2)]
        n = len(positions)
        size = tuple(arr.shape[d] for d in others) + (n,)
        first_row, first_col = max(-offset, 0), max(offset, 0)
        start = own + first_row * steps[d1] + first_col * steps[d2] if n else 0
        out = np.ndarray(size, arr.dtype, buffer=storage,
                         offset=start * itemsize if min(size, default=1) else 0,
                         strides=tuple(arr.strides[d] for d in others)
                         + ((steps[d1] + steps[d2]) * itemsize,))
        if not storage.flags.writeable:
            out.flags.writeable = False
        # the element of input each diagonal element is: (batch indices..., row, col)
        key = [None] * arr.ndim
        lead = (1,) * len(others)
        for j, d in enumerate(others):
            shape = [1] * len(size)
            shape[j] = arr.shape[d]
            key[d] = np.broadcast_to(np.arange(arr.shape[d], dtype=np.int64).reshape(shape), size)
        diag = np.arange(n, dtype=np.int64).reshape(lead + (n,))
        key[d1] = np.broadcast_to(diag + first_row, size)
        key[d2] = np.broadcast_to(diag + first_col, size)
        view = strided_view(input, out, tuple(key))
    else:
        moved = movedim(input, (d1, d2), (-2, -1))
        view = moved.reshape(*moved.shape[:-2], rows * cols).index_select(
            -1, _index_tensor(positions))
    return _core._name_grad_fn(view, "DiagonalBackward0")


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor one dim larger whose (dim1, dim2) matrices hold input's last dim on their
    offset-th diagonal and zeros elsewhere."""
    _check_tensor(input, "diag_embed")
    d1, d2 = _distinct_dims(dim1, dim2, input.ndim + 1)
    from . import movedim
    square = _diag_embedded(input, int(offset))
    if (d1, d2) != (input.ndim - 1, input.ndim):
        square = movedim(square, (-2, -1), (d1, d2))
    return _core._name_grad_fn(square, "DiagEmbedBackward0")


def _diag_embedded(input, offset: int):
    """diag_embed over the last two dims: its node when input's gradient is wanted, else the
    array alone (a Function call costs 4x the work of a small one)."""
    if input.requires_grad and _core.is_grad_enabled():
        return _DiagEmbed.apply(input, offset)
    return _core.wrap_array(_diag_embedded_array(input._array, offset))


def _diag_embedded_array(arr, offset: int):
    *batch, n = arr.shape
    size = n + abs(offset)
    out = np.zeros(tuple(batch) + (size * size,), dtype=arr.dtype)
    out[..., _diagonal_positions(size, size, offset)] = arr
    return out.reshape(tuple(batch) + (size, size))


class _DiagEmbed(_Function):
    """Input's last dim written on the offset-th diagonal of zero (..., size, size) matrices,
    and back: the gradient is the gradient's diagonal (a view op, so create_graph differentiates
    it).  (Composed as a gather of every output position from input padded with a zero, the
    backward scattered the whole square back: 17x PyTorch's time for a (32, 64) input.)"""

    @staticmethod
    def forward(ctx, input, offset):
        ctx.offset = offset
        return _core.wrap_array(_diag_embedded_array(input._array, offset))

    @staticmethod
    def backward(ctx, grad):
        return grad.diagonal(ctx.offset, -2, -1), None


def fill_diagonal_(self, fill_value, wrap=False):
    """Writes fill_value on the main diagonal of self (all dims equal beyond 2-d); with wrap, a
    tall matrix's diagonal restarts every (columns + 1) rows, as numpy's fill_diagonal."""
    _check_tensor(self, "fill_diagonal_")
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if self.requires_grad and self.is_leaf and _core.is_grad_enabled():
        # PyTorch writes through a strided view of the diagonal, so its check names a view
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    mask = np.zeros(self._array.shape, dtype=bool)
    np.fill_diagonal(mask, True, wrap=bool(wrap))
    self.masked_fill_(_wrap(mask), fill_value)
    if self._base is None:
        # PyTorch's node for a fill through a view of self: CopySlices (a view of another
        # tensor already gets the view's own node names from masked_fill_)
        _core._name_grad_fn(self, "CopySlices")
    return self


# -- products ----------------------------------------------------------------------------------

def tensordot(a, b, dims=2, out=None):
    """The sum of products of a's and b's elements over the given dims: the last `dims` of a with
    the first of b, or the pairs of lists ([dims of a], [dims of b])."""
    _check_tensor(a, "tensordot", "a", 1)
    _check_tensor(b, "tensordot", "b", 2)
    dims_a, dims_b = _tensordot_dims(a, b, dims)
    if out is not None:
        return compute_then_write("tensordot", out, (a, b), lambda: tensordot(a, b, dims))
    if a._array.dtype != b._array.dtype:
        raise RuntimeError("both inputs should have same dtype")
    if a._array.dtype == np.bool_:
        raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
    contract_a = [_dim(d, a.ndim) for d in dims_a]
    contract_b = [_dim(d, b.ndim) for d in dims_b]
    for given, seen, owner in ((dims_a, contract_a, a), (dims_b, contract_b, b)):
        for i, d in enumerate(seen):
            if d in seen[:i]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    for da, db, ga, gb in zip(contract_a, contract_b, dims_a, dims_b):
        # A contracted dim of size 1 broadcasts against its partner, as in PyTorch: the
        # partner is summed over that dim first (kept as size 1, in its own dtype).
        if b.shape[db] == 1 and a.shape[da] != 1:
            a = a.sum(da, keepdim=True, dtype=a.dtype)
        elif a.shape[da] == 1 and b.shape[db] != 1:
            b = b.sum(db, keepdim=True, dtype=b.dtype)
        elif a.shape[da] != b.shape[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[da]} in dim {ga} and second has size {b.shape[db]} "
                               f"in dim {gb}")
    free_a = [d for d in range(a.ndim) if d not in contract_a]
    free_b = [d for d in range(b.ndim) if d not in contract_b]
    # One matrix product: a as (free, contracted) times b as (contracted, free).
    shape_a, shape_b = [a.shape[d] for d in free_a], [b.shape[d] for d in free_b]
    contracted = math.prod(a.shape[d] for d in contract_a)
    left = a.permute(tuple(free_a + contract_a)).reshape(math.prod(shape_a), contracted)
    right = b.permute(tuple(contract_b + free_b)).reshape(contracted, math.prod(shape_b))
    if left.shape[0] != 1 or right.shape[1] != 1:
        return left.mm(right).reshape(tuple(shape_a + shape_b))
    # one output element (a full contraction, or free dims all of size 1): PyTorch's is a
    # dot, which autocast does not cast
    from ._autocast import uncast
    with uncast():
        return left.mm(right).reshape(tuple(shape_a + shape_b))


def _tensordot_dims(a, b, dims):
    """([dims of a], [dims of b]) as given (negative dims kept, for the error messages)."""
    if isinstance(dims, TensorBase):
        arr = dims._array
        dims = int(arr) if arr.ndim == 0 else [list(map(int, row)) for row in arr]
    if is_int(dims):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.ndim or dims > b.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got "
                               f"dims={dims}")
        return list(range(-dims, 0)), list(range(dims))
    if not isinstance(dims, (list, tuple)):
        raise RuntimeError("tensordot expects dims to be int or tuple[list[int], list[int]] or "
                           f"list[list[int]] containing two lists, but got dims={dims}")
    dims_a, dims_b = dims               # (Python's unpacking error for any other length, as theirs)
    dims_a = _tensordot_dim_list(dims_a, "dims_self", 3)
    dims_b = _tensordot_dim_list(dims_b, "dims_other", 4)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    return dims_a, dims_b


def _tensordot_dim_list(part, argname: str, position: int) -> list:
    """One side's contracted dims as PyTorch's parser takes an `int[]`: a list or tuple of ints
    (_core.symint_param: one-element integer or bool tensors too), never a float or bool
    truncated into a dim."""
    where = f"tensordot(): argument '{argname}'"
    if not isinstance(part, (list, tuple)):
        raise TypeError(f"{where} (position {position}) must be tuple of ints, not "
                        f"{_type_name(part)}")
    dims = []
    for i, d in enumerate(part):
        if isinstance(d, TensorBase) and _core.symint_param(d) is not None:
            d = _core.symint_param(d)
        if not is_int(d):
            if i:
                raise TypeError(f"{where} failed to unpack the object at pos {i + 1} with error "
                                f"\"type must be tuple of ints,but got {_type_name(d)}\"")
            raise TypeError(f"{where} (position {position}) must be tuple of ints, but found "
                            f"element of type {_type_name(d)} at pos 0")
        dims.append(int(d))
    return dims


def kron(input, other, *, out=None):
    """The Kronecker product: each element of input times the whole of other, tiled in input's
    layout (shapes padded with leading 1s to the same number of dims)."""
    _check_tensor(input, "kron")
    _check_tensor(other, "kron", "other", 2)
    if out is not None:
        return compute_then_write("kron", out, (input, other), lambda: kron(input, other))
    ndim = max(input.ndim, other.ndim)
    sa = (1,) * (ndim - input.ndim) + tuple(input.shape)
    sb = (1,) * (ndim - other.ndim) + tuple(other.shape)
    # a[i] * b[j] lands at i * len(b) + j along each dim: interleave the dims, multiply, merge.
    spread_a = input.reshape(tuple(itertools.chain.from_iterable((n, 1) for n in sa)))
    spread_b = other.reshape(tuple(itertools.chain.from_iterable((1, n) for n in sb)))
    product = spread_a * spread_b
    # (PyTorch's reshape of its own temporary: an _unsafe_view)
    return _core._name_grad_fn(product.reshape(tuple(x * y for x, y in zip(sa, sb))),
                               "UnsafeViewBackward0")


def inner(input, other, *, out=None):
    """The dot product over the last dims of input and other (a product, for a 0-d one)."""
    _check_tensor(input, "inner")
    _check_tensor(other, "inner", "other", 2)
    if out is not None:
        return compute_then_write("inner", out, (input, other), lambda: inner(input, other))
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def diagflat(input, offset=0):
    """A square matrix with the flattened input on its offset-th diagonal."""
    _check_tensor(input, "diagflat")
    from . import diag
    return diag(input.reshape(-1), offset)


def block_diag(*tensors):
    """A matrix with the given tensors (0-d: 1x1, 1-d: one row) down its diagonal and zeros
    elsewhere, in the promoted dtype."""
    from . import cat, zeros
    from . import result_type
    mats = []
    for i, t in enumerate(tensors):
        _check_tensor(t, "block_diag", "tensors", 1)
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
        mats.append(t.reshape(1, 1) if t.ndim == 0 else t.reshape(1, -1) if t.ndim == 1 else t)
    if not mats:
        return zeros(1, 0)
    dtype = mats[0].dtype
    for m in mats[1:]:
        dtype = result_type(zeros(0, dtype=dtype), m)
    width = sum(m.shape[1] for m in mats)
    bands, left = [], 0
    for m in mats:
        rows, cols = m.shape
        parts = [zeros(rows, left, dtype=dtype), m.to(dtype),
                 zeros(rows, width - left - cols, dtype=dtype)]
        bands.append(cat(parts, 1))
        left += cols
    return _core._name_grad_fn(cat(bands, 0), "BlockDiagBackward0")


def _check_vector(t, fn: str) -> None:
    _check_tensor(t, fn, "tensors", 1)
    if t.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


def cartesian_prod(*tensors):
    """All tuples (a, b, ...) of elements of the 1-d tensors, in row-major order, as a
    (count, len(tensors)) tensor (a single tensor is returned as it is)."""
    for t in tensors:
        _check_vector(t, "cartesian_prod")
    if len(tensors) == 1:
        return tensors[0]
    from . import meshgrid, stack
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """All length-r combinations of input's elements (in input order, as itertools), as a
    (count, r) tensor; r = 0 gives an empty vector."""
    _check_vector(input, "combinations")
    _core.check_bool("combinations", "with_replacement", with_replacement)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty(0)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = np.array(list(pick(range(input.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    return input.index_select(0, _index_tensor(rows.reshape(-1))).reshape(rows.shape[0], r)


def vander(x, N=None, increasing=False):  # noqa: N803  (PyTorch's parameter name)
    """The Vandermonde matrix of a vector: columns x**(N-1), ..., x, 1 (reversed with
    increasing); integers and bools give int64."""
    _check_tensor(x, "vander", "x", 1)
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    from . import cat, int64
    if x._array.dtype.kind in "biu":
        x = x.to(int64)
    if n == 0:
        return x.new_empty(x.shape[0], 0)
    ones = x.new_ones(x.shape[0], 1)
    powers = ones if n == 1 else cat([ones, x.unsqueeze(1).expand(-1, n - 1).cumprod(1)], 1)
    return powers if increasing else powers.flip(1)


# -- dtype questions and float decomposition ---------------------------------------------------

def promote_types(type1, type2):
    """The dtype PyTorch's type promotion gives two tensors of these dtypes."""
    for arg, position in ((type1, 1), (type2, 2)):
        if not isinstance(arg, _core.dtype):
            raise TypeError(f"promote_types(): argument 'type{position}' (position {position}) "
                            f"must be torch.dtype, not {_type_name(arg)}")
    from . import empty, result_type
    return result_type(empty(0, dtype=type1), empty(0, dtype=type2))


def frexp(input, *, out=None):
    """(mantissa, exponent) with input = mantissa * 2**exponent and |mantissa| in [0.5, 1); the
    mantissa is input times a power of two, so its gradient is grad / 2**exponent."""
    _check_tensor(input, "frexp")
    if input._array.dtype.kind != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    if out is not None:
        _check_frexp_out(input, out)
        return compute_then_write("frexp", out, (input,), lambda: frexp(input))
    arr = input._array
    _, exponent = np.frexp(arr)
    # 2**-exponent overflows the dtype for a subnormal input (float32's 1e-40 needs 2**132):
    # two factors of half the power each are finite and multiply exactly
    first = -exponent // 2
    ones = np.ones_like(arr)
    mantissa = _core._name_grad_fn(
        input * _wrap(np.ldexp(ones, first)) * _wrap(np.ldexp(ones, -exponent - first)),
        "FrexpBackward0")
    return _core.return_types.frexp((mantissa, _wrap(exponent.astype(np.int32))))


def _check_frexp_out(input, out) -> None:
    """PyTorch casts neither of frexp's results: the mantissa out has the input's dtype, the
    exponent out int32 (checked in that order)."""
    if not (isinstance(out, (tuple, list)) and len(out) == 2
            and all(isinstance(t, _core.TensorBase) for t in out)):
        return                          # (the core's write_out refuses it in PyTorch's words)
    mantissa, exponent = out
    if mantissa._array.dtype != input._array.dtype:
        raise RuntimeError(f"torch.frexp() expects mantissa to have dtype "
                           f"{_core.c_type_name_of(input._array.dtype)} but got "
                           f"{_core.c_type_name_of(mantissa._array.dtype)}")
    if exponent._array.dtype != np.int32:
        raise RuntimeError(f"torch.frexp() expects exponent to have int dtype but got "
                           f"{_core.c_type_name_of(exponent._array.dtype)}")


# -- registration ------------------------------------------------------------------------------

FUNCTIONS = ("nonzero", "argwhere", "isin", "repeat_interleave", "tensor_split", "hsplit",
             "vsplit", "dsplit", "take_along_dim", "take", "diagonal", "diag_embed", "diagflat",
             "tensordot", "inner", "kron",
             "block_diag", "cartesian_prod", "combinations", "vander", "promote_types", "frexp")
METHODS = ("nonzero", "argwhere", "repeat_interleave", "tensor_split", "hsplit", "vsplit",
           "dsplit", "take_along_dim", "take", "diagonal", "diag_embed", "diagflat",
           "fill_diagonal_", "inner", "kron",
           "frexp")
RETURN_TYPES = {"frexp": ("mantissa", "exponent")}


def _nonzero_method(self, *, as_tuple=False):
    """Tensor.nonzero: the coordinates of the non-zero elements."""
    return nonzero(self, as_tuple=as_tuple)


@_numpy_dim_names
def _repeat_interleave_method(self, repeats=None, dim=None, *, output_size=None):
    """Tensor.repeat_interleave: the function's forms but repeat_interleave(counts), which has
    no method form in PyTorch (x.repeat_interleave() fits none of its signatures)."""
    if repeats is None:
        from ._public_calls import overloads_error
        given = {k: v for k, v in (("dim", dim), ("output_size", output_size)) if v is not None}
        raise overloads_error("repeat_interleave", (), given, True)
    return repeat_interleave(self, repeats, dim, output_size=output_size)


def register(namespace: dict, tensor_cls) -> None:
    """Add the functions to `namespace` (tapegrad's globals) and the methods to `tensor_cls`;
    existing names win."""
    register_family(namespace, tensor_cls, globals(), FUNCTIONS, METHODS, RETURN_TYPES,
                    {"nonzero": _nonzero_method, "repeat_interleave": _repeat_interleave_method})
