"""Tensor manipulation PyTorch has on `torch` and `Tensor` (issue 15): the scatter family that
writes a region of a copy (select/slice/diagonal_scatter, masked_scatter, put, index_reduce),
fill / zero_ / detach at torch level, split_with_sizes and the unsafe_ splits, sum_to_size,
resize_ / resize_as_, apply_ / map_ / map2_, the adjoint views (H, mH, adjoint), dim_order and
is_set_to.

The scatter family is one mechanism: numpy finds the flat positions of the region (the same
indexing applied to an arange of the input's size), and the recorded index_copy (index_add,
scatter_reduce) writes the values there, so the gradient is PyTorch's: the input's gradient is
zero in the region, the source receives the region's gradient.
"""
from __future__ import annotations as _annotations

import math
import operator
import warnings

import numpy as np

from . import _core, _memory_format, _ops_shape
from ._uninitialised import uninitialised
from ._class_members import has_member
from ._extra_functions import _torch_grad_fn_name
from ._out_arg import compute_then_write
from ._extra_ops import (_broadcast_shapes, _check_tensor, _dim, _dtype_name, _in_place,
                         _index_tensor, _wrap)
from ._more_ops import _distinct_dims
from .autograd.function import Function

TensorBase = _core.TensorBase


def _positions(input) -> np.ndarray:
    """The flat index of each element of input, shaped like input."""
    return np.arange(input.numel(), dtype=np.int64).reshape(tuple(input.shape))


def _write_region(input, positions: np.ndarray, src, node: str):
    """A copy of input whose elements at flat `positions` (shaped like src) hold src: a tensor
    of its own, not a view of the flat copy (PyTorch's scatter ops have no _base), its grad_fn
    named `node` (SliceScatterBackward0, not ViewBackward0)."""
    flat = input.reshape(-1)
    written = flat.index_copy(0, _index_tensor(positions.reshape(-1)),
                              src.reshape(-1).to(input.dtype))
    return _core._name_grad_fn(written.reshape(tuple(input.shape)).clone(), node)


def _check_region(src, region: np.ndarray) -> None:
    if tuple(src.shape) != region.shape:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(region.shape)}")


