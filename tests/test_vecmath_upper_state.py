"""The vectorised kernels return with the vector registers' upper halves clean (VZEROUPPER), on
every path.  A kernel that returned with them in use made the caller's next SSE instruction (the
interpreter's, numpy's) stall: sin and cos of 1-3 elements cost ~130 ns more than of 4 elements,
because their tail path returned past the VZEROUPPER (vecmath_impl.h: VM_TAIL_COPY).

The check reads the processor's XINUSE bits (XGETBV with ECX = 1; bit 2: the upper halves of the
YMM registers are in use) right after each kernel returns, from a probe compiled without AVX, so
it does not time anything.  It skips where XGETBV(1) is missing (not x86-64, or an old CPU).
"""
from __future__ import annotations

import ctypes
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import vecmath_support as vs  # noqa: E402
from vecmath_fixtures import vm  # noqa: E402,F401  (fixture)

PROBE = r"""
#include <stddef.h>
#include <cpuid.h>
typedef void (*kernel)(const void *x, void *y, size_t n);
/* 1 if XGETBV with ECX = 1 is supported (CPUID.(EAX=0DH, ECX=1):EAX bit 2), else 0. */
int xinuse_supported(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(0xD, 1, &a, &b, &c, &d)) return 0;
    return (a >> 2) & 1;
}
/* Call the kernel, then return the XINUSE bits (this file is compiled without AVX). */
unsigned long long upper_state_after(kernel k, const void *x, void *y, size_t n)
{
    unsigned lo, hi;
    k(x, y, n);
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
    return ((unsigned long long)hi << 32) | lo;
}
"""


@pytest.fixture(scope="module")
def probe():
    if platform.machine().lower() not in ("x86_64", "amd64") or vs.compiler() is None:
        pytest.skip("XGETBV(1) is an x86-64 instruction (and the probe needs a C compiler)")
    out = Path(tempfile.mkdtemp(prefix="tapegrad-xinuse-"))
    src, lib = out / "probe.c", out / "probe.so"
    src.write_text(PROBE)
    subprocess.run([vs.compiler(), "-O2", "-shared", "-fPIC", "-mno-avx", "-o", str(lib), str(src)],
                   check=True)
    dll = ctypes.CDLL(str(lib))
    if not dll.xinuse_supported():
        pytest.skip("this CPU has no XGETBV(1) (XINUSE)")
    dll.upper_state_after.restype = ctypes.c_ulonglong
    dll.upper_state_after.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_size_t]
    return dll


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", vs.KERNELS)
def test_kernels_return_with_upper_halves_clean(vm, probe, name, dtype):
    suffix = "f32" if dtype == np.float32 else "f64"
    kernel = ctypes.cast(getattr(vm.lib, f"tg_vm_{name}_{suffix}"), ctypes.c_void_p)
    dirty = []
    for level in vm.levels():
        if level == "scalar":
            continue
        vm.set_level(level)
        for n in range(0, 20):          # every tail length, one or more full vectors
            x = np.linspace(0.25, 1.5, n).astype(dtype)
            y = np.empty_like(x)
            state = probe.upper_state_after(kernel, x.ctypes.data, y.ctypes.data, n)
            if state & 4:
                dirty.append((level, n))
    vm.set_level(vm.levels()[-1])
    assert not dirty, f"tg_vm_{name}_{suffix} returned with the YMM upper halves in use: {dirty}"
