"""Products of float16 / bfloat16 values in the order and rounding of PyTorch's CPU kernel.

PyTorch's prod reduces a half type in that type: every partial product is rounded to it (it
does not accumulate in float32 as its sums do), so the result depends on the order of the
multiplications.  Its reduction loop (binary_kernel_reduce_vec, the AVX2 kernel also on AVX-512
machines) multiplies, for each output element:

- along a reduced dim that is the input's innermost one in memory (unit stride): first the
  leading n // 64 * 64 elements as four 16-lane vectors accumulated lane-wise over the blocks of
  64, the four vectors then combined as (v0 * v1) * (v2 * v3) and its 16 lanes in order into the
  output, then the remaining elements one by one;
- along any other dim: the elements one by one, in order.

numpy's float16 reduce keeps a float32 accumulator and rounds once, which differed from PyTorch
by an ulp or more (fuzz 67000840: bfloat16 prod(dim=1) of 4 values, 4 bfloat16 ulps).  Above
PyTorch's grain size (32768 elements) its threads split the work: the order here is the
single-thread one.
"""
from __future__ import annotations as _annotations

import numpy as np

_LANES = 16             # Vectorized<Half/BFloat16> of the AVX2 kernel
_BLOCK = 4 * _LANES


def half_product(a: np.ndarray, axis, rounded) -> np.ndarray:
    """The product of float32 array `a` (every value already of the half type) over `axis`
    (an int, or None for all elements), each partial product passed through `rounded` (float32
    array -> float32 array of the half type's values).  The result has `axis` removed."""
    a = np.asarray(a, dtype=np.float32)
    if axis is None:
        # all elements in memory order, as one row when they are dense (TensorIterator
        # coalesces the dims), else element by element
        order = np.argsort([-abs(s) for s in a.strides], kind="stable")
        flat = np.transpose(a, order).reshape(-1) if a.ndim else a.reshape(-1)
        dense = a.size == 0 or np.transpose(a, order).flags.c_contiguous
        return _reduce_last(flat, dense, rounded)
    moved = np.moveaxis(a, axis, -1)
    others = [s for n, s in zip(moved.shape[:-1], moved.strides[:-1]) if n > 1]
    inner = moved.shape[-1] > 1 and moved.strides[-1] == a.itemsize and \
        all(abs(s) > a.itemsize for s in others)
    return _reduce_last(moved, inner, rounded)


def _reduce_last(x: np.ndarray, blocked: bool, rounded) -> np.ndarray:
    """Products over x's last dim: the vector blocks first when `blocked`, then one by one."""
    n = x.shape[-1]
    out = np.ones(x.shape[:-1], dtype=np.float32)
    start = 0
    if blocked and n >= _BLOCK:
        blocks = n // _BLOCK
        acc = [x[..., j * _LANES:(j + 1) * _LANES] for j in range(4)]
        for b in range(1, blocks):
            base = b * _BLOCK
            acc = [rounded(acc[j] * x[..., base + j * _LANES:base + (j + 1) * _LANES])
                   for j in range(4)]
        lanes = rounded(rounded(acc[0] * acc[1]) * rounded(acc[2] * acc[3]))
        folded = lanes[..., 0]
        for j in range(1, _LANES):
            folded = rounded(folded * lanes[..., j])
        out = rounded(out * folded)
        start = blocks * _BLOCK
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(start, n):
            out = rounded(out * x[..., k])
    return out


def float16_rounded(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to float16 (to nearest, ties to even), as float32."""
    with np.errstate(over="ignore"):
        return np.asarray(a, dtype=np.float32).astype(np.float16).astype(np.float32)
