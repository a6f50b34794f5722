"""tapegrad.compile's fused elementwise loops (src/tapegrad/fusion.pxi): compiled equals eager bit
for bit, values and gradients, on random chains of the fusable ops, with changing inputs; the
values a caller can observe (outputs, values Python reads, operands of other steps) are kept."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

# op name -> f(x, w, p) on the running value x (w: a same-shaped tensor, p: a 0-dim parameter)
UNARY = {
    "tanh": lambda x, w, p: x.tanh(),
    "sin": lambda x, w, p: tg.sin(x),
    "cos": lambda x, w, p: tg.cos(x),
    "sigmoid": lambda x, w, p: tg.sigmoid(x),
    "exp": lambda x, w, p: tg.exp(x.tanh()),              # bounded
    "log": lambda x, w, p: tg.log(x * x + 0.5),
    "relu": lambda x, w, p: tg.relu(x),
    "neg": lambda x, w, p: -x,
}
BINARY = {
    "add_c": lambda x, w, p: x + 0.25,
    "sub_c": lambda x, w, p: x - 0.5,
    "rsub_c": lambda x, w, p: 0.5 - x,
    "mul_c": lambda x, w, p: x * 0.75,
    "div_c": lambda x, w, p: x / 1.5,
    "rdiv_c": lambda x, w, p: 1.0 / (x * x + 1.0),
    "pow2": lambda x, w, p: x ** 2,
    "pow3": lambda x, w, p: x ** 3,
    "mul_w": lambda x, w, p: x * w,
    "add_w": lambda x, w, p: w + x,
    "div_w": lambda x, w, p: x / (w * w + 1.0),
    "mul_p": lambda x, w, p: p * x,
    "sub_p": lambda x, w, p: x - p,
    "div_p": lambda x, w, p: x / (p * p + 1.0),
    "square": lambda x, w, p: x * x,
}
OPS = {**UNARY, **BINARY}


def random_program(rng, n_ops):
    """A chain of n_ops random ops; some intermediate values are also returned (they escape the
    fused loop) and some are reused later (a value read twice)."""
    names = list(rng.choice(sorted(OPS), n_ops))
    returned = set(int(i) for i in rng.choice(n_ops, size=rng.integers(0, 3), replace=False))
    reuse = set(int(i) for i in rng.choice(n_ops, size=rng.integers(0, 3), replace=False))

    def fn(x, w, p):
        outs, kept = [], []
        for i, name in enumerate(names):
            x = OPS[name](x, w, p)
            if i in reuse:
                kept.append(x)
            elif kept and i % 5 == 4:
                x = x + kept.pop()
            if i in returned:
                outs.append(x)
        return (x, *outs)
    return fn, names


def run(fn, base, wbase, pval, dt, seeds):
    x = tg.tensor(base, dtype=dt, requires_grad=True)
    w = tg.tensor(wbase, dtype=dt, requires_grad=True)
    p = tg.tensor(pval, dtype=dt, requires_grad=True)
    outs = fn(x, w, p)
    tg.autograd.backward(outs, [tg.tensor(s, dtype=dt) for s in seeds])
    return ([o.detach().numpy() for o in outs],
            [t.grad.numpy() if t.grad is not None else None for t in (x, w, p)])


def same(a, b):
    return all((u is None and v is None) or np.array_equal(u, v, equal_nan=True)
               for u, v in zip(a, b))


@pytest.mark.parametrize("seed", range(12))
def test_random_chains_bit_identical(seed):
    rng = np.random.default_rng(seed)
    dt = tg.float64 if seed % 2 else tg.float32
    size = int(rng.choice([1024, 1500, 4099, 9000]))
    fn, names = random_program(rng, int(rng.integers(3, 40)))
    compiled = tg.compile(fn)
    for call in range(3):                   # capture, then replays on new values
        base = rng.uniform(-2, 2, size)
        wbase = rng.uniform(-1, 1, size)
        pval = float(rng.uniform(-1, 1))
        n_out = len(fn(tg.zeros(size, dtype=dt), tg.zeros(size, dtype=dt), tg.tensor(0.0, dtype=dt)))
        seeds = [rng.uniform(-1, 1, size) for _ in range(n_out)]
        got = run(compiled, base, wbase, pval, dt, seeds)
        want = run(fn, base, wbase, pval, dt, seeds)
        assert same(got[0], want[0]), (names, call)
        assert same(got[1], want[1]), (names, call)
    assert compiled.stats["replays"] == 2, compiled.explain()
    assert "fused" in compiled.explain() or len(names) < 3, compiled.explain()


@pytest.fixture
def threads():
    before = tg.get_num_threads()
    yield tg.set_num_threads
    tg.set_num_threads(before)


@pytest.mark.parametrize("seed", range(4))
def test_fused_groups_over_threads_bit_identical_to_eager_and_each_other(seed, threads):
    """Big groups split their blocks over the thread pool: values and gradients equal eager's,
    bit for bit, whatever the thread count (including counts that do not divide the blocks)."""
    rng = np.random.default_rng(100 + seed)
    dt = tg.float64 if seed % 2 else tg.float32
    size = int(rng.choice([40_000, 70_001]))
    fn, names = random_program(rng, int(rng.integers(6, 20)))
    n_out = len(fn(tg.zeros(size, dtype=dt), tg.zeros(size, dtype=dt), tg.tensor(0.0, dtype=dt)))
    base, wbase = rng.uniform(-2, 2, size), rng.uniform(-1, 1, size)
    pval = float(rng.uniform(-1, 1))
    seeds = [rng.uniform(-1, 1, size) for _ in range(n_out)]
    threads(1)
    want = run(fn, base, wbase, pval, dt, seeds)
    for n in (1, 2, 3):
        threads(n)
        compiled = tg.compile(fn)
        for call in range(3):
            got = run(compiled, base, wbase, pval, dt, seeds)
            assert same(got[0], want[0]), (names, n, call)
            assert same(got[1], want[1]), (names, n, call)
        assert compiled.stats["replays"] == 2, compiled.explain()
    assert "fused" in compiled.explain(), compiled.explain()


def test_chain_is_fused_and_exact():
    def f(x):
        for _ in range(5):
            x = tg.exp(tg.sigmoid(tg.sin(tg.tanh(x * 0.5 + 0.25))))
        return x
    compiled = tg.compile(f)
    for i in range(3):
        base = np.linspace(-1, 1, 30_000) + i
        x, xe = (tg.tensor(base, requires_grad=True) for _ in range(2))
        y, ye = compiled(x), f(xe)
        y.sum().backward()
        ye.sum().backward()
        assert np.array_equal(y.detach().numpy(), ye.detach().numpy())
        assert np.array_equal(x.grad.numpy(), xe.grad.numpy())
    assert "30 of them fused into 1 loop" in compiled.explain(), compiled.explain()


@pytest.mark.parametrize("dt", [tg.float32, tg.float64])
def test_sin_cos_gradients_from_the_forward_pass_are_exact(dt):
    """A fused sin / cos whose input gets a gradient computes cos / sin in the forward's pass
    (tg_sincos) for its backward: gradients equal eager's bit for bit, with huge arguments (the
    exact reduction), signed zeros, infinities and NaN among the values, at sizes that end a block
    part way, and beside a sin whose input gets no gradient (no partner buffer)."""
    def f(x, w):
        h = tg.sin(x * w)                   # partner: x and w get gradients through x * w
        k = tg.cos(h * 3.0 + 0.5)
        u = tg.sin(w.detach() * 2.0) * k    # its input gets no gradient
        return tg.cos(tg.sin(u) - x) * 2.0
    compiled = tg.compile(f)
    rng = np.random.default_rng(5)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -3e38, 2.0 ** 24 + 3,
                         np.pi / 2, 1e-40])
    for call, size in enumerate((4097, 9001, 4097, 20_000)):
        base = rng.uniform(-40, 40, size)
        base[rng.choice(size, len(specials), replace=False)] = specials
        wbase = rng.uniform(-2, 2, size)
        seed = rng.uniform(-1, 1, size)
        got, want = (run(g, base, wbase, 0.0, dt, [seed]) for g in
                     (lambda x, w, p: (compiled(x, w),), lambda x, w, p: (f(x, w),)))
        assert same(got[0], want[0]) and same(got[1], want[1]), (size, call)
    assert "fused" in compiled.explain(), compiled.explain()


def test_no_fusion_at_small_sizes():
    compiled = tg.compile(lambda x: (x * 2 + 1).tanh())
    for _ in range(2):
        compiled(tg.ones(100))
    assert compiled.explain() == "replayed: 3 steps"


def test_observed_intermediates_are_kept():
    """A value Python reads (a guard), an output, and an operand of a non-elementwise step keep
    their full buffers: the guard re-checks the right value, the outputs are right."""
    def f(x):
        h = (x * 2.0).tanh()
        m = h.max()                                  # read by a step outside the group
        s = (h * 3.0 + 1.0).sin()
        if bool(s[0] > 0):                          # a value Python branches on
            return s * m, h
        return -s, h
    compiled = tg.compile(f)
    for v in (0.1, 0.2, -2.0, 0.3):
        base = np.full(5000, v) + np.linspace(0, 0.01, 5000)
        x, xe = (tg.tensor(base, requires_grad=True) for _ in range(2))
        got, want = compiled(x), f(xe)
        for a, b in zip(got, want):
            assert np.array_equal(a.detach().numpy(), b.detach().numpy())
        (got[0].sum() + got[1].sum()).backward()
        (want[0].sum() + want[1].sum()).backward()
        assert np.array_equal(x.grad.numpy(), xe.grad.numpy())
    assert compiled.stats["guard_failures"] >= 1


def test_inplace_write_to_input_before_backward_still_raises():
    def f(x):
        return (x * 2.0).sin() * 0.5 + x.cos()
    compiled = tg.compile(f)
    for _ in range(2):
        x = tg.tensor(np.linspace(0, 1, 4096), requires_grad=True)
        y = compiled(x * 1.0)
    x = tg.tensor(np.linspace(0, 1, 4096), requires_grad=True)
    a = x * 1.0
    y = compiled(a)
    with tg.no_grad():
        a.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_retain_grad_on_an_intermediate_runs_eagerly():
    """A retained intermediate's .grad gets the gradient from inside the call, which a replay
    cannot deliver: the call runs eagerly at every call (explain() says why), .grad as eager."""
    def f(x):
        h = (x * 2.0).tanh()
        h.retain_grad()
        return (h * 3.0).sin().sum(), h
    compiled = tg.compile(f)
    for i in range(3):
        base = np.linspace(0, 1, 2048) + i
        x, xe = (tg.tensor(base, requires_grad=True) for _ in range(2))
        (y, h), (ye, he) = compiled(x), f(xe)
        y.backward()
        ye.backward()
        assert np.array_equal(h.grad.numpy(), he.grad.numpy())
    assert compiled.stats["replays"] == 0
    assert "retain_grad" in compiled.explain()
