"""Build, call and measure tapegrad's vecmath kernels (src/tapegrad/vecmath*.c) through ctypes.

Shared by tests/test_vecmath.py, tools/ulp_check.py and tools/bench_vecmath.py.  Until the
kernels are part of the compiled core, the C files are built here into a small shared library
(cached under the temp directory by a hash of the sources and flags).

Accuracy is measured against a reference that is correct to far below the ulp bounds: numpy's
long double (x87 80-bit on x86-64 Linux: 64-bit significand, ~2^-63 relative, 2^11 times finer
than a double's ulp) where it is that wide, otherwise mpmath; ``mpmath_reference`` checks the
long-double one on a subsample.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "tapegrad"
SOURCES = ["vecmath.c", "vecmath_scalar.c", "vecmath_avx2.c", "vecmath_avx512.c",
           "vecmath_pow_one.c"]
HEADERS = ["vecmath.h", "vecmath_levels.h", "vecmath_impl.h", "vecmath_one_lane.h",
           "vecmath_consts.h", "vecmath_tables.h", "vecmath_f32n.h"]
KERNELS = ["exp", "log", "log1p", "expm1", "sin", "cos", "tanh", "sigmoid", "erf"]
# y = f(x; p0, p1) and out = f(g, x; p0, p1) (vecmath.h's TG_VM_ACTIVATIONS and _GRADS)
ACTIVATIONS = ["elu", "softplus"]
ACTIVATION_GRADS = ["elu_grad", "softplus_grad", "silu_grad"]
LEVELS = {"scalar": 0, "avx2": 1, "avx512": 2}
# -ffp-contract=fast: the package builds these files in GNU C (setup.py), where GCC fuses a
# multiply and an add into one rounding wherever the target has FMA; ISO C99 alone turns that
# off, and the checked bits would then not be the shipped ones (1-3 ulp apart in 0.2-0.5% of
# elements of exp float32, sigmoid float32 and expm1 float64).
CFLAGS = ["-std=c99", "-ffp-contract=fast", "-O3", "-shared", "-fPIC", "-Wall", "-Wextra",
          "-Werror"]
ULP_BOUND = {np.float32: 1.0, np.float64: 2.0}
# sigmoid is PyTorch's formula 1 / (1 + e^-x), three roundings on the kernel's exp (within 1 ulp
# for float32, 0.501 for float64): up to ~2.5 ulp, as PyTorch's own.
SIGMOID_ULP_BOUND = 2.5


def ulp_bound(name: str, dtype) -> float:
    """The accuracy bound a kernel is held to, in ulps of the dtype."""
    return SIGMOID_ULP_BOUND if name == "sigmoid" else ULP_BOUND[dtype]


def compiler() -> str | None:
    cc = os.environ.get("CC", "cc")
    return shutil.which(cc)


def build(extra_flags: tuple[str, ...] = ()) -> Path:
    """Compile the kernels into a shared library; return its path (cached by content)."""
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler (set CC)")
    digest = hashlib.sha256()
    for name in SOURCES + HEADERS:
        digest.update((SRC / name).read_bytes())
    digest.update(" ".join([cc, *CFLAGS, *extra_flags]).encode())
    out_dir = Path(tempfile.gettempdir()) / f"tapegrad-vecmath-{digest.hexdigest()[:16]}"
    lib = out_dir / ("libvecmath" + (".dylib" if sys.platform == "darwin" else ".so"))
    if lib.exists():
        return lib
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f"build-{os.getpid()}{lib.suffix}"
    cmd = [cc, *CFLAGS, *extra_flags, "-o", str(tmp), *(str(SRC / s) for s in SOURCES), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building vecmath failed:\n{' '.join(cmd)}\n{proc.stderr}")
    os.replace(tmp, lib)  # atomic: concurrent builders never load a half-written file
    return lib


class VecMath:
    """The kernels of one loaded copy of the library."""

    def __init__(self, path: Path):
        self.path = path
        self.lib = ctypes.CDLL(str(path))
        for name in KERNELS:
            for suffix, ctype in (("f64", ctypes.c_double), ("f32", ctypes.c_float)):
                fn = getattr(self.lib, f"tg_vm_{name}_{suffix}")
                fn.argtypes = [ctypes.POINTER(ctype), ctypes.POINTER(ctype), ctypes.c_size_t]
                fn.restype = None
        for suffix, ctype in (("f64", ctypes.c_double), ("f32", ctypes.c_float)):
            fn = getattr(self.lib, f"tg_vm_pow_{suffix}")
            fn.argtypes = [ctypes.POINTER(ctype), ctype, ctypes.POINTER(ctype), ctypes.c_size_t]
            fn.restype = None
        for name in ACTIVATIONS + ACTIVATION_GRADS:
            for suffix, ctype in (("f64", ctypes.c_double), ("f32", ctypes.c_float)):
                fn = getattr(self.lib, f"tg_vm_{name}_{suffix}")
                arrays = 2 if name in ACTIVATIONS else 3
                fn.argtypes = ([ctypes.POINTER(ctype)] * (arrays - 1) + [ctype, ctype]
                               + [ctypes.POINTER(ctype), ctypes.c_size_t])
                fn.restype = None
        for suffix, ctype in (("f64", ctypes.c_double), ("f32", ctypes.c_float)):
            fn = getattr(self.lib, f"tg_vm_sincos_{suffix}")
            fn.argtypes = [ctypes.POINTER(ctype)] * 3 + [ctypes.c_size_t]
            fn.restype = None
        self.lib.tg_vm_level_name.restype = ctypes.c_char_p
        self.lib.tg_vm_set_level.argtypes = [ctypes.c_int]

    def levels(self) -> list[str]:
        """The dispatch levels this machine can run."""
        best = self.lib.tg_vm_best_level()
        return [name for name, idx in LEVELS.items() if idx <= best]

    def level(self) -> str:
        return self.lib.tg_vm_level_name(self.lib.tg_vm_level()).decode()

    def set_level(self, name: str) -> None:
        if self.lib.tg_vm_set_level(LEVELS[name]) < 0:
            raise ValueError(f"level {name} is not available on this machine")

    def __call__(self, name: str, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        assert x.flags.c_contiguous and x.dtype in (np.float32, np.float64)
        if out is None:
            out = np.empty_like(x)
        suffix, ctype = ("f64", ctypes.c_double) if x.dtype == np.float64 else ("f32", ctypes.c_float)
        fn = getattr(self.lib, f"tg_vm_{name}_{suffix}")
        ptr = ctypes.POINTER(ctype)
        fn(x.ctypes.data_as(ptr), out.ctypes.data_as(ptr), x.size)
        return out


    def act(self, name: str, *arrays: np.ndarray, p0: float = 0.0, p1: float = 0.0,
            out: np.ndarray | None = None) -> np.ndarray:
        """An activation (x) or an activation gradient (g, x) with parameters p0, p1."""
        x = arrays[-1]
        assert all(a.flags.c_contiguous and a.dtype == x.dtype and a.size == x.size
                   for a in arrays) and x.dtype in (np.float32, np.float64)
        if out is None:
            out = np.empty_like(x)
        suffix, ctype = ("f64", ctypes.c_double) if x.dtype == np.float64 else ("f32", ctypes.c_float)
        ptr = ctypes.POINTER(ctype)
        getattr(self.lib, f"tg_vm_{name}_{suffix}")(*(a.ctypes.data_as(ptr) for a in arrays),
                                                     p0, p1, out.ctypes.data_as(ptr), x.size)
        return out
    def sincos(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(sin x, cos x) by tg_vm_sincos_f64 / _f32 (one pass)."""
        assert x.flags.c_contiguous and x.dtype in (np.float32, np.float64)
        s, c = np.empty_like(x), np.empty_like(x)
        suffix, ctype = ("f64", ctypes.c_double) if x.dtype == np.float64 else ("f32", ctypes.c_float)
        ptr = ctypes.POINTER(ctype)
        getattr(self.lib, f"tg_vm_sincos_{suffix}")(x.ctypes.data_as(ptr), s.ctypes.data_as(ptr),
                                                     c.ctypes.data_as(ptr), x.size)
        return s, c

    def pow(self, x: np.ndarray, y: float, out: np.ndarray | None = None) -> np.ndarray:
        """x ** y by tg_vm_pow_f64 / _f32 (y rounded to x's dtype, as the kernels take it)."""
        assert x.flags.c_contiguous and x.dtype in (np.float32, np.float64)
        if out is None:
            out = np.empty_like(x)
        suffix, ctype = ("f64", ctypes.c_double) if x.dtype == np.float64 else ("f32", ctypes.c_float)
        ptr = ctypes.POINTER(ctype)
        getattr(self.lib, f"tg_vm_pow_{suffix}")(x.ctypes.data_as(ptr), y,
                                                  out.ctypes.data_as(ptr), x.size)
        return out