def _int_argument(value, fname: str, name: str) -> int:
    """value as PyTorch's parser reads an int argument: a Python or numpy integer, or a
    one-element integer tensor; anything else (a bool, a float, another tensor: which had been
    compared, or tested for truth, as it was) is its TypeError, whose position the public
    entry adds."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(f"{fname}(): argument '{name}' must be int, not {_core.type_name(value)}")


def select_scatter(input, src, dim, index):
    """A copy of input with input.select(dim, index) replaced by src (differentiable in
    both)."""
    _check_tensor(input, "select_scatter")
    _check_tensor(src, "select_scatter", "src", 2)
    d = _dim(dim, input.dim())
    index = _int_argument(index, "select_scatter", "index")
    size = input.shape[d]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {d}")
    region = np.take(_positions(input), index % size, axis=d)
    _check_region(src, region)
    return _write_region(input, region, src, "SelectScatterBackward0")


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of input with the slice start:end:step along dim replaced by src."""
    _check_tensor(input, "slice_scatter")
    _check_tensor(src, "slice_scatter", "src", 2)
    d = _dim(dim, input.dim())
    key = (slice(None),) * d + (slice(start, end, step),)
    region = _positions(input)[key]
    _check_region(src, region)
    return _write_region(input, region, src, "SliceScatterBackward0")


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of input with its diagonal (offset, dim1, dim2) replaced by src, shaped as
    input.diagonal(offset, dim1, dim2)."""
    _check_tensor(input, "diagonal_scatter")
    _check_tensor(src, "diagonal_scatter", "src", 2)
    a, b = _distinct_dims(dim1, dim2, input.dim())     # (PyTorch's RuntimeError, not numpy's)
    region = np.diagonal(_positions(input), offset, a, b)
    _check_region(src, region)
    return _write_region(input, region, src, "DiagonalScatterBackward0")


def masked_scatter(input, mask, source):
    """A copy of input where mask (broadcast to input) is True takes source's elements in row
    order (source needs at least as many elements as mask has True)."""
    _check_tensor(input, "masked_scatter")
    _check_tensor(mask, "masked_scatter", "mask", 2)
    _check_tensor(source, "masked_scatter", "source", 3)
    if mask._array.dtype != np.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {_dtype_name(mask._array)}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got{_dtype_name(input._array)} and "
                           f"{_dtype_name(source._array)}")
    _broadcast_shapes(mask._array.shape, input._array.shape)    # (PyTorch's error, not numpy's)
    shape = np.broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    target = input.expand(*shape) if shape != tuple(input.shape) else input
    chosen = _positions(target)[np.broadcast_to(mask._array, shape)]
    if chosen.size > source.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")
    result = _write_region(target, chosen, source.reshape(-1)[:chosen.size],
                           "MaskedScatterBackward0")
    _core._save_index_of(result, mask)      # (PyTorch's node saves the mask)
    return result


def _masked_scatter_(self, mask, source):
    """In-place masked_scatter (mask broadcasts to self, not the other way)."""
    from ._extra_ops import _leaf_error_first
    with _leaf_error_first(self):       # (a leaf's refusal before a mask that does not expand)
        if mask.dim() > self.dim():
            raise RuntimeError(f"expand(CPU{_dtype_name(mask._array)}Type"
                               f"{{{list(mask.shape)}}}, "
                               f"size={list(self.shape)}): the number of sizes provided "
                               f"({self.dim()}) must be greater or equal to the number of "
                               f"dimensions in the tensor ({mask.dim()})")
        mask.expand(*self.shape)        # (a mask that does not expand: expand's own refusal)
    return _in_place("masked_scatter")(self, mask, source)


def put(input, index, source, accumulate=False):
    """A copy of input with input.flatten()[index] = source (added with accumulate=True);
    negative indices count from the end."""
    _check_tensor(input, "put")
    _core.check_bool("put", "accumulate", accumulate)
    if index._array.dtype != np.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{_dtype_name(index._array)}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_dtype_name(input._array)} and "
                           f"source.dtype = {_dtype_name(source._array)}")
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, index.numel() "
                         f"= {index.numel()}")
    n = input.numel()
    flat_index = index._array.reshape(-1)
    if n == 0 and flat_index.size:
        raise IndexError("put_(): Tried to put elements into an empty tensor")     # (take's)
    bad = (flat_index >= n) | (flat_index < -n)
    if bad.any():
        raise IndexError(f"out of range: tried to access index {int(flat_index[bad][0])} on a "
                         f"tensor of {n} elements.")
    positions = _index_tensor(flat_index % max(n, 1))
    flat = input.reshape(-1)
    values = source.reshape(-1)
    written = flat.index_add(0, positions, values) if accumulate else \
        flat.index_copy(0, positions, values)
    # (a tensor of its own, not a view of the flat copy: PyTorch's put has no _base, and
    # put_ makes self the op's output only from a result that is not a view)
    result = _core._name_grad_fn(written.reshape(tuple(input.shape)).clone(), "PutBackward0")
    _core._save_index_of(result, index)     # (PyTorch's node saves index)
    return result


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """A copy of input where, along dim, slice index[i] is reduced (prod, mean, amax or amin)
    with source's slice i (with or without input's own value); differentiable as
    scatter_reduce, whose reduction it shares."""
    from ._scatter_ops import (_check_bounds, _check_index_func, _index_out_of_range_in_self,
                               _positions_key)
    _check_tensor(input, "index_reduce")
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    d = _check_index_func(input, dim, index, source, "index_reduce")
    # (PyTorch's kernel warns, after the argument checks of its meta function)
    _core.warn_once("index_reduce() is in beta and the API may change at any time.",
                    "aten/src/ATen/native/TensorAdvancedIndexing.cpp:1523")
    if input._array.dtype.kind in "bc":     # PyTorch's kernel is built for real numbers only
        raise NotImplementedError(f'"index_func_" not implemented for '
                                  f"'{_dtype_name(input._array)}'")
    positions = _check_bounds(index._array.astype(np.int64).reshape(-1),
                              input.shape[d] if input.dim() else 1, d, wrap=False,
                              error=_index_out_of_range_in_self)
    # the position each element of source lands on: its slice's index along d
    along = [1] * source.dim()
    if along:
        along[d] = positions.size
    spread = np.broadcast_to(positions.reshape(along), tuple(source.shape))
    from ._scatter_functions import scatter_reduce_apply
    key = _positions_key(input, d, spread)
    # (with its positions along d, so the compiled loop runs it, with PyTorch's rule for ties
    # of -0 and +0 in amax / amin)
    result = scatter_reduce_apply(input, key, source, reduce, include_self, index_reduce=True,
                                  along=(d, spread) if input.dim() and spread.size else None)
    _core._save_index_of(result, index)     # (PyTorch's node saves index)
    return result


# -- fill, zero, detach, splits ------------------------------------------------------------------

def fill(input, value):
    """A tensor shaped and typed like input, every element `value` (a number or a 0-d
    tensor); recorded as PyTorch's FillBackward0: zero gradient to input, the sum of the
    gradient to a tensor value."""
    _check_tensor(input, "fill")
    value_is_tensor = isinstance(value, TensorBase)
    if value_is_tensor and value.dim():
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                           f"with {value.dim()} dimensions.")
    if input.requires_grad or (value_is_tensor and value.requires_grad):
        return _Fill.apply(input, value)
    from .creation import full_like
    return full_like(input, value.item() if value_is_tensor else value)


class _Fill(Function):
    """A constant shaped like x (value a number or a 0-d tensor)."""

    @staticmethod
    def forward(ctx, x, value):
        from .creation import _fill_scalar
        ctx.value_dtype = value.dtype if isinstance(value, TensorBase) else None
        fill_value = value._array if isinstance(value, TensorBase) else _fill_scalar(
            value, x._array.dtype, x._array.size)
        return _wrap(np.full(x._array.shape, fill_value, dtype=x._array.dtype))

    @staticmethod
    def backward(ctx, grad):
        from .creation import zeros_like
        grad_value = None if ctx.value_dtype is None else grad.sum().to(ctx.value_dtype)
        # zeros, as PyTorch's: grad * 0 would give -0.0 for negative and NaN for infinite grads
        return zeros_like(grad), grad_value


_torch_grad_fn_name(_Fill, "FillBackward0")


def fill_(input, value):
    """torch.fill_: input.fill_(value)."""
    _check_tensor(input, "fill_")
    return input.fill_(value)


def zero_(input):
    """torch.zero_: input.zero_()."""
    _check_tensor(input, "zero_")
    return input.zero_()


def detach(input):
    """torch.detach: input.detach()."""
    _check_tensor(input, "detach")
    return input.detach()


def detach_(input):
    """torch.detach_: input.detach_()."""
    _check_tensor(input, "detach_")
    return input.detach_()


def split_with_sizes(input, split_sizes, dim=0):
    """input split along dim into pieces of the given sizes, which must sum to its size."""
    d, sizes = _split_with_sizes_check(input, split_sizes, dim, "split_with_sizes")
    return input.split(sizes, d)


def _split_with_sizes_check(input, split_sizes, dim, name):
    """PyTorch's checks of split_with_sizes' arguments: (dim, sizes)."""
    _check_tensor(input, name)
    d = _dim(dim, input.dim())
    sizes = [int(s) for s in split_sizes]
    if any(s < 0 for s in sizes):
        raise RuntimeError("split_with_sizes expects split_sizes have only non-negative entries, "
                           f"but got split_sizes={sizes}")
    if sum(sizes) != input.shape[d]:
        # (PyTorch names the dim as given, -1 stays -1, and its unsafe_ variant's check too)
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{input.shape[d]} (input tensor's size at dimension {int(dim)}), "
                           f"but got split_sizes={sizes}")
    return d, sizes


def narrow_copy(input, dim, start, length, *, out=None):
    """narrow's elements as a new contiguous tensor (its own storage), differentiable as narrow:
    the gradient reaches the narrowed region of the input.  ``out`` must have input's dtype."""
    _check_tensor(input, "narrow_copy")
    if out is not None:
        if isinstance(out, _core.TensorBase) and out.dtype != input.dtype:
            raise RuntimeError("Expected self.dtype() == output.dtype() to be true, but got "
                               "false.")
        return compute_then_write("narrow_copy", out, (input,),
                                  lambda: narrow_copy(input, dim, start, length))
    if isinstance(dim, int) and input.dim() > 0 and dim >= input.dim():
        # (PyTorch's check of narrow_copy, before narrow's IndexError for a negative dim)
        raise RuntimeError("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, "
                           "but got false.")
    if isinstance(length, int) and length < 0 and input.dim() > 0:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({input.shape[dim]}).")
    view = input.narrow(dim, start, length)
    # (contiguous() copies a strided view into row-major order; a row-major view needs a copy)
    copy = view.clone() if view.is_contiguous() else view.contiguous()
    return _core._name_grad_fn(copy, "NarrowCopyBackward0")


