"""The vectorised math kernels as the ops use them (eager, backward, replay), and the thread pool
that splits big arrays: values within the ulp bounds against mpmath, special values as numpy gives
them, results bit-identical whatever the thread count and array length, replay equal to eager.
(The kernels themselves, per dispatch level: tests/test_vecmath.py.)"""
import math
import os
import sys

import numpy as np
import pytest

import tapegrad as tg

F = tg.nn.functional
BIG = 70_001            # above the kernels' split thresholds, not a multiple of any vector width

UNARY = {
    "exp": tg.exp, "log": tg.log, "log1p": tg.log1p, "expm1": tg.expm1, "sin": tg.sin,
    "cos": tg.cos, "tanh": tg.tanh, "sigmoid": tg.sigmoid, "erf": tg.erf,
}
ACTIVATIONS = {
    "gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "silu": F.silu,
    "elu": lambda t: F.elu(t, alpha=0.7), "softplus": lambda t: F.softplus(t, beta=1.5),
}
ARITH = {"sqrt": tg.sqrt, "rsqrt": tg.rsqrt}       # C kernels without vecmath (rsqrt: all sizes)
POW = {"pow": lambda t: t ** 2.5, "pow_neg": lambda t: tg.pow(t, -0.7)}   # vecmath's vector pow
ALL = {**UNARY, **ACTIVATIONS, **ARITH, **POW}


@pytest.fixture
def threads():
    """Set the thread count for the test; restored afterwards."""
    before = tg.get_num_threads()
    yield tg.set_num_threads
    tg.set_num_threads(before)


def bits(t):
    return np.asarray(t.detach().numpy()).tobytes()


def inputs(name, dtype, n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 4
    if name in ("log", "sqrt", "rsqrt", "pow", "pow_neg"):
        x = np.abs(x) + 1e-3
    if name == "log1p":
        x = np.abs(x) - 0.9
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_and_gradient_do_not_depend_on_the_thread_count(dtype, threads):
    results = {}
    for n_threads in (1, 2, 3):
        threads(n_threads)
        assert tg.get_num_threads() == n_threads
        got = []
        for name, fn in ALL.items():
            x = tg.tensor(inputs(name, dtype, BIG), requires_grad=True)
            y = fn(x)
            y.backward(tg.tensor(np.linspace(-1, 1, BIG).astype(dtype)))
            w = tg.tensor(inputs("exp", dtype, BIG, seed=1))
            got += [bits(y), bits(x.grad), bits(x.detach() * w + w), bits(x.detach() / w)]
        results[n_threads] = got
    assert results[1] == results[2] == results[3]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(ALL))
def test_an_element_does_not_depend_on_the_array_length(name, dtype, threads):
    threads(2)
    x = inputs(name, dtype, BIG)
    whole = ALL[name](tg.tensor(x)).numpy()
    for lo, hi in ((0, 1), (3, 10), (5, 21), (17, 33), (BIG - 13, BIG)):
        part = ALL[name](tg.tensor(x[lo:hi].copy())).numpy()
        assert part.tobytes() == whole[lo:hi].tobytes(), (lo, hi)


def ulps(got, want, dtype):
    """|got - want| in units of the last place of want (in dtype)."""
    want = np.asarray(want, dtype=np.float64)
    spacing = np.spacing(np.abs(want.astype(dtype))).astype(np.float64)
    tiny = np.finfo(dtype).smallest_subnormal
    return np.abs(got.astype(np.float64) - want) / np.maximum(spacing, tiny)


MPMATH_FNS = {
    "exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "sin": "sin", "cos": "cos",
    "tanh": "tanh", "erf": "erf", "sigmoid": None,
}