def load(path: Path | None = None) -> VecMath:
    return VecMath(path or build())


# ---- references ------------------------------------------------------------------------------
LONGDOUBLE_IS_WIDE = np.finfo(np.longdouble).nmant >= 63


def _sigmoid_ld(x):
    return np.longdouble(1) / (np.longdouble(1) + np.exp(-x))


_LD_FUNCS = {"exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "sin": np.sin,
             "cos": np.cos, "tanh": np.tanh, "sigmoid": _sigmoid_ld}
LONG_DOUBLE_KERNELS = [k for k in KERNELS if k in _LD_FUNCS]


def _mp_func(name):
    import mpmath as mp

    return {"exp": mp.exp, "log": mp.log, "log1p": mp.log1p, "expm1": mp.expm1, "sin": mp.sin,
            "cos": mp.cos, "tanh": mp.tanh, "sigmoid": lambda v: 1 / (1 + mp.exp(-v)),
            "erf": mp.erf}[name]


def mpmath_reference(name: str, x: np.ndarray) -> np.ndarray:
    """Values of f(x) as long doubles computed by mpmath at 120 bits (slow: a subsample)."""
    import mpmath as mp

    f = _mp_func(name)
    out = np.empty(x.shape, dtype=np.longdouble)
    with mp.workprec(120):
        for i, v in enumerate(x.astype(np.float64).tolist()):
            outside = (not np.isfinite(v) or (name in ("log",) and v <= 0)
                       or (name == "log1p" and v <= -1))
            if outside and name in _LD_FUNCS:
                with np.errstate(all="ignore"):
                    out[i] = _LD_FUNCS[name](np.longdouble(v))
                continue
            r = f(mp.mpf(v))
            if mp.isnan(r):
                out[i] = np.nan
            elif mp.isinf(r):
                out[i] = np.longdouble(np.inf) * int(mp.sign(r))
            elif r == 0 or mp.mag(r) < -16450:    # below the long double range
                out[i] = np.copysign(np.longdouble(0), float(mp.sign(r)) or 1.0)
            elif mp.mag(r) > 16383:             # above it
                out[i] = np.longdouble(np.inf) * int(mp.sign(r))
            else:  # mpf -> decimal string -> long double keeps the long double's precision
                out[i] = np.longdouble(mp.nstr(r, 25, strip_zeros=False))
    return out