def unsafe_split(input, split_size, dim=0):
    """split without the view bookkeeping in PyTorch; here the same pieces as split, whose
    grad_fn is PyTorch's UnsafeSplitBackward0."""
    _check_tensor(input, "unsafe_split")
    if isinstance(split_size, (list, tuple)):
        raise TypeError("unsafe_split(): argument 'split_size' (position 2) must be int, not "
                        f"{type(split_size).__name__}")
    return _ops_shape._unsafe_split(input, split_size, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """split_with_sizes without the view bookkeeping in PyTorch; here the same pieces, whose
    grad_fn is PyTorch's UnsafeSplitWithSizesBackward0."""
    _split_with_sizes_check(input, split_sizes, dim, "unsafe_split_with_sizes")
    return _ops_shape._unsafe_split(input, [int(s) for s in split_sizes], dim)


def unsafe_chunk(input, chunks, dim=0):
    """chunk without the view bookkeeping in PyTorch; here the same pieces as chunk, whose
    grad_fn is PyTorch's UnsafeSplitBackward0."""
    _check_tensor(input, "unsafe_chunk")
    return _ops_shape._unsafe_chunk(input, chunks, dim)


# -- sum_to_size, resize ---------------------------------------------------------------------------

def _sum_to_size(self, *size, **keywords):
    """self summed down to `size`, which must broadcast (expand) to self's shape: the leading
    dims self has in excess are summed away, dims of size 1 in `size` kept with keepdim.  The
    sizes are given as arguments or as one sequence, also by PyTorch's keyword `size`."""
    if keywords:
        unknown = next((k for k in keywords if k != "size"), None)
        if unknown is not None:
            raise TypeError(f"sum_to_size() got an unexpected keyword argument '{unknown}'")
        if size:
            raise TypeError("sum_to_size() got multiple values for argument 'size'")
        size = (keywords["size"],)
    if not size:
        raise TypeError('sum_to_size() missing 1 required positional arguments: "size"')
    target = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    shape = tuple(self.shape)
    extra = len(shape) - len(target)
    if extra < 0 or any(t != 1 and t != s for t, s in zip(target, shape[extra:])):
        raise RuntimeError(f"size {{{list(target)}}} is not expandable to size {{{list(shape)}}}.")
    if not target:
        # (PyTorch's sum_to of an empty size is a full sum(), even of a 0-d tensor: a bool or
        # integer 0-d tensor comes back as int64 through SumBackward0, not as itself)
        return self.sum()
    result = self.sum(tuple(range(extra))) if extra else self
    kept = tuple(i for i, (t, s) in enumerate(zip(target, shape[extra:])) if t == 1 and s != 1)
    return result.sum(kept, keepdim=True) if kept else result


def _resized_array(arr: np.ndarray, shape: tuple) -> np.ndarray:
    """arr's elements in row order, as many as `shape` holds, in a new array of that shape;
    elements beyond arr's are uninitialised, as PyTorch's resize_ leaves them."""
    out = uninitialised(shape, arr.dtype)
    count = min(out.size, arr.size)
    out.reshape(-1)[:count] = arr.reshape(-1)[:count]
    return out


def _storage_of(arr: np.ndarray):
    """The flat C-contiguous array owning arr's memory (its storage, as PyTorch sees it) and
    arr's element offset into it; (None, 0) when the owner is not a flat-viewable array."""
    root = arr
    while isinstance(root.base, np.ndarray):
        root = root.base
    if not root.flags.c_contiguous or root.dtype != arr.dtype:
        return None, 0
    start = arr.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    if arr.size == 0 and root is not arr and not 0 <= start <= root.nbytes:
        # (an empty view may carry any address; one inside its owner is at an offset of it, as
        # torch.FloatTensor(storage) is after storage.resize_)
        return None, 0
    return root.reshape(-1), start // arr.itemsize


def _resize_(self, *sizes, size=None, memory_format=None):
    """Tensor.resize_: self takes `size` (given as ints, one sequence, or size=), keeping its
    first elements in row order (new ones uninitialised); refused for a tensor that requires
    grad, as PyTorch.  With memory_format=, the storage's elements are laid out in that format
    (PyTorch restrides the tensor over its storage even when the shape does not change: the
    values at each index move)."""
    if size is not None:
        if sizes:
            raise TypeError("resize_() got multiple values for argument 'size'")
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"resize_(): argument 'size' must be tuple of ints, not "
                            f"{type(size).__name__}")
        sizes = (size,)
    target = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if any(s < 0 for s in target):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(target)}: "
                           f"{list(target)}")
    target = tuple(int(s) for s in target)
    order = None
    if memory_format is not None:
        fmt = _memory_format.check_memory_format(memory_format, "resize_")
        if fmt is _memory_format.preserve_format:
            raise RuntimeError("Unsupported memory formatPreserve")
        order = _memory_format.array_order(fmt, target, "resize_") or tuple(range(len(target)))
    if tuple(self.shape) != target or order is not None:
        arr = self._array
        count = math.prod(target)
        # (PyTorch's int64 checks; numpy would wrap the product around)
        if count > np.iinfo(np.int64).max:
            raise RuntimeError("numel: integer multiplication overflow")
        if count * arr.itemsize > np.iinfo(np.int64).max:
            raise RuntimeError(f"Storage size calculation overflowed with sizes={list(target)}")
        storage, offset = _storage_of(arr)
        if storage is not None and offset + count <= storage.size:
            # PyTorch keeps the storage when it is large enough and lays the new shape out
            # from the tensor's offset: the tensor stays an alias of every tensor sharing it
            # (torch.Tensor(t).resize_(...).zero_() zeroes t).
            flat = storage[offset:offset + count]
        else:
            flat = _resized_array(arr, (count,))
        if order is None:
            self.data = _wrap(flat.reshape(target))
        else:
            back = tuple(order.index(d) for d in range(len(target)))
            # (wrapped as it is: _wrap would copy a channels-last layout to row-major)
            self.data = _core.wrap_array(
                flat.reshape(tuple(target[d] for d in order)).transpose(back), False)
        # (PyTorch bumps the version only when the shape changes: resize_ to the same shape
        # is no write)
        _core._mark_written(self)
    return self


