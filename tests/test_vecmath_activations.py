"""The one-pass activation kernels of vecmath (elu, softplus and the gradients of elu, softplus and
silu: vecmath.h's TG_VM_ACTIVATIONS / TG_VM_ACTIVATION_GRADS) and the AVX-512 level.

Built and called through ctypes as tests/test_vecmath.py does.  Each kernel is checked at every
dispatch level this machine runs: against its formula evaluated in long double (within the bound
of PyTorch's order of roundings where the kernel rounds each operation in the dtype, float32
within 1 ulp where it is evaluated in double and rounded once), special values as PyTorch gives them, results independent of position and length, and
the AVX-512 level against the AVX2 one bit for bit (the same algorithms on twice the lanes).
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tools"))
import vecmath_support as vs  # noqa: E402
from vecmath_fixtures import level, rng_for, vm  # noqa: E402,F401  (fixtures)

DTYPES = [np.float32, np.float64]
L = np.longdouble
# (kernel, p0, p1): elu's alpha; softplus's beta and threshold
CASES = [("elu", 1.0, 0.0), ("elu", 0.7, 0.0), ("softplus", 1.0, 20.0), ("softplus", 2.5, 20.0),
         ("softplus", 0.5, 3.0), ("elu_grad", 1.0, 0.0), ("elu_grad", 1.3, 0.0),
         ("softplus_grad", 1.0, 20.0), ("softplus_grad", 3.0, 5.0), ("silu_grad", 0.0, 0.0)]
# float64 bounds (ulp): the formulas round each operation in PyTorch's order, each rounding worth
# up to 2^-53 relative, which is up to 1 ulp of a result at the bottom of its binade (elu_grad:
# e^x, g alpha and the product; softplus_grad: e^z, g e^z, e^z + 1 and the quotient; silu_grad:
# s = 1 / (1 + e^-x) and four more, with a mild cancellation in 1 + x (1 - s))
F64_ULPS = {"elu": 2.0, "softplus": 2.5, "elu_grad": 2.5, "softplus_grad": 3.5, "silu_grad": 4.0}


def _inputs(dtype, rng, n=20_000):
    x = np.concatenate([rng.uniform(-30, 30, n), rng.standard_normal(n) * 3,
                        rng.uniform(-1e-3, 1e-3, n // 10),
                        np.ldexp(rng.uniform(-1, 1, n // 10), rng.integers(-140, 7, n // 10))])
    g = rng.uniform(-3, 3, x.size)
    return g.astype(dtype), x.astype(dtype)


def _rounded_as_pytorch(name, dtype, level):
    """Whether the kernel rounds each operation of the formula in the dtype: float64 always;
    float32 where native float code evaluates it (vecmath_f32n.h: all but elu, at the AVX2 and
    AVX-512 levels) and for elu at every level (expm1 rounded to float before the product with
    alpha, as PyTorch's float kernel); elsewhere float32 is evaluated in double and rounded
    once."""
    return dtype == np.float64 or name == "elu" or level != "scalar"


def _reference(name, g, x, p0, p1):
    """The formula in long double; the parameters and z = x beta rounded to x's dtype (as the kernels and PyTorch
    compare and exponentiate it)."""
    dt = x.dtype
    gl, xl = g.astype(L), x.astype(L)
    p0 = L(dt.type(p0))         # the kernels take the parameters in the dtype, as PyTorch's
    with np.errstate(all="ignore"):
        if name in ("softplus", "softplus_grad"):
            zd = (x * dt.type(p0)).astype(dt)
            e = np.exp(zd.astype(L))
            if name == "softplus":
                return np.where(zd > p1, xl, np.log1p(e) / p0)
            return np.where(zd > p1, gl, gl * e / (e + 1))
        if name == "elu":
            return np.where(xl > 0, xl, p0 * np.expm1(xl))
        if name == "elu_grad":
            return np.where(xl > 0, gl, gl * p0 * np.exp(xl))
        s = 1 / (1 + np.exp(-xl))
        return gl * s * (1 + xl * (1 - s))


def _call(vm, name, g, x, p0, p1):
    return vm.act(name, x, p0=p0, p1=p1) if name in vs.ACTIVATIONS else vm.act(name, g, x, p0=p0,
                                                                                p1=p1)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_within_ulp_bound_of_the_formula(vm, level, case, dtype):
    name, p0, p1 = case
    g, x = _inputs(dtype, rng_for(case, dtype))
    y = _call(vm, name, g, x, p0, p1)
    ref = _reference(name, g, x, p0, p1)
    keep = np.isfinite(ref) & (ref != 0)
    if name == "silu_grad":
        # 1 + x (1 - s) cancels near x = -1.28, and 1 - s (s rounded) for large x in float64:
        # PyTorch's formula, whose error there is not the kernel's; compared below against torch
        s = 1 / (1 + np.exp(-x.astype(L)))
        t = x * (1 - s)
        keep &= np.abs(1 + t) > (0.5 if _rounded_as_pytorch(name, dtype, level) else 0.1) * (
            1 + np.abs(t))
        if _rounded_as_pytorch(name, dtype, level):
            keep &= x < 3
    spacing = np.spacing(np.abs(ref).astype(dtype)).astype(L)
    err = (np.abs(y.astype(L) - ref) / spacing)[keep]
    bound = F64_ULPS[name] if _rounded_as_pytorch(name, dtype, level) else 1.0
    i = int(np.argmax(err))
    assert err[i] <= bound, (f"{name}: {float(err[i]):.3f} ulp at x={x[keep][i]!r} "
                             f"g={g[keep][i]!r}: got {y[keep][i]!r}, reference {ref[keep][i]!r}")


def _special_inputs(dtype):
    info = np.finfo(dtype)
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 88.0, 89.0, -88.0, -89.0, 100.0,
                  -100.0, 700.0, 710.0, -710.0, -750.0, 20.0, 20.5, 19.5, info.max, -info.max,
                  info.tiny, -info.tiny, info.smallest_subnormal, -info.smallest_subnormal],
                 dtype)
    g = np.resize(np.array([1.0, -2.0, 0.5, np.inf, 0.0, 3.0], dtype), x.size)
    # an infinite g where e^x is 0 or inf in the dtype (NaN, as PyTorch's formula gives), and a
    # zero g at a NaN x (NaN, as PyTorch's vectorised elu_backward gives)
    xs = np.concatenate([x, np.array([-np.inf, -np.inf, -200.0, 200.0, np.nan, np.nan], dtype)])
    gs = np.concatenate([g, np.array([np.inf, 1.0, -np.inf, np.inf, 0.0, 2.0], dtype)])
    return gs, xs


def _assert_same_specials(got, want, what):
    """NaN, infinities, zeros and signs exactly where `want` has them; other values to rounding
    (a subnormal result may differ in its last place: the exponentials differ within their
    bounds)."""
    rtol = 4e-7 if got.dtype == np.float32 else 4e-15
    for name, test in (("NaN", np.isnan), ("inf", np.isinf), ("zero", lambda a: a == 0)):
        np.testing.assert_array_equal(test(got), test(want), err_msg=f"{what}: {name}")
    num = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got)[num], np.signbit(want)[num],
                                  err_msg=f"{what}: sign")
    finite = np.isfinite(want) & (np.abs(want) >= np.finfo(want.dtype).tiny)
    np.testing.assert_allclose(got[finite], want[finite], rtol=rtol, atol=0, err_msg=what)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_special_values_as_pytorch(vm, level, dtype):
    """Signed zeros, infinities, NaN, overflow of e^z in the dtype (softplus with a threshold
    beyond it: inf, and its gradient inf / inf = NaN), as PyTorch's CPU kernels give them."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    g, x = _special_inputs(dtype)
    tx, tg = torch.from_numpy(x), torch.from_numpy(g)
    for alpha in (1.0, 0.5):
        _assert_same_specials(vm.act("elu", x, p0=alpha), F.elu(tx, alpha).numpy(), "elu")
        want = torch.ops.aten.elu_backward(tg, alpha, 1, 1, False, tx).numpy()
        _assert_same_specials(vm.act("elu_grad", g, x, p0=alpha), want, "elu_grad")
    for beta, threshold in ((1.0, 20.0), (1.0, 1000.0), (2.0, 5.0)):
        _assert_same_specials(vm.act("softplus", x, p0=beta, p1=threshold),
                              F.softplus(tx, beta, threshold).numpy(),
                              f"softplus {beta} {threshold}")
        want = torch.ops.aten.softplus_backward(tg, tx, beta, threshold).numpy()
        _assert_same_specials(vm.act("softplus_grad", g, x, p0=beta, p1=threshold), want,
                              f"softplus_grad {beta} {threshold}")
    xt = tx.clone().requires_grad_(True)
    F.silu(xt).backward(tg)
    _assert_same_specials(vm.act("silu_grad", g, x), xt.grad.numpy(), "silu_grad")


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_agrees_with_pytorch(vm, level, dtype):
    """Random inputs (standard normal, and a wide range): PyTorch's values to rounding."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    g, x = _inputs(dtype, rng_for("torch", dtype), 5000)
    tx, tg = torch.from_numpy(x), torch.from_numpy(g)
    rtol = 4e-7 if dtype == np.float32 else 4e-15
    np.testing.assert_allclose(vm.act("elu", x, p0=0.8), F.elu(tx, 0.8).numpy(), rtol=rtol)
    np.testing.assert_allclose(vm.act("softplus", x, p0=1.5, p1=20.0),
                               F.softplus(tx, 1.5, 20.0).numpy(), rtol=rtol)
    np.testing.assert_allclose(vm.act("elu_grad", g, x, p0=0.8),
                               torch.ops.aten.elu_backward(tg, 0.8, 1, 1, False, tx).numpy(),
                               rtol=rtol)
    np.testing.assert_allclose(vm.act("softplus_grad", g, x, p0=1.5, p1=20.0),
                               torch.ops.aten.softplus_backward(tg, tx, 1.5, 20.0).numpy(),
                               rtol=rtol)
    xt = tx.clone().requires_grad_(True)
    F.silu(xt).backward(tg)
    # 1 + x (1 - s) cancels near x = -1.28: compare there against the terms' size
    s = torch.sigmoid(tx).numpy()
    scale = np.abs(g) * s * (1 + np.abs(x) * (1 - s))
    err = np.abs(vm.act("silu_grad", g, x) - xt.grad.numpy())
    # (PyTorch's float32 sigmoid is itself off by up to ~2.3 ulp)
    assert np.all(err <= (1e-6 if dtype == np.float32 else 4e-15) * scale + 1e-300)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_result_does_not_depend_on_position_or_length(vm, level, dtype):
    g, x = _inputs(dtype, rng_for("pos", dtype), 40)
    for name, p0, p1 in CASES:
        full = _call(vm, name, g, x, p0, p1)
        for start in range(0, 9):
            for length in (1, 3, 7, 8, 13, 33, x.size - start):
                sl = slice(start, start + length)
                part = _call(vm, name, g[sl].copy(), x[sl].copy(), p0, p1)
                np.testing.assert_array_equal(part, full[sl], err_msg=f"{name} [{sl}]")
        inplace = x.copy()
        if name in vs.ACTIVATIONS:
            vm.act(name, inplace, p0=p0, p1=p1, out=inplace)
        else:
            vm.act(name, g, inplace, p0=p0, p1=p1, out=inplace)
        np.testing.assert_array_equal(inplace, full, err_msg=f"{name} in place")


def test_avx512_level_gives_the_avx2_bits(vm):
    """The AVX-512 level runs vecmath_impl.h's algorithms with the same IEEE operations as the
    AVX2 level: the same bits for every kernel and both dtypes."""
    if "avx512" not in vm.levels():
        pytest.skip("no AVX-512 on this machine")
    results = {}
    try:
        for lv in ("avx2", "avx512"):
            vm.set_level(lv)
            out = {}
            for dtype in DTYPES:
                for name in vs.KERNELS:
                    x = np.concatenate([vs.random_inputs(name, dtype, 3000, rng_for("lv", name)),
                                        vs.edge_inputs(name, dtype)])
                    out[name, dtype] = vm(name, x)
                base = np.concatenate([rng_for("lv-pow").uniform(0, 10, 3000),
                                       [0.0, -0.0, np.inf, np.nan]])
                for y in (2.5, -0.7, 7.0):
                    out["pow", y, dtype] = vm.pow(base.astype(dtype), y)
                g, x = _inputs(dtype, rng_for("lv", dtype), 2000)
                for case in CASES:
                    out[case, dtype] = _call(vm, case[0], g, x, case[1], case[2])
            results[lv] = out
    finally:
        vm.set_level(vm.levels()[-1])
    for key, want in results["avx2"].items():
        np.testing.assert_array_equal(results["avx512"][key], want, err_msg=str(key))


_LEVEL_CHILD = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import tapegrad as tg
import tapegrad.nn.functional as F
rng = np.random.default_rng(5)
out = {}
for dt in (np.float32, np.float64):
    x0 = np.concatenate([rng.standard_normal(1003) * 4, [0.0, -0.0, np.inf, -np.inf, np.nan]])
    g0 = rng.standard_normal(x0.size)
    for name, fn in (("tanh", tg.tanh), ("rsqrt", lambda t: t.abs().rsqrt()),
                     ("div", lambda t: t / (t * t + 1)), ("elu", lambda t: F.elu(t, 0.7)),
                     ("softplus", lambda t: F.softplus(t, 1.5, 5.0)), ("silu", F.silu),
                     ("gelu", F.gelu), ("exp", tg.exp), ("pow", lambda t: t.abs() ** 2.5),
                     ("sigmoid", tg.sigmoid)):
        x = tg.tensor(x0.astype(dt), requires_grad=True)
        y = fn(x)
        (gx,) = tg.autograd.grad(y, x, tg.tensor(g0.astype(dt)))
        out[f"{name}-{np.dtype(dt).name}-y"] = y.detach().numpy()
        out[f"{name}-{np.dtype(dt).name}-g"] = gx.numpy()
np.savez(sys.argv[2], **out)
"""


def test_eager_ops_give_the_same_bits_at_the_avx2_and_avx512_levels(tmp_path, vm):
    """The elementwise kernels (kernels.c: its AVX-512 version rounds as the AVX2 one) and vecmath's
    kernels at the two levels, through tapegrad's ops and their gradients."""
    import subprocess
    tg = pytest.importorskip("tapegrad")
    if "avx512" not in vm.levels():      # (vm skips outside a source tree: no C sources)
        pytest.skip("no AVX-512 on this machine")
    root = os.path.dirname(os.path.dirname(os.path.abspath(tg.__file__)))
    runs = {}
    for level in ("avx2", "avx512"):
        env = dict(os.environ, TAPEGRAD_SIMD=level)
        path = tmp_path / f"{level}.npz"
        subprocess.run([sys.executable, "-c", _LEVEL_CHILD, root, str(path)], env=env, check=True,
                       timeout=300)
        runs[level] = np.load(path)
    a, b = runs["avx2"], runs["avx512"]
    for key in a.files:
        np.testing.assert_array_equal(b[key], a[key], err_msg=key)