# sigmoid(x) is 0 below minus these, as PyTorch's 1 / (1 + e^-x) where e^-x overflows the dtype
# (the true value is subnormal there): PyTorch's special values are the contract.
SIGMOID_ZERO = {np.dtype(np.float32): float.fromhex("0x1.62e42ep+6"),
                np.dtype(np.float64): float.fromhex("0x1.62e42fefa39efp+9")}


def reference(name: str, x: np.ndarray) -> np.ndarray:
    """f(x) as long doubles, accurate to far below a double's ulp.  numpy has no erf: mpmath (slow:
    keep erf's samples small)."""
    if LONGDOUBLE_IS_WIDE and name in _LD_FUNCS:
        with np.errstate(all="ignore"):
            ref = _LD_FUNCS[name](x.astype(np.longdouble))
    else:
        ref = mpmath_reference(name, x)
    if name == "sigmoid":
        ref[x < -SIGMOID_ZERO[x.dtype]] = 0
    return ref


def pow_reference(x: np.ndarray, y: float) -> np.ndarray:
    """x ** y as long doubles (powl where long double is wide, else mpmath at 120 bits)."""
    if LONGDOUBLE_IS_WIDE:
        with np.errstate(all="ignore"):
            return np.power(x.astype(np.longdouble), np.longdouble(y))
    import mpmath as mp

    out = np.empty(x.shape, dtype=np.longdouble)
    with mp.workprec(120):
        for i, v in enumerate(x.astype(np.float64).tolist()):
            with np.errstate(all="ignore"):
                special = np.power(np.longdouble(v), np.longdouble(y))
            if not np.isfinite(special) or special == 0 or v <= 0:
                out[i] = special
            else:
                out[i] = np.longdouble(mp.nstr(mp.power(mp.mpf(v), mp.mpf(y)), 25,
                                               strip_zeros=False))
    return out


