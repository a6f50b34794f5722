"""Accuracy and behaviour of the vectorised math kernels (src/tapegrad/vecmath*.c).

The kernels are built into a small shared library with the system C compiler and called through
ctypes (tools/vecmath_support.py); without a compiler these tests skip.  Every kernel is checked
per dtype and per dispatch level this machine can run: within 1 ulp (float32) / 2 ulp (float64)
of a reference accurate to ~2^-63 on random inputs over the whole exponent range plus edge cases,
and special values as numpy gives them.  tools/ulp_check.py runs the same check on millions of
points.
"""
from __future__ import annotations

import ctypes
import math
import os
import shutil
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tools"))
import vecmath_support as vs  # noqa: E402
from vecmath_fixtures import level, rng_for, vm  # noqa: E402,F401  (fixtures)

DTYPES = [np.float32, np.float64]
N_RANDOM = 20_000 if vs.LONGDOUBLE_IS_WIDE else 2_000  # the mpmath fallback is slow
N_RANDOM_MPMATH = 2_000  # erf's reference is always mpmath


def _worst(x, y, ref, err) -> str:
    i = int(np.argmax(err))
    return f"worst {err[i]:.3f} ulp at x={x[i]!r}: got {y[i]!r}, reference {ref[i]!r}"


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name", vs.KERNELS)
def test_ulp_error_random_and_edge_inputs(vm, level, name, dtype):
    n = N_RANDOM if name in vs.LONG_DOUBLE_KERNELS else N_RANDOM_MPMATH
    x = np.concatenate([vs.random_inputs(name, dtype, n, rng_for(name, dtype)),
                        vs.edge_inputs(name, dtype)])
    y = vm(name, x)
    ref = vs.reference(name, x)
    err = vs.ulp_errors(y, ref)
    assert err.max() <= vs.ulp_bound(name, dtype), _worst(x, y, ref, err)


def _numpy_value(name, x):
    """numpy's value (for erf, which numpy lacks, Python's math.erf)."""
    with np.errstate(all="ignore"):
        if name == "sigmoid":
            return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(x.dtype)
        if name == "erf":
            return np.array([math.erf(v) for v in x.tolist()]).astype(x.dtype)
        return getattr(np, name)(x)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name", vs.KERNELS)
def test_special_values_as_numpy(vm, level, name, dtype):
    info = np.finfo(dtype)
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, info.smallest_subnormal,
                  -info.smallest_subnormal, info.tiny, -info.tiny, info.max, -info.max, -1.0,
                  1.0], dtype=dtype)
    y = vm(name, x)
    expected = _numpy_value(name, x)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(expected), err_msg=f"NaN of {name}({x})")
    exact = ~np.isfinite(expected) | (expected == 0) | (x == 0)
    exact &= ~np.isnan(expected)
    np.testing.assert_array_equal(y[exact], expected[exact], err_msg=f"{name}({x[exact]})")
    np.testing.assert_array_equal(np.signbit(y[exact]), np.signbit(expected[exact]),
                                  err_msg=f"sign of {name}({x[exact]})")


def _float32_windows(centres, width):
    """All float32 values within `width` representable steps of each centre."""
    out = []
    for c in centres:
        bits = np.array([c], dtype=np.float32).view(np.int32)[0]
        out.append(np.arange(bits - width, bits + width + 1, dtype=np.int32).view(np.float32))
    return np.concatenate(out)


def _sigmoid_formula(vm, x):
    """PyTorch's sigmoid, 1 / (1 + e^-x) with each operation rounded to x's dtype, on the exp
    kernel of the level in use."""
    with np.errstate(over="ignore"):
        e = vm("exp", np.ascontiguousarray(-x))
        one = x.dtype.type(1)
        return one / (one + e)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_sigmoid_is_pytorchs_formula_on_the_exp_kernel(vm, level, dtype):
    """sigmoid rounds as PyTorch's kernels do (the exponential, the sum, the quotient), so that it
    gives PyTorch's bits wherever exp does: on 400,000 points over the whole range (uniform and
    log-uniform), around 0 and where e^-x overflows (PyTorch's 0), and the special values."""
    rng = rng_for("sigmoid-formula", level, dtype)
    limit = 90.0 if dtype == np.float32 else 720.0
    x = np.concatenate([rng.uniform(-limit, limit, 200_000),
                        np.exp(rng.uniform(-40, np.log(limit), 200_000)) * rng.choice([-1, 1], 200_000),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, -88.72283935546875, -88.7228317,
                         -709.782712893384, -709.7827128933841]]).astype(dtype)
    y = vm("sigmoid", x)
    np.testing.assert_array_equal(y, _sigmoid_formula(vm, x))