def _resize_as_(self, the_template, memory_format=None):
    """Tensor.resize_as_: resize_ to the template's shape; memory_format=preserve_format takes
    the template's layout (its suggest_memory_format)."""
    if memory_format is _memory_format.preserve_format:
        memory_format = (_memory_format.suggested_channels_last(the_template)
                         or _memory_format.contiguous_format)
    return _resize_(self, tuple(the_template.shape), memory_format=memory_format)


def resize_as_(input, the_template, *, memory_format=None):
    """torch.resize_as_: input.resize_as_(the_template)."""
    _check_tensor(input, "resize_as_")
    return _resize_as_(input, the_template, memory_format=memory_format)


def _resize(self, *size):
    """Tensor.resize (deprecated by PyTorch, which warns): a reshape that keeps the number of
    elements (autograd's resize)."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _autograd_resize(self, *size)


def _resize_as(self, tensor):
    """Tensor.resize_as (deprecated by PyTorch, which warns): resize to tensor's shape."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _autograd_resize(self, tuple(tensor.shape))


def _autograd_resize(self, *size):
    target = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    count = int(np.prod(target)) if target else 1
    if count != self.numel():
        shape = "x".join(str(s) for s in self.shape)
        raise RuntimeError(f"requested resize to {'x'.join(str(s) for s in target)} ({count} "
                           f"elements in total), but the given tensor has a size of {shape} "
                           f"({self.numel()} elements). autograd's resize can only change the "
                           f"shape of a given tensor, while preserving the number of elements. ")
    # PyTorch's Resize is new(self).contiguous().view(sizes): the result shares a contiguous
    # tensor's storage (writing through it changes self) and copies only a non-contiguous one.
    return self.contiguous().view(target)


