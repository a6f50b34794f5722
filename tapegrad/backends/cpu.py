"""tapegrad.backends.cpu: what the CPU offers, named as PyTorch names it.

tapegrad computes with numpy's and its own kernels; the CPU's features still decide a few
things PyTorch does differently per CPU (which of ATen's kernels a float operation follows, which
words a convolution's dtype error uses), so they are read once here, from numpy's record of the
features it detected at import.
"""
from __future__ import annotations as _annotations

import functools
import os

__all__ = ["get_cpu_capability"]


@functools.lru_cache(maxsize=None)
def _features() -> dict:
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:                             # numpy < 2
        try:
            from numpy.core._multiarray_umath import __cpu_features__
        except ImportError:
            return {}
    return dict(__cpu_features__)


def _has_avx512_core() -> bool:
    """AVX-512 F, BW, VL and DQ (oneDNN's avx512_core, PyTorch's AVX512 capability)."""
    has = _features()
    return all(has.get(f, False) for f in ("AVX512F", "AVX512BW", "AVX512VL", "AVX512DQ"))


def _has_avx512_fp16() -> bool:
    """AVX-512 FP16 (oneDNN's avx512_core_fp16: its half-precision kernels need it)."""
    return _has_avx512_core() and _features().get("AVX512FP16", False)


@functools.lru_cache(maxsize=None)
def _is_intel() -> bool:
    """An Intel CPU: PyTorch's MKL takes vendor-specific kernels, and a few of its results differ
    from one vendor to another in the sign of an exact zero (cholesky_inverse)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("vendor_id") and "GenuineIntel" in line for line in f)
    except OSError:                                 # not Linux: MKL's generic paths assumed
        return False


def get_cpu_capability() -> str:
    """The SIMD level PyTorch's CPU kernels dispatch to on this machine: "AVX512" (AVX-512 F, BW,
    VL, DQ with FMA), "AVX2" (AVX2 with FMA) or "DEFAULT"; ATEN_CPU_CAPABILITY=avx512 / avx2 /
    default sets it, as it does for PyTorch."""
    wanted = os.environ.get("ATEN_CPU_CAPABILITY", "").strip().lower()
    if wanted in ("avx512", "avx2", "default"):
        return wanted.upper()
    has = _features()
    fma = has.get("AVX2", False) and has.get("FMA3", False)
    if fma and _has_avx512_core():
        return "AVX512"
    return "AVX2" if fma else "DEFAULT"