def test_nan_payload_passes_through(vm, level):
    payload = np.array([0x7FF8DEADBEEF0001], dtype=np.uint64).view(np.float64)
    for name in vs.KERNELS:
        assert vm(name, payload).view(np.uint64)[0] == 0x7FF8DEADBEEF0001, name


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_huge_sin_cos_arguments_are_reduced_exactly(vm, level, dtype):
    """Cody-Waite stops at 2^24; beyond, Payne-Hanek must still give faithful results
    (checked against mpmath itself, not the long-double reference)."""
    pytest.importorskip("mpmath")
    values = [1e300, -1e300, 1e22, 2.0 ** 24 + 1, 6381956970095103 * 2.0 ** 797, 1e200, 3e38,
              1.7976931348623157e308, 123456789.0, 2.0 ** 60 * 1.25, 16777216.0 * 3]
    with np.errstate(over="ignore"):
        x = np.array(values).astype(dtype)
    x = x[np.isfinite(x)]
    for name in ("sin", "cos"):
        y = vm(name, x)
        ref = vs.mpmath_reference(name, x)
        err = vs.ulp_errors(y, ref)
        assert err.max() <= vs.ULP_BOUND[dtype], _worst(x, y, ref, err)


def test_long_double_reference_agrees_with_mpmath():
    """The long-double reference is only trusted where mpmath confirms it (a subsample)."""
    pytest.importorskip("mpmath")
    if not vs.LONGDOUBLE_IS_WIDE:
        pytest.skip("long double is not wider than double here: the reference is mpmath itself")
    for name in vs.LONG_DOUBLE_KERNELS:
        x = np.concatenate([vs.random_inputs(name, np.float64, 120, rng_for("mp", name)),
                            vs.edge_inputs(name, np.float64)[::7]])
        ld = vs.reference(name, x)
        mp_ref = vs.mpmath_reference(name, x)
        finite = np.isfinite(mp_ref) & (mp_ref != 0)
        rel = np.abs((ld[finite] - mp_ref[finite]) / mp_ref[finite])
        assert rel.max() < 2.0 ** -60, f"{name}: long double off by {float(rel.max()):.3g}"


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_result_does_not_depend_on_position_or_length(vm, level, dtype):
    """Vector body, single vectors and the padded tail compute each element the same way; in-place
    works."""
    huge = np.finfo(dtype).max / 3  # one lane through the Payne-Hanek path
    x = np.concatenate([vs.random_inputs("sin", dtype, 61, rng_for("pos")), [huge]]).astype(dtype)
    for name in vs.KERNELS:
        arg = np.abs(x) if name in ("log",) else x
        full = vm(name, arg)
        for start in range(0, 9):
            for length in (1, 3, 5, 8, 13, len(arg) - start):
                part = np.ascontiguousarray(arg[start:start + length])
                np.testing.assert_array_equal(vm(name, part), full[start:start + length],
                                              err_msg=f"{name} [{start}:{start + length}]")
        inplace = arg.copy()
        vm(name, inplace, inplace)
        np.testing.assert_array_equal(inplace, full, err_msg=f"{name} in place")


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_sincos_is_sin_and_cos_bit_for_bit(vm, level, dtype):
    """tg_vm_sincos (replay's fused sin / cos steps: the forward computes the function the
    gradient needs in the same pass) gives exactly the sin and cos kernels' bits, at every length
    (vector body, single vectors, tail), for random, edge and huge (Payne-Hanek) arguments."""
    x = np.concatenate([vs.random_inputs("sin", dtype, 3001, rng_for("sincos", dtype)),
                        vs.edge_inputs("sin", dtype)]).astype(dtype)
    s, c = vm.sincos(x)
    np.testing.assert_array_equal(s.view(np.uint8), vm("sin", x).view(np.uint8))
    np.testing.assert_array_equal(c.view(np.uint8), vm("cos", x).view(np.uint8))
    for length in (1, 2, 3, 5, 7, 16, 17, 19):
        part = np.ascontiguousarray(x[3:3 + length])
        ps, pc = vm.sincos(part)
        np.testing.assert_array_equal(ps.view(np.uint8), s[3:3 + length].view(np.uint8))
        np.testing.assert_array_equal(pc.view(np.uint8), c[3:3 + length].view(np.uint8))


