"""How ATen's CPU elementwise loop splits its work, for the kernels whose result depends on the
path an element takes (a SIMD lane or the scalar loop after the last full vector pair).

TensorIterator walks its operands in memory order (dims sorted by stride, innermost first,
contiguous dims coalesced into one run).  At GRAIN_SIZE elements or more, with more than one
intra-op thread, parallel_for cuts that walk into min(threads, ceil(count / GRAIN_SIZE)) equal
parts.  Within a part, each piece of an inner run is one call of the loop: when the run is
contiguous it takes two 32-byte vectors per step (AVX-512 CPUs run the AVX2 build of these
kernels), and the elements left after the last full pair run the scalar code; a strided run is
all scalar.  Facts from ATen's TensorIterator.cpp, cpu/Loops.h (vectorized_loop) and
Parallel-inl.h, and from the values PyTorch 2.13 prints on an AVX-512 Xeon; no code taken.
"""
from __future__ import annotations as _annotations

import numpy as np

GRAIN_SIZE = 32768          # at::internal::GRAIN_SIZE
VECTOR_BYTES = 32           # one at::vec::Vectorized of the AVX2 (and DEFAULT) build


def parallel_parts(count: int, threads: int) -> list:
    """The [begin, end) ranges parallel_for gives its threads for `count` elements."""
    parts = 1
    if count >= GRAIN_SIZE and threads > 1:
        parts = min(threads, -(-count // GRAIN_SIZE))
    part = max(1, -(-count // parts))
    return [(begin, min(count, begin + part)) for begin in range(0, count, part)]


_masks: dict = {}              # layout -> its read-only scalar_path_mask (a loop's every step)
_MASKS_KEPT = 64


def scalar_path_mask(array: np.ndarray, element_size: int, threads: int) -> np.ndarray:
    """Per element of `array` (the input of a unary elementwise kernel, its output laid out
    alike), whether ATen's vectorised loop computes it in its scalar code rather than a SIMD lane.
    `element_size` is the bytes of PyTorch's dtype (2 for bfloat16, whatever holds it here).
    Read-only: one array per layout, kept for the next call with that layout."""
    strides = tuple(abs(s) // array.itemsize for s in array.strides)     # in elements
    key = (array.shape, strides, element_size, threads)
    mask = _masks.get(key)
    if mask is None:
        if len(_masks) >= _MASKS_KEPT:
            _masks.clear()
        mask = _masks[key] = _scalar_path_mask(array.shape, strides, element_size, threads)
        mask.flags.writeable = False
    return mask


def _scalar_path_mask(shape: tuple, strides: tuple, element_size: int, threads: int) -> np.ndarray:
    mask = np.ones(shape, dtype=bool)
    size = mask.size
    if size == 0:
        return mask
    # memory order, innermost first; size-1 dims take no part in the walk
    walk = sorted((d for d in range(len(shape)) if shape[d] != 1), key=strides.__getitem__)
    if not walk or strides[walk[0]] != 1:
        return mask                       # one element, or a strided inner run: all scalar
    inner = 1
    for d in walk:                        # coalesce the contiguous inner dims into one run
        if strides[d] != inner:
            break
        inner *= shape[d]
    pair = 2 * (VECTOR_BYTES // element_size)
    scalar = np.empty(size, dtype=bool)     # in walk order
    for begin, end in parallel_parts(size, threads):
        index = np.arange(begin, end, dtype=np.int64)
        run_start = index - index % inner
        piece_start = np.maximum(run_start, begin)
        piece_end = np.minimum(run_start + inner, end)
        scalar[begin:end] = index >= piece_end - (piece_end - piece_start) % pair
    # walk order back to the array's own positions (outermost walked dim first)
    order = list(reversed(walk)) + [d for d in range(len(shape)) if d not in walk]
    positions = np.arange(size).reshape(shape).transpose(order).reshape(-1)
    mask.reshape(-1)[positions] = scalar
    return mask