@pytest.mark.parametrize("dtype,bound", [(np.float32, 1.0), (np.float64, 2.0)])
@pytest.mark.parametrize("name", list(UNARY))
def test_ops_are_within_the_ulp_bound_of_mpmath(name, dtype, bound):
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 120
    x = inputs(name, dtype, 300, seed=3)
    # the big-array path and a short array give the same elements (previous test): check both
    got_big = UNARY[name](tg.tensor(np.resize(x, BIG))).numpy()[:300]
    got = UNARY[name](tg.tensor(x)).numpy()
    assert got.tobytes() == got_big.tobytes()
    fn = (lambda v: 1 / (1 + mpmath.exp(-v))) if name == "sigmoid" \
        else getattr(mpmath, MPMATH_FNS[name])
    want = np.array([float(fn(mpmath.mpf(float(v)))) for v in x])
    if name == "sigmoid":
        bound = 2.5   # PyTorch's formula 1 / (1 + e^-x): three roundings, as PyTorch's own
    assert ulps(got, want, dtype).max() <= bound


@pytest.mark.parametrize("dtype,bound", [(np.float32, 1.0), (np.float64, 2.0)])
@pytest.mark.parametrize("exponent", [2.5, -0.7, 1.7, 11.0, -3.0, 0.1])
def test_pow_is_within_the_ulp_bound_of_mpmath(exponent, dtype, bound):
    """x ** e for a number e that is none of the product/root exponents (2, 3, 0.5, ...): the
    vector pow, at a short and a big array, its gradient e x^(e-1) too."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 120
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.uniform(0, 10, 200), -np.arange(1.0, 6.0),
                        np.exp(rng.uniform(-30, 30, 95))]).astype(dtype)
    got_big = (tg.tensor(np.resize(x, BIG)) ** exponent).numpy()[:300]
    got = (tg.tensor(x) ** exponent).numpy()
    assert got.tobytes() == got_big.tobytes()
    with np.errstate(all="ignore"):
        want_numpy = x ** dtype(exponent)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want_numpy))
    ok = np.isfinite(want_numpy)
    e = mpmath.mpf(float(dtype(exponent)))
    want = np.array([float(mpmath.power(mpmath.mpf(float(v)), e)) for v in x[ok]])
    assert ulps(got[ok], want, dtype).max() <= bound
    xg = tg.tensor(np.abs(x) + 1, requires_grad=True)
    (xg ** exponent).sum().backward()
    with np.errstate(all="ignore"):
        base = (np.abs(x) + 1).astype(dtype)
        want_grad = dtype(exponent) * base ** dtype(exponent - 1)
    np.testing.assert_allclose(xg.grad.numpy(), want_grad, rtol=4 * np.finfo(dtype).eps)


def test_pow_special_exponents_keep_products_and_roots():
    """2, 3, 0.5, ... stay exact products / roots (PyTorch's special cases), whatever the size."""
    x = np.random.default_rng(1).uniform(0.1, 3, BIG)
    t = tg.tensor(x)
    assert (t ** 2).numpy().tobytes() == (x * x).tobytes()
    assert (t ** 3).numpy().tobytes() == (x * x * x).tobytes()
    assert (t ** 0.5).numpy().tobytes() == np.sqrt(x).tobytes()
    assert (t ** -1).numpy().tobytes() == (1 / x).tobytes()


def test_pow_gradcheck(gradcheck):
    x = np.random.default_rng(2).uniform(0.2, 3, 40)
    gradcheck(lambda t: t ** 2.5, x)
    gradcheck(lambda t: tg.pow(t, -0.7), x)


SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, -1e-310, 1e-40, -1e-40, 1e-45, 1e30,
            -1e30, 1e300, -1e300, 88.8, -104.0, 710.0, -746.0, 20.0, -20.0, 6.0, -6.0, -1.0,
            -1.5, 1e22, -1e22, 2.0 ** 60, 1.0e200, 3.0e38, -3.0e38]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["exp", "log", "log1p", "expm1", "sin", "cos", "tanh"])
def test_special_values_as_numpy(name, dtype):
    with np.errstate(all="ignore"):
        x = np.array(SPECIALS, dtype=np.float64).astype(dtype)
        want = getattr(np, name)(x)
    for n in (1, len(x), BIG):                      # one element, a vector tail, the split path
        xs = np.resize(x, max(n, len(x)))
        got = UNARY[name](tg.tensor(xs)).numpy()[:len(x)]
        exact = ~np.isfinite(want) | (want == 0) | (np.abs(want) == 1)
        np.testing.assert_array_equal(got[exact], want[exact])
        assert np.array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))
        # huge sin/cos arguments: correctly reduced (numpy's are too), so within the bound
        finite = np.isfinite(want) & ~exact
        assert ulps(got[finite], want[finite].astype(np.float64), dtype).max() <= 2.0