def test_environment_variable_forces_the_level(vm, tmp_path, monkeypatch):
    """TAPEGRAD_SIMD is read on first use; a fresh copy of the library sees the new value."""
    lib = vs.build()
    available = vm.levels()
    cases = {"scalar": "scalar", "avx2": "avx2" if "avx2" in available else "scalar",
             "avx512": "avx512" if "avx512" in available else available[-1],
             "bogus": available[-1]}
    for i, (value, expected) in enumerate(cases.items()):
        copy = tmp_path / f"copy{i}{lib.suffix}"
        shutil.copy(lib, copy)
        monkeypatch.setenv("TAPEGRAD_SIMD", value)
        fresh = vs.load(copy)
        fresh.lib.tg_vm_exp_f64  # noqa: B018 - resolve happens on the first kernel call
        assert fresh.level() == expected, value


def _included_headers(sources):
    """The local headers the C files `sources` include, followed through the headers."""
    import re

    seen, todo = set(), list(sources)
    while todo:
        text = (vs.SRC / todo.pop()).read_text(encoding="utf-8")
        for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def test_build_dependency_lists_name_every_included_header():
    """A kernel header missing from setup.py's KERNEL_HEADERS (the modules' cache key) or from
    vecmath_support's HEADERS (this library's) leaves a stale build in use after an edit of it:
    vecmath_f32n.h was missing from both, so its edits reached neither tapegrad nor these tests."""
    import ast

    if not (vs.SRC / "vecmath.c").exists() or not (vs.ROOT / "setup.py").exists():
        pytest.skip("needs the source tree")
    tree = ast.parse((vs.ROOT / "setup.py").read_text(encoding="utf-8"))
    lists = {t.id: ast.literal_eval(node.value) for node in tree.body
             if isinstance(node, ast.Assign) for t in node.targets
             if isinstance(t, ast.Name) and t.id in ("KERNEL_HEADERS", "KERNEL_SOURCES")}
    assert _included_headers(lists["KERNEL_SOURCES"]) <= set(lists["KERNEL_HEADERS"])
    assert _included_headers(vs.SOURCES) <= set(vs.HEADERS) | set(vs.SOURCES)


def test_portable_build_without_intrinsics(vm):
    """-DTG_VM_NO_AVX2 builds only the C99 level (what MSVC/arm64-like targets get) with
    -pedantic; it computes exactly what the scalar level of the full build computes."""
    portable = vs.load(vs.build(("-DTG_VM_NO_AVX2", "-pedantic")))
    assert portable.levels() == ["scalar"]
    vm.set_level("scalar")
    try:
        for dtype in DTYPES:
            for name in vs.KERNELS:
                x = np.concatenate([vs.random_inputs(name, dtype, 500, rng_for("port", name)),
                                    vs.edge_inputs(name, dtype)])
                np.testing.assert_array_equal(portable(name, x), vm(name, x), err_msg=name)
    finally:
        vm.set_level(vm.levels()[-1])


# ---- pow (x ** y, y a number) ------------------------------------------------------------------
# (not 0.5: numpy's power takes sqrt there, which gives NaN at -inf where C99's pow gives inf;
# the elementwise kernels send 0.5 to sqrt too, as PyTorch does, and never to tg_vm_pow)
POW_EXPONENTS = [2.5, -2.5, 0.1, -0.7, 1.5, 4.0, 5.0, -3.0, 7.0, 1e-5, 123.456, 1e10, -1e10,
                 2.0 ** 60, 1e300, 0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, 2.0, -1.0]


