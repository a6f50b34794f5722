"""as_strided: a view of a tensor's storage with any sizes, strides and storage offset.

As in PyTorch, the strides and the offset count elements of the *storage* (the numpy array that
owns the memory, which several tensors may view), not of the input's own layout.  The result is
a view (writes through either reach the other, one version counter) whose gradient is PyTorch's
AsStridedBackward0: scattered into the input's shape, with the elements that overlapping strides
repeat accumulating.  tapegrad expresses that gradient with the input's element indices, so the
view may only reach storage elements that the input itself covers.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import math

import numpy as np

from . import _core
from ._class_members import has_member


def storage_of(arr: np.ndarray):
    """(storage, element offset) of arr: the contiguous array of arr's dtype that owns its
    memory (or a flat view of it in memory order), and where arr's first element lies in it;
    None when there is no such array (a buffer numpy reinterprets or built with stride
    tricks)."""
    root = arr.base if isinstance(arr.base, np.ndarray) else arr
    if isinstance(root.base, np.ndarray) or root.dtype != arr.dtype:
        return None
    storage = root if root.flags.c_contiguous or root.flags.f_contiguous else \
        dense_in_memory_order(root)
    if storage is None:
        return None         # (storage positions are memory order, whichever order root has)
    if root is arr:
        return storage, 0
    byte_offset = arr.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return storage, byte_offset // arr.itemsize


def dense_in_memory_order(root: np.ndarray):
    """A flat array over root's memory in memory order, when root covers one block densely in
    another order than C's or Fortran's (a layout-preserving result of a transposed or batched
    column-major tensor: svd's U, abs of it); None otherwise.  Such a root is a storage too:
    refusing it made diagonal() of it a copy, whose writes never reached the tensor (fuzz
    seed 66300108)."""
    order = sorted(range(root.ndim), key=lambda d: -root.strides[d])
    in_order = root.transpose(order)
    if not in_order.flags.c_contiguous:
        return None
    return in_order.reshape(-1)


def _int_list(v, name: str) -> list:
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return [int(v)]
    try:
        items = [int(s) if isinstance(s, (int, np.integer)) and not isinstance(s, bool) else None
                 for s in v]
    except TypeError:
        items = [None]
    if None in items:
        raise TypeError(f"as_strided(): argument '{name}' must be tuple of ints, not "
                        f"{_type_name(v)}")
    return items


def _positions(size, stride, offset) -> np.ndarray:
    """The storage position of every element of a (size, stride, offset) view, in its shape."""
    pos = np.full(tuple(size), offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        pos = pos + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return pos


def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s storage with the given ``size``, ``stride`` (in elements) and
    ``storage_offset`` (default: input's own); differentiable (PyTorch's AsStridedBackward0:
    elements that overlapping strides repeat receive the sum of their gradients).

    Examples
    --------
    >>> x = tapegrad.arange(6.)
    >>> tapegrad.as_strided(x, (2, 3), (1, 1))      # overlapping windows, no copy
    tensor([[0., 1., 2.],
            [1., 2., 3.]])
    """
    return strided(input, size, stride, storage_offset)


def strided(input, size, stride, storage_offset=None, unfold: bool = False, key=None):
    """as_strided's view; with `unfold`, recorded under Tensor.unfold's node name.  `key`: the
    input element of each view element when the caller knows it (unfold's windows), instead of
    finding it from storage positions (which cannot tell apart the elements of an expanded
    input, which share memory)."""
    if not isinstance(input, _core.TensorBase):
        raise TypeError(f"as_strided(): argument 'input' (position 1) must be Tensor, not "
                        f"{_type_name(input)}")
    size, stride = _int_list(size, "size"), _int_list(stride, "stride")
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {stride}")
    if any(n < 0 for n in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={size} and "
                           f"strides={stride}")
    arr = input._array
    found = storage_of(arr)
    if found is None:
        raise NotImplementedError("tapegrad: as_strided of a tensor whose memory numpy "
                                  "reinterprets (no storage of its own dtype to index)")
    storage, own_offset = found
    offset = own_offset if storage_offset is None else int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    numel = math.prod(size)
    itemsize = arr.itemsize
    check_storage_bounds(size, stride, offset, itemsize, storage.size)
    if key is None:
        key = _input_key(arr, own_offset, _positions(size, stride, offset))
    out = np.ndarray(tuple(size), arr.dtype, buffer=storage, offset=offset * itemsize if numel
                     else 0,
                     strides=tuple(s * itemsize for s in stride))
    if not storage.flags.writeable or any(n > 1 and st == 0 for n, st in zip(size, stride)):
        # A layout where several elements are one memory location (a zero stride over more
        # than one element) is read-only, as expand()'s: PyTorch refuses elementwise writes
        # into it ("more than one element of the written-to tensor refers to a single memory
        # location") and writes a single value where it allows (fill_, x[i] = v); numpy would
        # silently let the last of the aliased writes win.
        out.flags.writeable = False
    return strided_view(input, out, key, unfold)


def check_storage_bounds(size, stride, offset: int, itemsize: int, storage_numel: int) -> None:
    """PyTorch's refusal of a (size, stride, offset) layout reaching past a storage of
    `storage_numel` elements (as_strided, set_)."""
    if math.prod(size) == 0:
        return
    needed = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
    if needed > storage_numel:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {offset}, and itemsize {itemsize} requiring a storage size "
                           f"of {needed * itemsize} are out of bounds for storage of size "
                           f"{storage_numel * itemsize}")