def test_sigmoid_and_erf_special_values():
    for dtype in (np.float32, np.float64):
        x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, -800.0, 800.0], dtype=dtype)
        s = tg.sigmoid(tg.tensor(x)).numpy()
        e = tg.erf(tg.tensor(x)).numpy()
        assert s[0] == 0.5 and s[1] == 0.5 and s[2] == 1.0 and s[3] == 0.0 and np.isnan(s[4])
        assert s[6] == 0.0 and s[7] == 1.0
        assert e[0] == 0.0 and not np.signbit(e[0]) and e[1] == 0.0 and np.signbit(e[1])
        assert e[2] == 1.0 and e[3] == -1.0 and np.isnan(e[4]) and e[6] == -1.0 and e[7] == 1.0


def test_torch_parity_on_big_arrays(torch):
    rng = np.random.default_rng(5)
    for dtype in (np.float32, np.float64):
        x = (rng.standard_normal(BIG) * 3).astype(dtype)
        for name, fn in ALL.items():
            xi = np.abs(x) + 0.1 if name in ("log", "pow", "pow_neg") else (
                np.abs(x) if name == "log1p" else x)
            a = tg.tensor(xi, requires_grad=True)
            b = torch.tensor(xi, requires_grad=True)
            tfn = {"gelu_tanh": lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
                   "elu": lambda t: torch.nn.functional.elu(t, alpha=0.7),
                   "softplus": lambda t: torch.nn.functional.softplus(t, beta=1.5),
                   "gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu,
                   "pow": lambda t: t ** 2.5, "pow_neg": lambda t: torch.pow(t, -0.7)}.get(
                       name, getattr(torch, name, None))
            ya, yb = fn(a), tfn(b)
            ya.sum().backward()
            yb.sum().backward()
            tol = 4e-6 if dtype == np.float32 else 1e-14
            np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=tol,
                                       atol=tol, err_msg=name)
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=tol * 4,
                                       atol=tol * 4, err_msg=name)


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_replay_equals_eager_on_big_arrays(dtype, n_threads, threads):
    threads(n_threads)

    def chain(x, w):
        h = x
        for _ in range(3):
            h = ((h * 0.9 + 0.1).tanh() * w).sin()
        return (F.silu(h) + F.gelu(h) + h.exp().sigmoid() + F.softplus(h) + h.erf()
                + (h * h + 0.5) ** 1.7)

    rng = np.random.default_rng(2)
    compiled = tg.compile(chain)
    w_c = tg.tensor(rng.uniform(0.5, 1.5, BIG).astype(dtype), requires_grad=True)
    w_e = tg.tensor(w_c.detach().numpy().copy(), requires_grad=True)
    for _ in range(2):
        x = tg.tensor(rng.standard_normal(BIG).astype(dtype))
        out_c, out_e = compiled(x, w_c), chain(x, w_e)
        assert bits(out_c) == bits(out_e)
        seed = tg.tensor(rng.standard_normal(BIG).astype(dtype))
        out_c.backward(seed)
        out_e.backward(seed)
        assert bits(w_c.grad) == bits(w_e.grad)


