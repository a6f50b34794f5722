"""float64 tanh around and past |x| = 0.625 and its use in the 300-op mixed chain's replay
(issue 19, bench/test_compile.py::test_mixed_chain_interleaved).

Written for a faster tanh from 0.625 on (1 - 2 / (1 + e^2a) on the table-driven exp, commit
f2bf17c7, reverted after it: a vector mixing lanes on both sides of the switch computed both
formulas, 70% slower on random data around 0); the checks hold for any float64 tanh kernel and
stay: accuracy against the long-double / mpmath reference around the switch and up to the
saturation, the special values, an element's bits independent of its neighbours and equal at
every dispatch level, compiled equal to eager bit for bit on fused chains, values and gradients
as PyTorch's.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tapegrad as tg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tools"))
import vecmath_support as vs  # noqa: E402
from vecmath_fixtures import level, rng_for, vm  # noqa: E402,F401  (fixtures)

SWITCH = 0.625              # where the reverted kernel switched formulas (a lane boundary)


def around_the_switch(rng):
    """Arguments of both signs below, at and above the switch, up to past the saturation."""
    below = np.nextafter(SWITCH, 0)
    x = np.concatenate([rng.uniform(0.5, 0.75, 40_000), rng.uniform(0.75, 3.0, 40_000),
                        rng.uniform(3.0, 25.0, 20_000),
                        np.exp(rng.uniform(np.log(25.0), np.log(1e300), 2_000)),
                        [SWITCH, below, np.nextafter(SWITCH, 1), 20.0, np.nextafter(20.0, 0),
                         19.06, 1.0, 2.0]])
    return x * rng.choice([-1.0, 1.0], x.size)


def test_tanh_float64_within_bound_from_the_switch_on(vm, level):
    """Max error in ulps against the reference: within the float64 bound, and within 1.5 ulp
    (the worst anywhere, near 0.11, is ~1.4-1.5) from the switch on."""
    x = around_the_switch(rng_for("perfchain41 tanh", np.float64))
    y = vm("tanh", x)
    err = vs.ulp_errors(y, vs.reference("tanh", x))
    worst = x[np.argmax(err)]
    assert err.max() <= vs.ulp_bound("tanh", np.float64), worst
    assert err[np.abs(x) >= SWITCH].max() <= 1.5, worst
    # |x| >= 19.5: tanh rounds to +-1 (1 - tanh < 2^-55)
    big = np.abs(x) >= 19.5
    np.testing.assert_array_equal(y[big], np.sign(x[big]))


def test_tanh_float64_special_values(vm, level):
    x = np.array([0.0, -0.0, 5e-324, -5e-324, 2.2e-308, -1e-300, np.inf, -np.inf, np.nan,
                  -np.nan, 1e308, -1e308])
    y = vm("tanh", x)
    with np.errstate(all="ignore"):
        want = np.tanh(x)
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(np.signbit(y[:6]), np.signbit(x[:6]))     # -0 stays -0


def test_tanh_element_independent_of_its_neighbours_and_level(vm):
    """Each lane below / above the switch among lanes of the other side, at every lane position
    of every vector width: the vector's result equals each element computed alone, and every
    dispatch level gives the same bits."""
    rng = rng_for("perfchain41 lanes", np.float64)
    near0 = np.concatenate([rng.uniform(-SWITCH, SWITCH, 200), [0.0, -0.0, 1e-310, np.nan]])
    far = np.concatenate([rng.uniform(SWITCH, 30, 200), [SWITCH, np.inf, -np.inf, -SWITCH]])
    far *= rng.choice([-1.0, 1.0], far.size)
    rows = []
    for width in (4, 8):
        for lane in range(width):
            for fill, odd in ((near0, far), (far, near0)):
                block = rng.choice(fill, (4, width))
                block[:, lane] = rng.choice(odd, 4)
                rows.append(block.ravel())
    x = np.concatenate(rows)
    results = {}
    for name in vm.levels():
        vm.set_level(name)
        results[name] = vm("tanh", x)
        alone = np.concatenate([vm("tanh", np.ascontiguousarray(x[i:i + 1]))
                                for i in range(x.size)])
        assert alone.tobytes() == results[name].tobytes(), name
    first = next(iter(results.values()))
    for name, y in results.items():
        assert y.tobytes() == first.tobytes(), name


def bench_cycles(lib, x, cycles):
    """The bench's cycle: tanh's arguments ~1.2 after the first, in [-0.25,
    0.75] in the first (vectors straddling the switch)."""
    for _ in range(cycles):
        x = lib.exp(lib.sigmoid(lib.sin(lib.tanh(x * 0.5 + 0.25))))
    return x


@pytest.mark.parametrize("size,recompute", [(5_003, False), (100_003, True)])
def test_fused_chain_bit_identical_to_eager(size, recompute):
    """Compiled equals eager bit for bit, output and gradient, over calls with new inputs; the
    larger size recomputes its values in the backward (the bench's path)."""
    eager = lambda x: bench_cycles(tg, x, 6)
    compiled = tg.compile(eager)
    rng = np.random.default_rng(size)
    for call in range(3):
        base = rng.uniform(-3, 3, size)
        seed = rng.uniform(-1, 1, size)
        got = []
        for fn in (compiled, eager):
            x = tg.tensor(base, dtype=tg.float64, requires_grad=True)
            y = fn(x)
            y.backward(tg.tensor(seed, dtype=tg.float64))
            got.append((y.detach().numpy().copy(), x.grad.numpy().copy()))
        for u, v in zip(*got):
            assert u.tobytes() == v.tobytes(), (call, size)
    programs = [p.program for p in compiled._plans.values() if p.program is not None]
    assert programs and programs[0].fused_groups, compiled.explain()
    assert bool(programs[0].recomputed_groups) == recompute, compiled.explain()


def test_tanh_values_and_gradients_match_pytorch():
    torch = pytest.importorskip("torch")
    x0 = around_the_switch(np.random.default_rng(41))[:20_000]
    x = tg.tensor(x0, requires_grad=True)
    xt = torch.tensor(x0, requires_grad=True)
    g = np.random.default_rng(1).uniform(-1, 1, x0.size)
    y = tg.tanh(x)
    yt = torch.tanh(xt)
    y.backward(tg.tensor(g))
    yt.backward(torch.tensor(g))
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=4e-16, atol=0)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-14, atol=1e-300)


def test_fused_bench_chain_matches_pytorch():
    torch = pytest.importorskip("torch")
    size = 40_000
    base = np.random.default_rng(3).uniform(-1, 1, size)
    compiled = tg.compile(lambda x: bench_cycles(tg, x, 10))
    for _ in range(2):                      # the second call is the replay
        x = tg.tensor(base, requires_grad=True)
        y = compiled(x)
        y.backward(tg.ones(size, dtype=tg.float64))
    xt = torch.tensor(base, requires_grad=True)
    yt = bench_cycles(torch, xt, 10)
    yt.backward(torch.ones(size, dtype=torch.float64))
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-13, atol=0)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-11, atol=1e-14)
    assert compiled.stats["replays"] >= 1, compiled.explain()


def test_tanh_gradcheck_float64():
    x = tg.tensor(np.array([-3.0, -0.9, -0.63, -0.2, 0.1, 0.62, 0.7, 1.5, 4.0]),
                  requires_grad=True)
    assert tg.autograd.gradcheck(tg.tanh, (x,))