def _pow_inputs(dtype, rng):
    info = np.finfo(dtype)
    n = 3000
    exps = rng.integers(info.minexp - info.nmant, info.maxexp, n)
    spread = np.ldexp(rng.uniform(1.0, 2.0, n), exps)
    x = np.concatenate([rng.uniform(0, 10, n), spread, -spread[:500],
                        1 + rng.uniform(-1e-3, 1e-3, 500), -np.arange(1.0, 20.0),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, info.smallest_subnormal,
                         -info.smallest_subnormal, info.tiny, info.max, -info.max]])
    with np.errstate(over="ignore"):
        return x.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_pow_within_ulp_bound_and_special_values_as_numpy(vm, level, dtype):
    """x ** y for a number y: within 1 / 2 ulp of the correctly rounded value, NaN exactly where
    numpy's power gives it, and numpy's zeros and infinities (with their signs)."""
    x = _pow_inputs(dtype, rng_for("pow", dtype))
    for y in POW_EXPONENTS:
        if np.isfinite(y) and abs(y) > float(np.finfo(dtype).max):
            continue
        yd = float(dtype(y))
        got = vm.pow(x, yd)
        with np.errstate(all="ignore"):
            expected = np.power(x, dtype(yd))
        ref = vs.pow_reference(x, yd)
        err = vs.ulp_errors(got, ref)
        assert err.max() <= vs.ULP_BOUND[dtype], f"y={yd}: " + _worst(x, got, ref, err)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected), err_msg=f"NaN, y={yd}")
        exact = (~np.isfinite(expected) | (expected == 0)) & ~np.isnan(expected)
        np.testing.assert_array_equal(got[exact], expected[exact], err_msg=f"y={yd}")
        np.testing.assert_array_equal(np.signbit(got[exact]), np.signbit(expected[exact]),
                                      err_msg=f"sign, y={yd}")


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_pow_result_does_not_depend_on_position_or_length(vm, level, dtype):
    x = np.abs(vs.random_inputs("sin", dtype, 40, rng_for("powpos"))).astype(dtype)
    full = vm.pow(x, 2.5)
    for start in range(0, 9):
        for length in (1, 3, 5, 8, 13, len(x) - start):
            part = np.ascontiguousarray(x[start:start + length])
            np.testing.assert_array_equal(vm.pow(part, 2.5), full[start:start + length])
    inplace = x.copy()
    vm.pow(inplace, 2.5, inplace)
    np.testing.assert_array_equal(inplace, full)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("y", [2.5, -0.7, 7.0, -3.0])