# -- apply_, map_, map2_ ---------------------------------------------------------------------------

def _python_map(self, name: str, fn, *others):
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                           f"var.detach().{name}() instead.")
    arrays = [np.broadcast_to(o._array, tuple(self.shape)) for o in others]
    flat = self._array.reshape(-1)
    values = np.array([fn(*(v.item() for v in items))
                       for items in zip(flat, *(a.reshape(-1) for a in arrays))]
                      if flat.size else [], dtype=self._array.dtype)
    from ._shift_ops import _write_back
    return _write_back(self, _wrap(values.reshape(tuple(self.shape))))


def _apply_(self, callable):
    """Tensor.apply_: each element replaced by callable(element) (Python numbers, slow; no
    gradient: refused on a tensor that requires grad)."""
    return _python_map(self, "apply_", callable)


def _map_(self, tensor, callable):
    """Tensor.map_: each element replaced by callable(element, other element), tensor
    broadcast to self."""
    return _python_map(self, "map_", callable, tensor)


def _map2_(self, x, y, callable):
    """Tensor.map2_: callable(element, x element, y element), x and y broadcast to self."""
    return _python_map(self, "map2_", callable, x, y)


# -- adjoint views, dim_order, is_set_to ---------------------------------------------------------

def adjoint(input):
    """The conjugate transpose of the last two dims (for real tensors, mT)."""
    _check_tensor(input, "adjoint")
    if input.dim() == 0:
        _core.warn_once("adjoint() is deprecated on 0-D tensors. Consider using x.conj().",
                        "aten/src/ATen/native/TensorShape.cpp:4390")
        return _conjugated(input)
    if input.dim() < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {input.dim()}-D tensor.")
    return _conjugated(input.mT)