_THREADS_CHILD = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import tapegrad as tg
import tapegrad.nn.functional as F
n = 70_007   # 7 x 10_001: above the split thresholds, not a multiple of a vector width
ops = {
    "exp": tg.exp, "log": lambda t: tg.log(t.abs() + 1e-3), "tanh": tg.tanh, "sigmoid": tg.sigmoid,
    "sin": tg.sin, "cos": tg.cos, "erf": tg.erf, "expm1": tg.expm1, "log1p": lambda t: tg.log1p(t.abs()),
    "sqrt": lambda t: tg.sqrt(t.abs()), "rsqrt": lambda t: tg.rsqrt(t.abs() + 1e-3),
    "pow": lambda t: t.abs() ** 2.5, "gelu": F.gelu, "silu": F.silu, "softplus": F.softplus,
    "elu": F.elu, "chain": lambda t: tg.sin(tg.tanh(t * 0.999 + 0.001) * t),
    "sum": lambda t: t.sum(), "mean": lambda t: t.mean(), "sum_dim": lambda t: t.reshape(7, -1).sum(1),
    "sum_dim0": lambda t: t.reshape(7, -1).sum(0), "var": lambda t: t.var(), "norm": lambda t: t.norm(),
    "softmax": lambda t: F.softmax(t.reshape(7, -1), 1), "log_softmax": lambda t: F.log_softmax(t.reshape(7, -1), 1),
    "logsumexp": lambda t: t.reshape(7, -1).logsumexp(1), "cumsum": lambda t: t.cumsum(0),
    "prod": lambda t: (1 + t * 1e-4).prod(), "amax": lambda t: t.reshape(7, -1).amax(1),
}
runs = []
for threads in (1, 2, 3):
    tg.set_num_threads(threads)
    out = []
    for dt in (np.float32, np.float64):
        runs_x = np.random.default_rng(11).standard_normal(n).astype(dt) * 4
        for name, fn in ops.items():
            x = tg.tensor(runs_x, requires_grad=True)
            y = fn(x)
            g = tg.tensor(np.linspace(-1, 1, y.numel()).astype(dt).reshape(tuple(y.shape)))
            y.backward(g)
            out.append((name, np.asarray(y.detach().numpy()).tobytes(), x.grad.numpy().tobytes()))
    runs.append(out)
bad = [a[0] for a, b, c in zip(*runs) if not (a == b == c)]
print("differ between thread counts:", bad)
sys.exit(1 if bad else 0)
"""


@pytest.mark.parametrize("level", ["scalar", "avx2", "avx512"])
def test_results_do_not_depend_on_the_thread_count_at_each_simd_level(level):
    """Elementwise ops, their gradients and reductions give the same bits at 1, 2 and 3 threads at
    every vecmath level this machine runs (TAPEGRAD_SIMD forces it; a child process each, as the
    level is fixed at first use)."""
    import subprocess
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                    "tools"))
    import vecmath_support as vs
    if not (vs.SRC / vs.SOURCES[0]).exists():
        # a copy of tests/ run against an installed wheel (tools/test_installed.py): which levels
        # this machine runs is read from the kernels built from source, which are not here
        pytest.skip("the vecmath C sources are not here (tests run outside a source tree)")
    if vs.compiler() is not None and level not in vs.load().levels():
        pytest.skip(f"dispatch level {level} is not available on this machine")
    root = os.path.dirname(os.path.dirname(os.path.abspath(tg.__file__)))
    env = dict(os.environ, TAPEGRAD_SIMD=level)
    run = subprocess.run([sys.executable, "-c", _THREADS_CHILD, root], env=env, timeout=600,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_runs_the_pool(threads):
    threads(2)
    x = tg.tensor(np.linspace(-3, 3, BIG))
    want = bits(tg.tanh(x))                         # the pool's workers exist in the parent now
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                    # the child: the workers did not survive fork
        try:
            os.close(r)
            ok = bits(tg.tanh(x)) == want and bits(tg.sin(x)) == bits(tg.sin(x))
            os.write(w, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    assert got == b"1"


def test_threads_from_python_threads_share_the_pool(threads):
    import threading
    threads(2)
    x = tg.tensor(np.linspace(-3, 3, BIG))
    want = bits(tg.sin(x))
    errors = []

    def work():
        for _ in range(20):
            if bits(tg.sin(x)) != want:
                errors.append("mismatch")

    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_default_thread_count_honours_omp_num_threads():
    import subprocess
    code = "import tapegrad; print(tapegrad.get_num_threads())"
    env = dict(os.environ, OMP_NUM_THREADS="3")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.strip() == "3"
    env.pop("OMP_NUM_THREADS")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count()
    assert out.stdout.strip() == str(cores)


def test_set_num_threads_checks_its_argument(threads):
    with pytest.raises(RuntimeError, match="positive"):
        tg.set_num_threads(0)
    threads(3)
    assert tg.get_num_threads() == 3
    assert not math.isnan(tg.exp(tg.tensor(np.zeros(BIG))).sum().item())