def test_pow_tail_writes_only_its_elements_and_zeros_anywhere(vm, level, dtype, y):
    """The last partial vector is stored by a masked store: every length 1..19 (all tail sizes of
    every level) writes exactly n results, each the full array's, and leaves what follows out[n - 1]
    alone; zeros in any lane (the padding lanes of a tail are computed as x = 1, a real zero gets
    its special value) give numpy's zeros and infinities with their signs."""
    base = vs.random_inputs("sin", dtype, 19, rng_for("powtail", dtype)).astype(dtype)
    base[[0, 5, 9, 16]] = 0.0
    base[[3, 12]] = -0.0
    full = vm.pow(base, y)
    with np.errstate(all="ignore"):
        expected = np.power(base, dtype(y))
    zero = base == 0
    np.testing.assert_array_equal(full[zero], expected[zero])
    np.testing.assert_array_equal(np.signbit(full[zero]), np.signbit(expected[zero]))
    sentinel = dtype(-12345.0)
    for n in range(1, len(base) + 1):
        for start in (0, 1, 3):
            if start + n > len(base):
                continue
            x = np.ascontiguousarray(base[start:start + n])
            out = np.full(n + 16, sentinel, dtype=dtype)
            ptr_t = ctypes.c_double if dtype == np.float64 else ctypes.c_float
            ptr = ctypes.POINTER(ptr_t)
            fn = getattr(vm.lib, "tg_vm_pow_f64" if dtype == np.float64 else "tg_vm_pow_f32")
            fn(x.ctypes.data_as(ptr), y, out.ctypes.data_as(ptr), n)
            np.testing.assert_array_equal(out[:n], full[start:start + n], err_msg=f"n={n}")
            assert (out[n:] == sentinel).all(), f"wrote beyond n={n}"


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_pow_short_arrays_give_the_long_array_bits(vm, level, dtype):
    """Up to 2 elements the AVX2 and AVX-512 levels take pow's one-lane path (vecmath_pow_one.c),
    3-4 AVX2's 4-lane kernel, longer arrays the level's own loop and tails: every length 1..17 at
    every offset 0..16 gives the bits of one call over the whole array, at this level, for normal,
    subnormal, negative and special bases (each one takes its rare branch in a short call too)."""
    rng = rng_for("powshort", dtype)
    info = np.finfo(dtype)
    x = _pow_inputs(dtype, rng)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -2.5, info.smallest_subnormal,
                         info.max, info.tiny], dtype=dtype)
    base = np.concatenate([rng.choice(x, 40), specials, rng.choice(x, 40)]).astype(dtype)
    rng.shuffle(base)
    for y in (2.5, -0.7, 7.0, -3.0, 1.37, 123.456, 1e-5):
        yd = float(dtype(y))
        full = vm.pow(base, yd).view(np.uint64 if dtype == np.float64 else np.uint32)
        for start in range(17):
            for n in range(1, 18):
                part = np.ascontiguousarray(base[start:start + n])
                got = vm.pow(part, yd).view(full.dtype)
                np.testing.assert_array_equal(got, full[start:start + n],
                                              err_msg=f"y={yd}, n={n}, offset {start}")


_EAGER_POW_CHILD = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import tapegrad as tg
rng = np.random.default_rng(20)
base = np.concatenate([rng.uniform(1e-3, 10.0, 60), [0.0, -0.0, np.inf, -np.inf, np.nan, -2.0, 5e-324]])
rng.shuffle(base)
bad = []
for dt in (np.float32, np.float64):
    b = base.astype(dt)
    for y in (2.5, -0.7, 7.0, 1.37):
        full = tg.pow(tg.tensor(b), y).numpy()
        for start in range(17):
            for n in range(1, 18):
                got = tg.pow(tg.tensor(b[start:start + n].copy()), y).numpy()
                if got.tobytes() != full[start:start + n].tobytes():
                    bad.append((np.dtype(dt).name, y, start, n))