def _mH(self):
    """The conjugate transpose of the last two dims: for real tensors, mT (a 0-d tensor
    itself, conjugated, with PyTorch's warning)."""
    if self.dim() == 0:
        _core.warn_once("Tensor.mH is deprecated on 0-D tensors. Consider using x.conj().",
                        "aten/src/ATen/native/TensorShape.cpp:4382")
        return _conjugated(self)
    if self.dim() < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. "
                           f"Got {self.dim()}-D tensor.")
    return _conjugated(self.mT)


def _H(self):
    """The conjugate transpose of a matrix (a 0-d tensor itself, with PyTorch's warning)."""
    if self.dim() == 0:
        _core.warn_once("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().",
                        "aten/src/ATen/native/TensorShape.cpp:4335")
        return _conjugated(self)
    if self.dim() != 2:
        hint = ". For batches of matrices, consider using tensor.mH" if self.dim() > 2 else "."
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self.dim()}-D tensor{hint}")
    return _conjugated(self.mT)


def _conjugated(t):
    """t.conj() for a complex tensor (the adjoints conjugate), t itself for a real one."""
    return t.conj() if t._array.dtype.kind == "c" else t


def _name(self):
    """PyTorch's read-only Tensor.name: None (tapegrad has no named tensors)."""
    return None


