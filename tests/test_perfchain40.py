"""The 300-op mixed chain's replay at 1e6 elements (issue 19, bench/test_compile.py::
test_mixed_chain_interleaved), made faster without changing a bit:

- vecmath's sin / cos / sincos reduce the lanes past TG_VM_TRIG_HUGE (Payne-Hanek) in an
  out-of-line helper that takes and returns the reduction by value; the common path no longer
  goes through memory.  Checked here where that helper matters: vectors mixing huge and ordinary
  lanes at every lane position, against the long-double / mpmath reference, element by element
  (the result of a lane does not depend on its neighbours), and sincos against sin and cos.
- a fused group's block rows are sized for L1 (FUSE_ROW_BYTES): blocks are smaller, so groups
  of a few thousand elements now run several blocks with a partial last one.  Compiled must still
  equal eager bit for bit there, values and gradients, and agree with PyTorch.
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

DTYPES = [np.float32, np.float64]
HUGE = 2.0 ** 24            # TG_VM_TRIG_HUGE: larger |x| take the Payne-Hanek reduction


def mixed_lanes(dtype, rng):
    """Ordinary arguments with huge ones (and specials) placed at every lane position of every
    vector width (1, 4, 8, 16 lanes), so that each lane of the out-of-line reduction is both a
    huge lane and an ordinary lane next to huge ones."""
    big = np.finfo(dtype).max
    huge = np.concatenate([rng.uniform(HUGE * 1.01, HUGE * 4, 40),
                           np.exp(rng.uniform(np.log(HUGE * 4), np.log(float(big)) - 1, 40)),
                           [HUGE * 2 + 1, 1e22, float(big)]]).astype(dtype)
    huge = huge * rng.choice([-1, 1], huge.size).astype(dtype)
    ordinary = np.concatenate([rng.uniform(-10, 10, 200), rng.uniform(-HUGE, HUGE, 100),
                               [0.0, -0.0, 5e-324, -2.2e-308, np.pi / 4, 1e-30, np.inf,
                                -np.inf, np.nan]]).astype(dtype)
    rows = []
    for width in (4, 8, 16):
        for lane in range(width):
            block = rng.choice(ordinary, (6, width))
            block[:, lane] = rng.choice(huge, 6)
            rows.append(block.ravel())
            block = rng.choice(huge, (6, width))
            block[:, lane] = rng.choice(ordinary, 6)    # one ordinary lane among huge ones
            rows.append(block.ravel())
    return np.concatenate(rows).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_sin_cos_with_huge_and_ordinary_lanes_mixed(vm, level, dtype):
    """Within the ulp bound of the reference, special values as numpy, and each element's bits
    those of the element computed alone; sincos gives the sin and cos bits."""
    x = mixed_lanes(dtype, rng_for("perfchain40 lanes", dtype))
    s, c = vm.sincos(x)
    for name, y in (("sin", s), ("cos", c)):
        alone = vm(name, x)
        np.testing.assert_array_equal(y.view(np.uint8), alone.view(np.uint8))
        for i in range(0, x.size, 7):       # one element per call: the tail path, no neighbours
            one = vm(name, np.ascontiguousarray(x[i:i + 1]))
            assert one.view(np.uint8).tobytes() == y[i:i + 1].view(np.uint8).tobytes(), (
                name, x[i])
        finite = np.isfinite(x)
        ref = vs.reference(name, x[finite])
        err = vs.ulp_errors(y[finite], ref)
        assert err.max() <= vs.ulp_bound(name, dtype), (name, x[finite][np.argmax(err)])
        with np.errstate(all="ignore"):
            want = getattr(np, name)(x[~finite])
        np.testing.assert_array_equal(np.isnan(y[~finite]), np.isnan(want))
        zeros = x == 0
        if name == "sin":                   # sin(+-0) = +-0, sign kept
            np.testing.assert_array_equal(np.signbit(y[zeros]), np.signbit(x[zeros]))


def mixed_chain(lib, x, cycles, scale):
    """The bench's cycle (* + tanh sin sigmoid exp) with sin and cos of scaled arguments mixed in
    (huge ones when scale is large: the Payne-Hanek lanes inside a fused group)."""
    for _ in range(cycles):
        x = lib.exp(lib.sigmoid(lib.sin(lib.tanh(x * 0.5 + 0.25))))
        x = x + lib.cos(x * scale) * 0.125 - lib.sin(x * scale) * 0.0625
    return x


def fused_blocks(compiled):
    programs = [plan.program for plan in compiled._plans.values() if plan.program is not None]
    assert programs, compiled.explain()
    return programs[0].fused_groups


@pytest.mark.parametrize("dt", [tg.float32, tg.float64])
@pytest.mark.parametrize("scale", [3.0, 1e9])
@pytest.mark.parametrize("size", [3_000, 20_011])
def test_fused_chain_in_l1_blocks_bit_identical_to_eager(dt, scale, size):
    """Several blocks per group with a partial last one: compiled equals eager bit for bit, the
    output and the gradient, over calls with new inputs."""
    eager = lambda x: mixed_chain(tg, x, 4, scale)
    compiled = tg.compile(eager)
    rng = np.random.default_rng(size)
    for call in range(3):
        base = rng.uniform(-2, 2, size)
        seed = rng.uniform(-1, 1, size)
        got = []
        for fn in (compiled, eager):
            x = tg.tensor(base, dtype=dt, requires_grad=True)
            y = fn(x)
            y.backward(tg.tensor(seed, dtype=dt))
            got.append((y.detach().numpy().copy(), x.grad.numpy().copy()))
        for u, v in zip(*got):
            assert np.array_equal(u, v, equal_nan=True), (call, dt, scale, size)
    assert "fused" in compiled.explain(), compiled.explain()
    groups = fused_blocks(compiled)
    assert groups and all(block < size for _, _, block in groups), groups


def test_fused_chain_matches_pytorch():
    torch = pytest.importorskip("torch")
    size = 20_011
    base = np.random.default_rng(7).uniform(-2, 2, size)
    compiled = tg.compile(lambda x: mixed_chain(tg, x, 4, 3.0))
    for _ in range(2):                      # the second call is the replay
        x = tg.tensor(base, dtype=tg.float64, requires_grad=True)
        y = compiled(x)
        y.backward(tg.ones(size, dtype=tg.float64))
    xt = torch.tensor(base, requires_grad=True)
    yt = mixed_chain(torch, xt, 4, 3.0)
    yt.backward(torch.ones(size, dtype=torch.float64))
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-9)
    assert compiled.stats["replays"] >= 1, compiled.explain()


def test_fused_sin_cos_of_huge_arguments_match_pytorch():
    """sin and cos of arguments mixing huge (up to 1e15, where PyTorch's kernels still reduce
    accurately) and ordinary ones in a fused group: values and gradients as PyTorch's (a chain
    would amplify any upstream rounding by the argument's size: these are the inputs)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    size = 4_099
    base = np.where(rng.random(size) < 0.5, rng.uniform(-10, 10, size),
                    np.exp(rng.uniform(np.log(HUGE), np.log(1e15), size))
                    * rng.choice([-1, 1], size))
    fn = lambda lib, x: lib.sin(x) * 0.75 + lib.cos(x) * 0.5
    compiled = tg.compile(lambda x: fn(tg, x))
    for _ in range(2):
        x = tg.tensor(base, dtype=tg.float64, requires_grad=True)
        y = compiled(x)
        y.backward(tg.ones(size, dtype=tg.float64))
    assert "fused" in compiled.explain(), compiled.explain()
    xt = torch.tensor(base, requires_grad=True)
    yt = fn(torch, xt)
    yt.backward(torch.ones(size, dtype=torch.float64))
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=0, atol=1e-15)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=0, atol=1e-15)


