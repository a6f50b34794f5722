"""tapegrad.compile's fused elementwise loops on the bench's mixed chain (* + tanh sin sigmoid exp,
bench/test_compile.py): a replay equals eager bit for bit -- values and gradients, NaN and
infinity included -- in float32 and float64, at sizes that are not multiples of a block, of 64 or
of the vector width, on both of the planner's paths (values saved by the forward, or recomputed
block by block in the backward), over several calls with changing inputs; and eager itself agrees
with PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


def mixed_cycles(lib, x, cycles):
    """The bench's mixed chain, `cycles` cycles of six ops."""
    for _ in range(cycles):
        x = lib.exp(lib.sigmoid(lib.sin(lib.tanh(x * 0.5 + 0.25))))
    return x


def with_specials(rng, size):
    """Uniform values in [-4, 4] with NaN, +-inf, +-0 and huge values at random places (a few in
    each vector's lanes, some in the last, partial block)."""
    x = rng.uniform(-4, 4, size)
    specials = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300, -1e300, 710.0, -745.0]
    where = rng.choice(size, size=min(size, 3 * len(specials)), replace=False)
    x[where] = np.resize(specials, where.size)
    x[-1] = np.nan
    x[-2] = -np.inf
    return x


def one_call(fn, base, seed, dt):
    x = tg.tensor(base, dtype=dt, requires_grad=True)
    y = fn(x)
    y.backward(tg.tensor(seed, dtype=dt))
    return y.detach().numpy().copy(), x.grad.numpy().copy()


def plan_of(compiled):
    programs = [p.program for p in compiled._plans.values() if p.program is not None]
    assert programs and programs[0].fused_groups, compiled.explain()
    return programs[0]


# (size, cycles, dtype, whether the backward recomputes): the recomputing path starts where the
# values the backward reads pass 16 MB (FUSE_RECOMPUTE_BYTES)
CASES = [
    (1031, 4, tg.float64, False),           # one partial block, 1031 = 16 * 64 + 7
    (4099, 5, tg.float32, False),           # two full blocks and a tail of 3
    (9001, 3, tg.float64, False),
    (100_003, 6, tg.float64, True),
    (180_007, 7, tg.float32, True),
]


@pytest.mark.parametrize("size,cycles,dt,recompute", CASES)
def test_mixed_chain_replay_bit_identical_with_specials(size, cycles, dt, recompute):
    eager = lambda x: mixed_cycles(tg, x, cycles)
    compiled = tg.compile(eager)
    rng = np.random.default_rng(size)
    for call in range(3):
        base = with_specials(rng, size) if call else rng.uniform(-2, 2, size)
        seed = rng.uniform(-1, 1, size)
        seed[rng.choice(size, 3, replace=False)] = [np.inf, np.nan, 0.0]
        got = one_call(compiled, base, seed, dt)
        want = one_call(eager, base, seed, dt)
        for u, v, what in zip(got, want, ("value", "gradient")):
            assert u.dtype == v.dtype
            differ = np.flatnonzero(u.view(f"u{u.itemsize}") != v.view(f"u{v.itemsize}"))
            assert differ.size == 0, (what, call, differ[:5], u[differ[:5]], v[differ[:5]])
    assert compiled.stats["replays"] == 2, compiled.explain()
    assert bool(plan_of(compiled).recomputed_groups) == recompute, compiled.explain()


@pytest.mark.parametrize("size,cycles,dt,recompute", CASES[:1] + CASES[3:4])
def test_mixed_chain_replay_matches_pytorch(size, cycles, dt, recompute):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7 + size)
    compiled = tg.compile(lambda x: mixed_cycles(tg, x, cycles))
    tdt = torch.float64 if dt == tg.float64 else torch.float32
    for call in range(2):
        base = with_specials(rng, size)
        seed = rng.uniform(-1, 1, size)
        y, g = one_call(compiled, base, seed, dt)
        xt = torch.tensor(base, dtype=tdt, requires_grad=True)
        yt = mixed_cycles(torch, xt, cycles)
        yt.backward(torch.tensor(seed, dtype=tdt))
        # the transcendental kernels are within an ulp of PyTorch's (not its bits: Sleef/MKL)
        np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-13, atol=0, equal_nan=True)
        np.testing.assert_allclose(g, xt.grad.numpy(), rtol=1e-11, atol=1e-300, equal_nan=True)
        assert np.array_equal(np.isnan(y), np.isnan(yt.detach().numpy()))
        assert np.array_equal(np.isnan(g), np.isnan(xt.grad.numpy()))


def test_mixed_chain_gradcheck_float64():
    """The fused replay's gradient against central finite differences (float64)."""
    rng = np.random.default_rng(3)
    base = rng.uniform(-1, 1, 2053)
    compiled = tg.compile(lambda x: mixed_cycles(tg, x, 2))
    one_call(compiled, base, np.ones(base.size), tg.float64)         # capture
    _, g = one_call(compiled, base, np.ones(base.size), tg.float64)  # replay
    assert compiled.stats["replays"] == 1, compiled.explain()
    eps = 1e-6
    f = lambda v: mixed_cycles(tg, tg.tensor(v), 2).numpy()
    fd = (f(base + eps) - f(base - eps)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
