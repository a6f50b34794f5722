"""The float values of arange as ATen's CPU kernel writes them, which are not start + i * step.

ATen computes arange in the accumulate type (double for float32 and float64 outputs) and splits
the output into SIMD vectors: each vector's first value is start + step * i rounded to the output
dtype, and the vector's other lanes add k * step to that rounded value.  The loop takes two vectors
per iteration; the values left over run the scalar path, start + step * i.  A parallel_for splits
long ranges between threads, each part running that loop from its own first index.  The AVX2 and
AVX512 kernels are compiled with FMA, so each `a + b * c` there is one fused, singly rounded
operation.  So torch.arange(-1, 1, 0.1)[10] is -2.9802e-09 in float32 (the lane after -0.2f), and
torch.arange(-1, 1, 0.1, dtype=torch.float64)[12] is 0.20000000000000007, where numpy's arange
gives 0.0 and 0.20000000000000018.  Facts from ATen's RangeFactoriesKernel.cpp, cpu/Loops.h
(vectorized_loop), Parallel-inl.h (chunking) and the values it prints; no code taken.
"""
from __future__ import annotations as _annotations

import numpy as np

from ._aten_loops import parallel_parts
_EXACT_BELOW = {4: 2.0 ** 24, 8: 2.0 ** 53}     # whole numbers float32 / float64 hold exactly
_kernel_cache = None


def _kernel() -> tuple:
    """(bytes per SIMD vector, fused multiply-add) of the ATen kernel the CPU dispatches to: its
    AVX2 build (32, fused) on an AVX2 or AVX-512 CPU (the range kernels are registered with
    REGISTER_DISPATCH, whose AVX-512 slot is empty, so AVX-512 CPUs run the AVX2 build: measured
    on an AVX-512 Xeon with torch 2.13), else its DEFAULT build (32, unfused)."""
    global _kernel_cache
    if _kernel_cache is None:
        from .backends.cpu import get_cpu_capability
        _kernel_cache = (32, get_cpu_capability() != "DEFAULT")
    return _kernel_cache


def _split(a: np.ndarray) -> tuple:
    """Dekker's split of doubles into two halves of 26 bits each (a = hi + lo exactly)."""
    c = a * 134217729.0                              # 2**27 + 1
    hi = c - (c - a)
    return hi, a - hi


def _fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c rounded once: the exact product as p + e (Dekker), the exact sum p + c as
    s + t (Knuth), then s + (t + e)."""
    p = a * b
    ahi, alo = _split(a)
    bhi, blo = _split(b)
    e = ((ahi * bhi - p) + ahi * blo + alo * bhi) + alo * blo
    s = p + c
    bv = s - p
    t = (p - (s - bv)) + (c - bv)
    return s + (t + e)


def _axpy(start: float, step: float, index: np.ndarray, fused: bool) -> np.ndarray:
    """start + step * index in double, fused or not as the kernel computes it."""
    index = index.astype(np.float64)
    if fused:
        return _fma(np.full_like(index, step), index, np.full_like(index, start))
    return start + step * index


def aten_float_range(start: float, step: float, count: int, dtype: np.dtype, threads: int) -> np.ndarray:
    """count values of arange(start, ..., step) in dtype (float32 or float64), lane by lane as
    ATen's kernel computes them with `threads` intra-op threads."""
    dtype = np.dtype(dtype)
    out = np.empty(count, dtype=dtype)
    if count == 0:
        return out
    start, step = float(start), float(step)
    if start.is_integer() and step.is_integer() and \
            max(abs(start), abs(start + step * count)) < _EXACT_BELOW[dtype.itemsize]:
        # whole numbers the dtype holds exactly: every lane's arithmetic is exact, so all ways of
        # computing them agree (arange(0., 64.), arange(n, dtype=float32): the common calls, at
        # numpy's speed instead of the lane emulation's ~100 us)
        out[:] = np.arange(count, dtype=np.float64) * step + start
        return out
    vector_bytes, fused = _kernel()
    lanes = vector_bytes // dtype.itemsize
    with np.errstate(over="ignore", invalid="ignore"):
        for begin, end in parallel_parts(count, threads):
            vectorised = (end - begin) // (2 * lanes) * (2 * lanes)
            offsets = np.arange(vectorised, dtype=np.int64)
            firsts = begin + offsets // lanes * lanes
            base = _axpy(start, step, firsts, fused).astype(dtype).astype(np.float64)
            lane = (offsets % lanes).astype(np.float64)
            if fused:
                out[begin:begin + vectorised] = _fma(lane, np.full_like(lane, step), base)
            else:
                out[begin:begin + vectorised] = base + lane * step
            rest = np.arange(begin + vectorised, end, dtype=np.int64)
            out[begin + vectorised:end] = _axpy(start, step, rest, fused)
    return out
