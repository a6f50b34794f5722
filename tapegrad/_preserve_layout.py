"""PyTorch's preserve_format layout, for the ops whose result PyTorch allocates with
``empty_like(input, MemoryFormat::Preserve)`` (flip, sort, the *_like factories, normalize).

Such a result has the input's strides when the input is dense and non-overlapping, and otherwise
the dense strides of the input's dim order (at::infer_dense_strides: dims sorted by stride,
innermost first, a stride-0 (expanded) dim comparing as a tie that keeps the dims' order).  A
result laid out differently from PyTorch's makes a later ``.view()`` work where PyTorch's raises
or raise where it works.

``preserved_order(t)`` gives that order outermost first, or None when it is the row-major one
(the common case: callers then do nothing extra).  An op computed on ``t.permute(order)`` (which
is then laid out row-major) and permuted back with ``inverse(order)`` comes out in the layout
PyTorch gives."""
from __future__ import annotations as _annotations

import numpy as np

from ._memory_format import array_order, empty_array
from ._uninitialised import uninitialised


def _inner_to_outer(shape, strides) -> list:
    """at::infer_dense_strides' dim order, innermost first (an insertion sort in which a pair
    with a zero stride is ambiguous and keeps its order; equal strides put the longer dim
    outside)."""
    ndim = len(shape)
    perm = list(range(ndim - 1, -1, -1))

    def should_swap(d0, d1):
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return -1 if s0 < s1 else 1
        return 1 if shape[d0] > shape[d1] else 0

    return sorted_dims(perm, should_swap)


def sorted_dims(perm: list, should_swap) -> list:
    """perm (dims, innermost first) sorted in place by PyTorch's insertion sort of dims: each dim
    moves outwards past the dims should_swap(inner, outer) > 0 says it lies outside of, and stops
    at the first pair it orders (< 0) or leaves undecided (0), so broadcast and tied dims keep
    their logical order.  at::infer_dense_strides and Tensor.dim_order both sort so."""
    for i in range(1, len(perm)):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm


def preserved_order(t):
    """The dim order (outermost first) of PyTorch's preserve_format result for tensor t, or None
    when it is row-major.  Size-1 dims take no part: their strides are free."""
    arr = t._array
    if arr.ndim < 2 or arr.flags.c_contiguous:
        return None
    sizes = arr.shape
    strides = tuple(s // arr.itemsize for s in arr.strides)
    order = list(reversed(_inner_to_outer(sizes, strides)))
    big = [d for d in order if sizes[d] != 1]
    if big == sorted(big):
        return None
    # size-1 dims go back to the places they hold in row-major order among the others
    return tuple(_merge_unit_dims(big, sizes))


def _merge_unit_dims(big, sizes):
    out, k = [], 0
    for d in range(len(sizes)):
        if sizes[d] == 1:
            out.append(d)
        else:
            out.append(big[k])
            k += 1
    return out


def inverse(order) -> tuple:
    """The permutation that undoes `order`."""
    return tuple(int(i) for i in np.argsort(order))


def empty_preserving(t, dtype) -> np.ndarray:
    """An uninitialised array of t's shape in PyTorch's preserve_format layout of t."""
    order = preserved_order(t)
    shape = t._array.shape
    if order is None:
        return uninitialised(shape, dtype)
    return uninitialised(tuple(shape[d] for d in order), dtype).transpose(inverse(order))


def _keeps_layout(memory_format) -> bool:
    return memory_format is None or getattr(memory_format, "_name", None) == "preserve_format"


def like_layout(arr: np.ndarray, t, memory_format, fn: str) -> np.ndarray:
    """arr (t's shape, row-major) in the layout the *_like factory `fn` gives for t: PyTorch's
    preserve_format, the default, keeps t's layout; another format lays arr out as it names."""
    if _keeps_layout(memory_format):
        if preserved_order(t) is None:
            return arr
    elif array_order(memory_format, arr.shape, fn) is None:
        return arr
    out = empty_like_layout(t, arr.dtype, memory_format, fn)
    out[...] = arr
    return out


def empty_like_layout(t, dtype, memory_format, fn: str) -> np.ndarray:
    """An uninitialised array of t's shape in the layout a *_like factory's memory_format gives:
    t's own for preserve_format (the default), else the one the format names."""
    if _keeps_layout(memory_format):
        return empty_preserving(t, dtype)
    return empty_array(t._array.shape, dtype, memory_format, fn)