print(bad[:5])
sys.exit(1 if bad else 0)
"""


@pytest.mark.parametrize("simd", ["scalar", "avx2", "avx512"])
def test_eager_pow_short_tensors_give_the_long_tensor_bits(vm, simd):
    """tapegrad.pow(x, y) of 1..17 elements at every offset gives the bits of the pow of the whole
    tensor, at each level (TAPEGRAD_SIMD in a child process: the level is fixed at first use)."""
    import subprocess
    import tapegrad as tg
    if simd not in vm.levels():
        pytest.skip(f"dispatch level {simd} is not available on this machine")
    root = os.path.dirname(os.path.dirname(os.path.abspath(tg.__file__)))
    run = subprocess.run([sys.executable, "-c", _EAGER_POW_CHILD, root], timeout=600,
                         env=dict(os.environ, TAPEGRAD_SIMD=simd), capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def _pow_hard_cases(dtype, rng):
    """(x, y) pairs where pow's float64 core is pushed hardest: results near overflow, underflow
    and in the subnormal range (t = y log x near its ends, where t's absolute error is the
    result's relative one), x next to 1 with huge exponents (log x tiny, y log x not), and x at
    the edges of the log table's slices (r at its largest, the Fast2Sum steps at their limits)."""
    big = 709.7 if dtype == np.float64 else 88.7
    small = -745.1 if dtype == np.float64 else -103.9
    for y in (0.37, -2.9, 13.5, -121.25, 3001.7):
        t = np.concatenate([rng.uniform(big - 10, big + 0.1, 400), rng.uniform(small, small + 40, 400)])
        with np.errstate(all="ignore"):
            x = np.exp(t / float(dtype(y))).astype(dtype)
        x = x[np.isfinite(x) & (x > 0)]
        if x.size:
            yield x, y
    for k in ((3, 8, 14, 20) if dtype == np.float32 else (3, 8, 14, 20, 30, 45)):
        x = (1 + rng.uniform(-1, 1, 400) * 2.0 ** -k).astype(dtype)
        for y in (2.0 ** k * 5.3, -(2.0 ** k) * 7.1, 2.0 ** k * 600.5 / 8):
            yield x, y
    j = rng.integers(0, 128, 800).astype(np.uint64)
    bits = np.uint64(0x3FE6A09E667F3BCD) + (j << np.uint64(45))
    bits += rng.integers(-40, 40, 800).astype(np.int64).astype(np.uint64)
    x = (bits.view(np.float64) * np.ldexp(1.0, rng.integers(-20, 20, 800))).astype(dtype)
    for y in (1.7, -213.4, 5e4):
        yield x, y


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_pow_hard_cases_within_ulp_bound(vm, level, dtype):
    for x, y in _pow_hard_cases(dtype, rng_for("powhard", dtype)):
        yd = float(dtype(y))
        got = vm.pow(x, yd)
        ref = vs.pow_reference(x, yd)
        err = vs.ulp_errors(got, ref)
        assert err.max() <= vs.ULP_BOUND[dtype], f"y={yd}: " + _worst(x, got, ref, err)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_pow_levels_give_the_same_bits(vm, dtype):
    """Every multiply-add of pow is fused at every level (the portable one by C99's fma), so the
    levels agree bit for bit: random, hard and special inputs, every tail length (at the AVX-512
    level lengths up to 4 run the AVX2 kernel)."""
    levels = vm.levels()
    if len(levels) < 2:
        pytest.skip("one dispatch level on this machine")
    rng = rng_for("powlevels", dtype)
    cases = [(_pow_inputs(dtype, rng), y) for y in (2.5, -0.7, 7.0, -3.0, 123.456, 1e-5)]
    cases += list(_pow_hard_cases(dtype, rng))
    cases += [(_pow_inputs(dtype, rng)[:n], 1.37) for n in range(1, 20)]
    uint = np.uint64 if dtype == np.float64 else np.uint32
    try:
        for x, y in cases:
            x = np.ascontiguousarray(x)
            outs = {}
            for name in levels:
                vm.set_level(name)
                outs[name] = vm.pow(x, float(dtype(y))).view(uint)
            for name in levels[:-1]:
                np.testing.assert_array_equal(outs[name], outs[levels[-1]],
                                              err_msg=f"{name} vs {levels[-1]}, y={y}, n={x.size}")
    finally:
        vm.set_level(levels[-1])


def test_pow_reference_agrees_with_mpmath():
    pytest.importorskip("mpmath")
    if not vs.LONGDOUBLE_IS_WIDE:
        pytest.skip("long double is not wider than double here: the reference is mpmath itself")
    import mpmath as mp

    x = _pow_inputs(np.float64, rng_for("powmp"))[::40]
    x = x[np.isfinite(x) & (x > 0)]
    for y in (2.5, -0.7, 123.456):
        ld = vs.pow_reference(x, y)
        with mp.workprec(120):
            for v, a in zip(x, ld):
                b = mp.power(mp.mpf(float(v)), mp.mpf(y))
                if b != 0 and -16440 < mp.mag(b) < 16383:
                    assert abs((mp.mpf(str(a)) - b) / b) < mp.mpf(2) ** -60, (v, y)


def _gelu_f32(vm, x):
    fn = vm.lib.tg_vm_gelu_f32
    ptr = ctypes.POINTER(ctypes.c_float)
    fn.argtypes = [ptr, ptr, ctypes.c_size_t]
    fn.restype = None
    out = np.empty_like(x)
    fn(x.ctypes.data_as(ptr), out.ctypes.data_as(ptr), x.size)
    return out


def test_gelu_f32_against_the_exact_formula(vm, level):
    """float32 gelu = 0.5 x (1 + erf(z)) at z = x / sqrt 2 rounded to float, as PyTorch's formula:
    against that formula evaluated exactly (mpmath), within 1 ulp for x >= 0 on the AVX2 and AVX-512 levels (its
    erf's sum and the last multiply-add round twice; the portable level rounds PyTorch's three
    operations: 1.5 ulp), and for x < 0
    (where 1 + erf(z) cancels) within the error an erf within 1 ulp would give: 2^-24 |x| / 2
    plus the result's own rounding.  Special values as the formula gives them."""
    import mpmath as mp

    rng = rng_for("gelu", level)
    x = np.concatenate([rng.uniform(-6.5, 6.5, 400), rng.standard_normal(300) * 2,
                        rng.uniform(-1e-3, 1e-3, 100), np.linspace(-5.7, 5.7, 201)]).astype(np.float32)
    y = _gelu_f32(vm, x).astype(np.float64)
    z = x * np.float32(1 / math.sqrt(2))
    with mp.workdps(30):
        ref = np.array([float(mp.mpf(0.5) * float(a) * (1 + mp.erf(float(b)))) for a, b in zip(x, z)])
    spacing = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    pos = x >= 0
    ulps = 1.0 if level in ("avx2", "avx512") else 1.5     # AVX-512 runs the AVX2 level's
    assert np.all(np.abs(y - ref)[pos] <= ulps * spacing[pos]), _worst(x[pos], y[pos], ref[pos],
                                                              (np.abs(y - ref) / spacing)[pos])
    bound = 0.5 * np.abs(x.astype(np.float64)) * 2.0**-24 + spacing
    assert np.all(np.abs(y - ref)[~pos] <= bound[~pos])
    special = np.array([0.0, -0.0, 1e-40, -1e-40, np.inf, np.nan, 10.0, -10.0, 3e38, -3e38],
                       np.float32)
    got = _gelu_f32(vm, special)
    half_tiny = np.float32(1e-40) * np.float32(0.5)      # erf(z) ~ z vanishes next to 1
    want = np.array([0.0, -0.0, half_tiny, -half_tiny, np.inf, np.nan, 10.0, -0.0, 3e38, -0.0],
                    np.float32)
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))
    assert np.isnan(_gelu_f32(vm, np.array([-np.inf], np.float32)))[0]