def strided_view(input, out: np.ndarray, key: tuple, unfold: bool = False):
    """The view tensor for `out` (a numpy view of input's storage holding input's elements at
    `key`, one index array per dim of input), recorded as AsStridedBackward0 (UnfoldBackward0
    for Tensor.unfold's windows)."""
    return _core._as_strided_view(input, out, key, unfold)


def _input_key(arr: np.ndarray, own_offset: int, positions: np.ndarray) -> tuple:
    """The index (one int64 array per dim of arr; one for a 0-d arr, seen as shape (1,)) of
    the element of arr at each storage position; raises if a position is none of arr's."""
    shape = arr.shape if arr.ndim else (1,)
    itemsize = arr.itemsize
    if positions.size == 0:
        return tuple(np.zeros(positions.shape, dtype=np.int64) for _ in shape)
    strides = [s // itemsize for s in arr.strides] if arr.ndim else [1]
    if arr.flags.c_contiguous or arr.ndim == 0:
        flat = positions - own_offset
        inside = (flat >= 0) & (flat < arr.size)
    else:
        # where each of arr's elements lies in the storage, as a lookup table over their span
        mine = _positions(shape, strides, own_offset).ravel()
        low, high = int(mine.min()), int(mine.max())
        table = np.full(high - low + 1, -1, dtype=np.int64)
        table[mine - low] = np.arange(mine.size, dtype=np.int64)
        if np.count_nonzero(table >= 0) != mine.size:
            raise NotImplementedError("tapegrad: as_strided of a tensor whose elements share "
                                      "memory (an expanded tensor): clone it first")
        rel = positions - low
        inside = (rel >= 0) & (rel < table.size)
        flat = np.where(inside, table[np.clip(rel, 0, table.size - 1)], -1)
        inside &= flat >= 0
    if not inside.all():
        raise NotImplementedError("tapegrad: as_strided reaching storage elements outside the "
                                  "input tensor's own (its gradient could not reach them); "
                                  "call it on the base tensor")
    return np.unravel_index(flat, shape)


def as_strided_method(self, size, stride, storage_offset=None):
    """``Tensor.as_strided(size, stride, storage_offset=None)``: see ``tapegrad.as_strided``."""
    return as_strided(self, size, stride, storage_offset)


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of ``input`` (fresh storage, input's layout) with ``src`` written into the
    elements ``input.as_strided(size, stride, storage_offset)`` selects: ``out = input.clone();
    out.as_strided(...).copy_(src)``, recorded as those ops, so ``input``'s gradient is zero at
    the written elements and ``src``'s is the gradient read through the same window."""
    size, stride = _int_list(size, "size"), _int_list(stride, "stride")
    if tuple(src.shape) != tuple(size):
        raise RuntimeError("expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(size)}")
    if input.requires_grad and not input.is_contiguous():
        # (PyTorch's internal assert: its backward reads the input's storage as contiguous)
        raise RuntimeError("!self.requires_grad() || self.is_contiguous() INTERNAL ASSERT "
                           "FAILED: as_strided_scatter is currently only supported for "
                           "contiguous inputs")
    out = input.clone()
    out.as_strided(size, stride, storage_offset).copy_(src)
    return out


def as_strided_scatter_method(self, src, size, stride, storage_offset=None):
    """``Tensor.as_strided_scatter(src, size, stride, storage_offset=None)``: see
    ``tapegrad.as_strided_scatter``."""
    return as_strided_scatter(self, src, size, stride, storage_offset)


def register(namespace: dict, tensor_cls) -> None:
    """Add ``as_strided`` and ``as_strided_scatter`` to tapegrad and to Tensor."""
    namespace.setdefault("as_strided", as_strided)
    namespace.setdefault("as_strided_scatter", as_strided_scatter)
    if not has_member(tensor_cls, "as_strided"):
        tensor_cls.as_strided = as_strided_method
    if not has_member(tensor_cls, "as_strided_scatter"):
        tensor_cls.as_strided_scatter = as_strided_scatter_method