def _dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory, as PyTorch orders them.

    ambiguity_check=True: PyTorch's error when another order would describe the same memory (a
    size-1 dim, two neighbouring dims of equal stride, a broadcast dim); a list of memory
    formats: the first error only if the tensor is then not in exactly one of them
    (torch.empty((1, 2, 3, 4)) is ambiguous, but only contiguous_format describes it)."""
    from ._memory_format import channels_last, memory_format
    if not isinstance(ambiguity_check, bool) and not (
            isinstance(ambiguity_check, list)
            and all(isinstance(f, memory_format) for f in ambiguity_check)):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
    shape, strides = tuple(self.shape), self.stride()
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    if ambiguity_check is not False:
        ambiguous = 1 in shape or any(a == b for a, b in zip(strides, strides[1:]))
        if ambiguous and sum(bool(self.is_contiguous(memory_format=f)) for f in formats) != 1:
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to "
                               "exact one of the given memory formats.")
    ndim = len(shape)
    if ndim <= 1:
        return tuple(range(ndim))
    row_major, cl = self.is_contiguous(), self.is_contiguous(memory_format=channels_last)
    if row_major != cl:
        return tuple(range(ndim)) if row_major else (0, *range(2, ndim), 1)

    def covers(x, y):      # PyTorch's "x >= y" between sizes or strides: y divides x counts
        return y == 0 or (x != 0 and (x >= y or x % y == 0))

    def outer_first(a, b):
        """1: dim a lies inside dim b (swap them); -1: a lies outside b; 0: undecided (a
        broadcast dim, or equal strides over sizes that do not order them)."""
        if strides[a] == 0 or strides[b] == 0:
            return 0
        if strides[a] == strides[b]:
            return 0 if covers(shape[b], shape[a]) else 1
        return -1 if covers(strides[b], strides[a]) else 1

    from ._preserve_layout import sorted_dims
    order = sorted_dims(list(reversed(range(ndim))), outer_first)
    if ambiguity_check and any(outer_first(order[k], order[k + 1]) != -1
                               for k in range(ndim - 1)):
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(reversed(order))


def _is_set_to(self, tensor):
    """Whether both tensors view the same memory with the same sizes and strides."""
    _check_tensor(tensor, "is_set_to", "tensor")
    a, b = self._array, tensor._array
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0] and
            a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype)


def _as_subclass(self, cls):
    """self as an instance of `cls` (a subclass of Tensor): a view of the same values that stays
    in self's graph (an AliasBackward0 node when self requires grad), as PyTorch's."""
    if not (isinstance(cls, type) and issubclass(cls, _core.TensorBase)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                        "Tensor is not possible. Make sure your class inherits from Tensor.")
    from .overrides import _DisableTorchFunction
    with _DisableTorchFunction():   # (PyTorch's as_subclass is no call a mode or override sees)
        out = self[...]
    out.__class__ = cls
    return out


def get_device(input) -> int:
    """The device ordinal of input: -1, the CPU's (as PyTorch answers for CPU tensors)."""
    _check_tensor(input, "get_device")
    return -1


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero's (count, ndim) coordinates cut or padded with fill_value to exactly `size`
    rows (a shape known in advance)."""
    _check_tensor(input, "nonzero_static")
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = np.argwhere(input._array)
    out = np.full((size, input.dim()), fill_value, dtype=np.int64)
    count = min(size, len(found))
    out[:count] = found[:count]
    return _wrap(out)


def _volatile(self):
    """Removed from PyTorch (always False, with its warning)."""
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                  stacklevel=2)
    return False


_REINFORCE_REMOVED = """reinforce() was removed.
Use torch.distributions instead.
See https://pytorch.org/docs/main/distributions.html

Instead of:

probs = policy_network(state)
action = probs.multinomial()
next_state, reward = env.step(action)
action.reinforce(reward)
action.backward()

Use:

probs = policy_network(state)
# NOTE: categorical is equivalent to what used to be called multinomial
m = torch.distributions.Categorical(probs)
action = m.sample()
next_state, reward = env.step(action)
loss = -m.log_prob(action) * reward
loss.backward()
"""


def _reinforce(self, reward):
    """Removed from PyTorch (0.3-era REINFORCE scripts call it): raises PyTorch's RuntimeError,
    which points to torch.distributions."""
    raise RuntimeError(_REINFORCE_REMOVED)


FUNCTIONS = ("select_scatter", "slice_scatter", "diagonal_scatter", "masked_scatter", "put",
             "index_reduce", "fill", "fill_", "zero_", "detach", "detach_", "split_with_sizes",
             "unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk", "resize_as_", "adjoint",
             "get_device", "nonzero_static", "narrow_copy")
METHODS = ("select_scatter", "slice_scatter", "diagonal_scatter", "masked_scatter", "put",
           "index_reduce", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes",
           "unsafe_chunk", "adjoint", "nonzero_static", "narrow_copy")


def register(namespace: dict, tensor_cls) -> None:
    """Add the functions to `namespace`, the methods, in-place forms and properties to
    `tensor_cls` (existing names win)."""
    from ._extra_ops import register_family
    register_family(namespace, tensor_cls, globals(), FUNCTIONS, METHODS, {})
    extras = {"put_": _in_place("put"), "index_reduce_": _in_place("index_reduce"),
              "masked_scatter_": _masked_scatter_, "sum_to_size": _sum_to_size,
              "resize_": _resize_, "resize_as_": _resize_as_, "resize": _resize,
              "resize_as": _resize_as, "apply_": _apply_, "map_": _map_, "map2_": _map2_,
              "dim_order": _dim_order, "is_set_to": _is_set_to, "as_subclass": _as_subclass,
              "H": property(_H), "mH": property(_mH), "name": property(_name),
              "volatile": property(_volatile), "reinforce": _reinforce}
    for name, value in extras.items():
        if not has_member(tensor_cls, name):
            setattr(tensor_cls, name, value)