def ulp_errors(y: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|y - ref| in ulps of y's format at ref; +inf where the classes differ (a wrong inf, NaN or
    zero).  Where the correctly rounded result is not finite or is zero, only that exact value
    counts as 0 ulp."""
    info = np.finfo(y.dtype)
    with np.errstate(all="ignore"):
        rounded = ref.astype(y.dtype)
        special = ~np.isfinite(rounded) | (rounded == 0) | ~np.isfinite(ref)
        same_special = (rounded == y) | (np.isnan(rounded) & np.isnan(y))
        _, e = np.frexp(np.abs(ref))
        ulp = np.ldexp(np.longdouble(1), np.maximum(e - 1, info.minexp) - info.nmant)
        err = np.abs(y.astype(np.longdouble) - ref) / ulp
    err = np.where(special, np.where(same_special, 0.0, np.inf), err.astype(np.float64))
    return np.where(np.isnan(err), np.inf, err)


# ---- inputs ----------------------------------------------------------------------------------
def random_inputs(name: str, dtype, n: int, rng: np.random.Generator) -> np.ndarray:
    """Values spread over the whole exponent range of `dtype` that matters for `name` (uniform in
    the exponent, random significand, both signs where the domain allows), plus a dense uniform
    share over the ordinary range."""
    info = np.finfo(dtype)
    lo_exp, hi_exp = info.minexp - info.nmant, info.maxexp
    k = n // 2
    exps = rng.uniform(lo_exp, hi_exp, size=k)
    spread = np.ldexp(rng.uniform(1.0, 2.0, size=k), exps.astype(int))
    signs = rng.choice([-1.0, 1.0], size=k)
    dense_range = {"exp": 120.0, "expm1": 120.0, "sigmoid": 60.0, "tanh": 25.0,
                   "sin": 100.0, "cos": 100.0, "log": 10.0, "log1p": 3.0, "erf": 7.0}[name]
    dense = rng.uniform(-dense_range, dense_range, size=n - k)
    if name == "log":
        x = np.concatenate([spread, np.abs(dense) + 0.0])
    elif name == "log1p":
        x = np.concatenate([np.where(signs < 0, -np.minimum(spread, 1.0), spread),
                            np.abs(dense) - 1.0])
    else:
        x = np.concatenate([spread * signs, dense])
    with np.errstate(over="ignore"):
        x = x.astype(dtype)
    return x[np.isfinite(x)]


def edge_inputs(name: str, dtype) -> np.ndarray:
    """Special values and thresholds: signed zeros, infinities, NaN, subnormals, the overflow and
    underflow thresholds and their neighbours, huge sin/cos arguments, points near multiples of
    pi/2 and other boundaries of the algorithms (ln 2 / 2, sqrt(1/2), 2^24)."""
    info = np.finfo(dtype)
    tiny, sub = info.tiny, info.smallest_subnormal
    base = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, sub, -sub,
            tiny, -tiny, tiny / 3, -tiny / 3, info.max, -info.max, info.eps, -info.eps,
            1e-300, -1e-300, 1e-30, 1e-10, -1e-10, 1e-5, 0.3465, 0.3466, 0.34657359027997264,
            0.7071067811865476, 1.4142135623730951, 20.0, -20.0, 19.06, 40.0, 40.5, 50.0, -50.0,
            -38.0, 709.78, 709.79, 710.0, -708.39, -708.4, -745.13, -745.14, -746.0,
            88.72, 88.73, -88.72283172607422, -88.72283935546875, -709.782712893384,
            -709.7827128933841, -87.33, -103.97, -103.98, -104.0, 2.0 ** 24, -(2.0 ** 24),
            2.0 ** 24 + 2, 1e6, 1e15, 1e22, 1e300, -1e300, 1.7976931348623157e308,
            3.0e38, 6381956970095103 * 2.0 ** 797, 5.319372648326541e255,
            np.pi / 4, np.pi / 2, np.pi, 3 * np.pi / 2, 2 * np.pi, 355.0, 103993.0, 104348.0,
            -0.9999999999, -1 + 2.0 ** -52, -1 + 2.0 ** -23, 2.0 ** -53, 2.0 ** -54, -(2.0 ** -55),
            0.9999999999999999, 2.5, 2.4999999999999996, 3.9, 4.0, 5.9, 5.93, 6.0, 6.1, -6.1]
    near = [np.nextafter(v, w) for v in (1.0, -1.0, 0.5) for w in (0.0, 10.0)]
    with np.errstate(over="ignore"):
        x = np.array(base + near, dtype=np.float64).astype(dtype)
    # Representable neighbours of multiples of pi/2 (where sin/cos are smallest).
    k = np.array([1, 2, 3, 7, 11, 100, 1000, 12345, 2 ** 20, 2 ** 23], dtype=np.float64)
    multiples = (k * (np.pi / 2)).astype(dtype)
    neighbours = np.concatenate([multiples, np.nextafter(multiples, np.inf),
                                 np.nextafter(multiples, -np.inf)])
    return np.concatenate([x, neighbours, -neighbours]).astype(dtype)