def _gelu_grad_f32(vm, g, x):
    fn = vm.lib.tg_vm_gelu_grad_f32
    ptr = ctypes.POINTER(ctypes.c_float)
    fn.argtypes = [ptr, ptr, ptr, ctypes.c_size_t]
    fn.restype = None
    out = np.empty_like(x)
    fn(g.ctypes.data_as(ptr), x.ctypes.data_as(ptr), out.ctypes.data_as(ptr), x.size)
    return out


def test_gelu_grad_f32_against_the_exact_formula(vm, level):
    """float32 gelu gradient g (0.5 (1 + erf(z)) + x c e^w), PyTorch's formula at its rounded
    arguments z = x / sqrt 2 and w = (-0.5 x) x, c = 1 / sqrt(2 pi) rounded to float as PyTorch's
    constant, against that formula evaluated exactly (mpmath):
    * x <= -5.6, where float's erf(z) is -1 and the gradient is the pdf term alone: within
      2.25 ulp (x c rounded, e^w, the product: 2.13 measured with the short exponential of
      vecmath_f32n.h, 1.82 with exp_f32n);
    * everywhere else: within |g| (half a float spacing of erf(z), what an erf within 1 ulp costs
      after the halving, plus one spacing of the terms' size cdf + |x c e^w|) plus the rounding of
      the product by g (0.93 spacings measured; the terms cancel near x = -0.75).
    Special values as PyTorch's gelu_backward gives them."""
    import mpmath as mp

    rng = rng_for("gelu-grad", level)
    x = np.concatenate([rng.uniform(-14, 14, 700), rng.standard_normal(700) * 2.5,
                        rng.uniform(-1e-3, 1e-3, 100), np.linspace(-13.2, -5.6, 400)]).astype(np.float32)
    g = rng.uniform(-3, 3, x.size).astype(np.float32)
    z = x * np.float32(1 / math.sqrt(2))
    w = (np.float32(-0.5) * x) * x
    c = mp.mpf(float(np.float32(1 / math.sqrt(2 * math.pi))))
    with mp.workdps(30):
        erf = np.array([float(mp.erf(float(v))) for v in z])
        pdf = np.array([float(float(v) * c * mp.exp(float(b))) for v, b in zip(x, w)])
        ref = np.array([float(float(gv) * (mp.mpf(0.5) * (1 + mp.erf(float(a))) + float(v) * c
                                         * mp.exp(float(b)))) for gv, v, a, b in zip(g, x, z, w)])
    spacing = lambda a: np.spacing(np.abs(a).astype(np.float32)).astype(np.float64)  # noqa: E731
    normal = (w > -87.3) & (np.abs(pdf) >= 2.0 ** -126)   # e^w and the pdf term normal floats
    alone = (x <= -5.6) & normal
    y1 = _gelu_grad_f32(vm, np.ones_like(x), x).astype(np.float64)
    err = np.abs(y1 - pdf)[alone] / spacing(pdf[alone])
    assert err.max() <= 2.25, _worst(x[alone], y1[alone], pdf[alone], err)
    y = _gelu_grad_f32(vm, g, x).astype(np.float64)
    keep = normal & (np.abs(ref) >= 2.0 ** -126)
    bound = (np.abs(g) * (0.5 * spacing(erf) + spacing(0.5 * (1 + erf) + np.abs(pdf)))
             + 0.5 * spacing(ref))
    over = (np.abs(y - ref) / bound)[keep]
    assert over.max() <= 1.0, _worst(x[keep], y[keep], ref[keep], over)
    torch = pytest.importorskip("torch")
    xs = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 3e38, -3e38, 20.0, -20.0,
                   -5.0, 5.0], np.float32)
    for gv in (1.0, -2.0, 0.0, np.inf):
        gs = np.full_like(xs, gv)
        want = torch.ops.aten.gelu_backward(torch.from_numpy(gs), torch.from_numpy(xs)).numpy()
        got = _gelu_grad_f32(vm, gs, xs)
        exact = ~np.isfinite(want) | (want == 0) | (np.abs(xs) > 10)
        np.testing.assert_array_equal(got[exact], want[exact], err_msg=f"g={gv}")
        np.testing.assert_array_equal(np.signbit(got[exact & ~np.isnan(want)]),
                                      np.signbit(want[exact & ~np.isnan(want)]), err_msg=f"g={gv}")