def sums_chain(lib, x, w):
    """+ and - whose operands take over the adjoint's row in the fused backward: x + x, a
    number + a member, member - member, a member - a closure tensor and back, interleaved with
    steps that read the values (so the rows are reused around them)."""
    for _ in range(3):
        t = lib.tanh(x * 0.5)
        u = lib.sin(t) + t                  # both operands members, t read twice
        v = u + u                           # the same member twice
        v = 0.25 + v                        # the member second
        v = v - lib.sigmoid(t)              # - : first operand takes the row, second negated
        v = w - v                           # a closure tensor first, the member negated
        x = lib.exp(v * 0.1) - w
    return x


@pytest.mark.parametrize("dt", [tg.float32, tg.float64])
@pytest.mark.parametrize("size", [2_048, 9_999])
def test_sums_handing_their_adjoint_row_on_bit_identical_to_eager(dt, size):
    eager = lambda x, w: sums_chain(tg, x, w)
    compiled = tg.compile(eager)
    rng = np.random.default_rng(size + 1)
    for call in range(3):
        base, wb, seed = (rng.uniform(-1.5, 1.5, size) for _ in range(3))
        got = []
        for fn in (compiled, eager):
            x = tg.tensor(base, dtype=dt, requires_grad=True)
            w = tg.tensor(wb, dtype=dt, requires_grad=True)
            y = fn(x, w)
            y.backward(tg.tensor(seed, dtype=dt))
            got.append((y.detach().numpy().copy(), x.grad.numpy().copy(), w.grad.numpy().copy()))
        for u, v in zip(*got):
            assert np.array_equal(u, v, equal_nan=True), (call, dt, size)
    assert "fused" in compiled.explain(), compiled.explain()


def test_sums_handing_their_adjoint_row_on_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    base, wb = rng.uniform(-1.5, 1.5, 4_096), rng.uniform(-1.5, 1.5, 4_096)
    compiled = tg.compile(lambda x, w: sums_chain(tg, x, w))
    for _ in range(2):
        x = tg.tensor(base, dtype=tg.float64, requires_grad=True)
        w = tg.tensor(wb, dtype=tg.float64, requires_grad=True)
        compiled(x, w).sum().backward()
    xt = torch.tensor(base, requires_grad=True)
    wt = torch.tensor(wb, requires_grad=True)
    sums_chain(torch, xt, wt).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-12, atol=1e-13)
