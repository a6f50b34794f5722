"""Issue 19's 300-op mixed chain (* + tanh sin sigmoid exp) at the sizes where the fused replay
recomputes its values in the backward (session perf43, Intel Sapphire Rapids).

- The replay stays eager's bit for bit, in float32 and float64, over calls with changing inputs,
  and gives PyTorch's values and gradients (to the kernels' ulp bounds).
- The shipped kernels are the build the accuracy tools check (tools/vecmath_support.py):
  setup.py compiles the kernels in GNU C, where GCC's default -ffp-contract=fast fuses some of
  vecmath's separately written multiplies and adds; the tools compiled ISO C99 (no contraction)
  and so verified other bits (0.2-0.5% of the elements of exp float32, sigmoid float32 and
  expm1 float64, 1-3 ulp apart).  The tools now build with -ffp-contract=fast too.
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
from vecmath_fixtures import vm  # noqa: E402,F401  (fixture)

CYCLES = 50
# above the planner's recompute threshold (FUSE_RECOMPUTE_BYTES: 200 saved values of n elements)
SIZE = 24_000


def mixed_chain(lib, x):
    for _ in range(CYCLES):
        x = lib.exp(lib.sigmoid(lib.sin(lib.tanh(x * 0.5 + 0.25))))
    return x


def run(fn, base, dtype):
    x = tg.tensor(base, dtype=dtype, requires_grad=True)
    y = fn(x)
    y.backward(tg.ones(base.size, dtype=dtype))
    return y.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_recomputing_replay_equals_eager_over_calls(dt):
    dtype = getattr(tg, dt)
    compiled = tg.compile(lambda x: mixed_chain(tg, x))
    rng = np.random.default_rng(43)
    for call in range(3):
        base = rng.uniform(-3, 3, SIZE)
        want_y, want_g = run(lambda x: mixed_chain(tg, x), base, dtype)
        got_y, got_g = run(compiled, base, dtype)
        np.testing.assert_array_equal(got_y, want_y)
        np.testing.assert_array_equal(got_g, want_g)
    assert compiled.stats["replays"] >= 1, compiled.explain()
    assert "1 recomputing" in compiled.explain(), compiled.explain()


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_recomputing_replay_matches_torch(dt):
    torch = pytest.importorskip("torch")
    base = np.random.default_rng(4343).uniform(-3, 3, SIZE)
    compiled = tg.compile(lambda x: mixed_chain(tg, x))
    run(compiled, base, getattr(tg, dt))
    got_y, got_g = run(compiled, base, getattr(tg, dt))
    xt = torch.tensor(base, dtype=getattr(torch, dt), requires_grad=True)
    yt = mixed_chain(torch, xt)
    yt.backward(torch.ones(SIZE, dtype=getattr(torch, dt)))
    assert got_y.dtype == yt.detach().numpy().dtype and got_g.dtype == xt.grad.numpy().dtype
    # 300 steps of a contracting chain: differences of a few ulps per step stay small
    tol = 1e-4 if dt == "float32" else 1e-12
    np.testing.assert_allclose(got_y, yt.detach().numpy(), rtol=tol, atol=0)
    np.testing.assert_allclose(got_g, xt.grad.numpy(), rtol=tol * 10, atol=tol * 1e-3)


@pytest.mark.skipif(bool(os.environ.get("ASAN_OPTIONS") or os.environ.get("TAPEGRAD_DEBUG")),
                    reason="the sanitizer and debug builds compile the kernels at -O1/-O0, "
                           "where GCC contracts other multiplies and adds than the release -O3")
@pytest.mark.parametrize("name,dt,lo,hi", [("exp", np.float32, -100, 100),
                                           ("sigmoid", np.float32, -40, 40),
                                           ("expm1", np.float64, -20, 20)])
def test_shipped_kernels_are_the_checked_build(vm, name, dt, lo, hi):
    """The package's eager op gives the bits of the vecmath build the accuracy tools check."""
    x = np.random.default_rng(7).uniform(lo, hi, 1_000_000).astype(dt)
    np.testing.assert_array_equal(getattr(tg, name)(tg.tensor(x)).numpy(), vm(name, x))