_GUARD_PAGE_CHECK = r"""
import ctypes, mmap, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import vecmath_support as vs
vm = vs.load(vs.Path(sys.argv[2]))
libc = ctypes.CDLL(None)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
page = mmap.PAGESIZE
region = mmap.mmap(-1, 2 * page)
base = ctypes.addressof(ctypes.c_char.from_buffer(region))
if libc.mprotect(base + page, page, 0) != 0:         # PROT_NONE: any read there faults
    sys.exit(3)
for level in vm.levels():
    vm.set_level(level)
    for dtype in (np.float32, np.float64):
        size = np.dtype(dtype).itemsize
        for n in range(1, 9):
            x = np.frombuffer(region, dtype, n, page - n * size)   # ends at the guard page
            x[...] = np.linspace(0.25, 2.0, n)
            for name in vs.KERNELS:
                np.testing.assert_array_equal(vm(name, x), vm(name, x.copy()))
            np.testing.assert_array_equal(vm.pow(x, 2.5), vm.pow(x.copy(), 2.5))
print("ok")
"""


def test_tail_reads_nothing_past_the_array_end(vm, tmp_path):
    """The padded tail is read by a masked load: an array that ends right before an unreadable
    page works (run in a child process, so that a fault fails this test alone)."""
    import subprocess
    if not sys.platform.startswith("linux"):
        pytest.skip("the guard page is set with Linux's mprotect")
    tools = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools")
    done = subprocess.run([sys.executable, "-c", _GUARD_PAGE_CHECK, tools, str(vm.path)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode == 3:
        pytest.skip("mprotect refused the guard page")
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
