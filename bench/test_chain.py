"""A long chain of cheap elementwise ops: where per-op overhead of an autodiff library shows.

In the style of HIPS autograd's benchmarks (forward pass / backward pass / total, each timed on
its own), one chain is timed five ways, each its own benchmark, grouped by workload:

  test_numpy_reference   hand-written numpy forward (storing what the derivatives need) and a
                         manual reverse loop applying each op's derivative: the floor to beat
  test_tapegrad_record   tapegrad forward with requires_grad=True (recording the tape) only
  test_tapegrad_sweep    tapegrad backward() only, of a graph recorded in the (untimed) setup;
                         retain_graph is not set, so the sweep also frees the saved values
  test_tapegrad_total    tapegrad forward + backward
  test_torch_total       PyTorch eager forward + backward (skips when torch is not installed)

Workloads:

  size 1, 1000 ops, float64         pure per-op overhead
  size 1e6, 100 ops, float64        the chain is shortened from 1000 to 100 ops to keep the suite
                                    fast; here numpy's kernels (and memory traffic) dominate
  300 ops at sizes 1, 16, 256, 4096, float32 and float64
                                    where per-op overhead gives way to the kernels

Every benchmark checks, once and outside the timed function, that the work it timed produced the
reference gradient (np.testing.assert_allclose), so it cannot silently measure the wrong work.
The numpy reference gradient is itself checked against central finite differences (the chain is
elementwise, so one pair of perturbed forward passes gives every component).

Timing protocol: benchmark.pedantic with one call per round; anything created before the work
(the input leaf, a pre-recorded graph) is made in the untimed setup.  "record" keeps its output
graph alive past the timer and frees it in the untimed teardown; "total", "torch" and "numpy"
free their graph / saved values when the timed function returns, i.e. inside the timing, as a
training step would.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.bench import OPS_PER_CYCLE, chain
from tapegrad.bench import numpy_chain as numpy_forward_backward

# -- the chain ---------------------------------------------------------------------------------
# chain() (generic over the library: the library's tanh/exp/log are passed in, the rest are
# operators) and numpy_forward_backward() (its hand-written reverse mode in numpy) are defined in
# tapegrad.bench, shared with `python -m tapegrad bench`.


# -- workloads -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Workload:
    id: str
    size: int
    n_ops: int
    rounds: int
    warmup_rounds: int
    group: str
    dtype: str = "float64"

    @property
    def cycles(self) -> int:
        return self.n_ops // OPS_PER_CYCLE


# On a noisy machine, more rounds steady the medians: TAPEGRAD_BENCH_ROUNDS_SCALE=3 pytest bench
ROUNDS_SCALE = float(os.environ.get("TAPEGRAD_BENCH_ROUNDS_SCALE", "1"))


def _rounds(n: int) -> int:
    return max(1, round(n * ROUNDS_SCALE))


WORKLOADS = [
    Workload("size1-1000ops", size=1, n_ops=1000, rounds=_rounds(100), warmup_rounds=5,
             group="chain size=1 x1000 ops"),
    Workload("size1e6-100ops", size=10**6, n_ops=100, rounds=_rounds(7), warmup_rounds=1,
             group="chain size=1e6 x100 ops (chain shortened from 1000 to keep the suite fast)"),
]
# 300 ops from size 1 (overhead) to 4096 (kernels start to matter), both float dtypes.
for _size, _rounds_n in ((1, 100), (16, 100), (256, 60), (4096, 30)):
    for _dtype in ("float32", "float64"):
        WORKLOADS.append(Workload(f"size{_size}-300ops-{_dtype}", size=_size, n_ops=300,
                                  rounds=_rounds(_rounds_n), warmup_rounds=3,
                                  group=f"chain size={_size} x300 ops {_dtype}", dtype=_dtype))
for _w in WORKLOADS:
    assert _w.n_ops % OPS_PER_CYCLE == 0


@dataclass(frozen=True)
class Reference:
    x0: np.ndarray          # the input
    seed: np.ndarray        # the output's adjoint (ones)
    value: np.ndarray       # chain(x0)
    grad: np.ndarray        # d sum(chain(x0)) / d x0 from the numpy reference


@lru_cache(maxsize=None)
def reference(w: Workload) -> Reference:
    """Input, seed and the numpy reference's value and gradient (checked by finite differences;
    a float32 reference is checked against the float64 one, itself checked that way)."""
    x64 = np.random.default_rng(0).uniform(-1.0, 1.0, w.size)
    seed = np.ones(w.size)
    value, grad = numpy_forward_backward(x64, w.cycles, seed)
    h = 1e-6
    plain = lambda x: chain(x, w.cycles, np.tanh, np.exp, np.log)  # noqa: E731
    fd = (plain(x64 + h) - plain(x64 - h)) / (2 * h)
    np.testing.assert_allclose(value, plain(x64), rtol=0, atol=0)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8 * np.abs(grad).max())
    assert np.all(np.isfinite(grad)) and np.abs(grad).min() > 0
    if w.dtype == "float64":
        return Reference(x0=x64, seed=seed, value=value, grad=grad)
    x32, seed32 = x64.astype(np.float32), seed.astype(np.float32)
    value32, grad32 = numpy_forward_backward(x32, w.cycles, seed32)
    assert value32.dtype == grad32.dtype == np.float32
    np.testing.assert_allclose(grad32, grad, rtol=1e-4)
    return Reference(x0=x32, seed=seed32, value=value32, grad=grad32)


@pytest.fixture(params=WORKLOADS, ids=[w.id for w in WORKLOADS])
def workload(request) -> Workload:
    return request.param


@pytest.fixture
def ref(workload) -> Reference:
    return reference(workload)


def describe(benchmark, w: Workload, kind: str, method: str) -> None:
    """Group by workload; extra_info (kind, size, n_ops) also feeds conftest's ratio summary."""
    benchmark.group = w.group
    benchmark.extra_info.update(kind=kind, workload=w.id, size=w.size, n_ops=w.n_ops,
                                dtype=w.dtype, method=method)


def note_per_op(benchmark, w: Workload) -> None:
    """Store the median per-op time (us) in extra_info when timings were taken."""
    stats = getattr(benchmark, "stats", None)
    if stats is not None:
        benchmark.extra_info["median_us_per_op"] = stats.stats.median / w.n_ops * 1e6


def assert_grad(got, ref: Reference, rtol=1e-10):
    """Equal to the reference gradient up to rounding.  The tolerance allows last-ulp differences
    between exp/log/tanh implementations (numpy's SIMD loops, libm) compounded over the chain; a
    real error (e.g. one dropped factor of 1.0001) is many orders of magnitude larger.  In
    float32 the same last-ulp differences compound to ~1e-5 over 300 ops: rtol is 5e-5 there."""
    got = np.asarray(got)
    assert got.shape == ref.grad.shape and got.dtype == ref.grad.dtype
    if got.dtype == np.float32:
        rtol = max(rtol, 5e-5)
    np.testing.assert_allclose(got, ref.grad, rtol=rtol, atol=0)


def tg_leaf(ref: Reference):
    return tg.tensor(ref.x0, requires_grad=True)        # dtype follows the array's


def tg_chain(x, w: Workload):
    return chain(x, w.cycles, tg.tanh, tg.exp, tg.log)


# -- the benchmarks ------------------------------------------------------------------------------

def test_numpy_reference(benchmark, workload, ref):
    """(a) hand-written numpy forward + manual reverse loop: the reference."""
    describe(benchmark, workload, "numpy", "numpy reference: forward + manual reverse")
    value, grad = benchmark.pedantic(numpy_forward_backward,
                                     args=(ref.x0, workload.cycles, ref.seed),
                                     rounds=workload.rounds, warmup_rounds=workload.warmup_rounds)
    note_per_op(benchmark, workload)
    np.testing.assert_allclose(value, ref.value, rtol=0, atol=0)
    assert_grad(grad, ref)


def test_tapegrad_record(benchmark, workload, ref):
    """(b) tapegrad forward with requires_grad (records the tape); graph freed after the timer."""
    describe(benchmark, workload, "record", "tapegrad record only")
    tape_fn = getattr(tg._core, "tape", None)      # debugging view of the tape, if available
    tape = tape_fn() if tape_fn is not None else None

    def setup():
        return (tg_leaf(ref), []), {}

    def record(x, keep):
        keep.append(tg_chain(x, workload))     # keep the graph alive past the timer

    def teardown(x, keep):
        keep.clear()

    benchmark.pedantic(record, setup=setup, teardown=teardown,
                       rounds=workload.rounds, warmup_rounds=workload.warmup_rounds)
    note_per_op(benchmark, workload)

    # Check once, untimed: the same call records n_ops records whose backward is the reference.
    (x, keep), _ = setup()
    live = getattr(tape, "live_records", None)
    record(x, keep)
    y = keep[0]
    if live is not None:
        assert tape.live_records - live == workload.n_ops + 1    # + the leaf's record
    assert y.requires_grad and not y.is_leaf
    # float32: last-ulp differences between exp/log/tanh implementations compound over the
    # chain to an absolute error of the chain's scale, so elements near zero differ by more than
    # 5e-5 relatively (tapegrad's kernels are the closer of the two to the float64 chain there).
    f64 = workload.dtype == "float64"
    np.testing.assert_allclose(y.detach().numpy(), ref.value, rtol=1e-10 if f64 else 5e-5,
                               atol=(1e-12 if f64 else 5e-5) * np.abs(ref.value).max())
    y.backward(tg.from_numpy(ref.seed))
    assert_grad(x.grad.numpy(), ref)


def test_tapegrad_sweep(benchmark, workload, ref):
    """(c) tapegrad backward() only, of a graph recorded in the setup; nothing retained."""
    describe(benchmark, workload, "sweep", "tapegrad sweep only")
    seed = tg.from_numpy(ref.seed)

    def setup():
        x = tg_leaf(ref)
        return (x, tg_chain(x, workload)), {}

    def sweep(x, y):
        y.backward(seed)                        # retain_graph not set: saved values are freed
        return x.grad

    grad = benchmark.pedantic(sweep, setup=setup,
                              rounds=workload.rounds, warmup_rounds=workload.warmup_rounds)
    note_per_op(benchmark, workload)
    assert_grad(grad.numpy(), ref)

    # Check once, untimed: the sweep really retained nothing (a second backward must fail).
    (x, y), _ = setup()
    assert_grad(sweep(x, y).numpy(), ref)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward(seed)


def test_tapegrad_total(benchmark, workload, ref):
    """(d) tapegrad forward + backward."""
    describe(benchmark, workload, "total", "tapegrad total: record + sweep")
    seed = tg.from_numpy(ref.seed)

    def setup():
        return (tg_leaf(ref),), {}

    def total(x):
        tg_chain(x, workload).backward(seed)
        return x.grad

    grad = benchmark.pedantic(total, setup=setup,
                              rounds=workload.rounds, warmup_rounds=workload.warmup_rounds)
    note_per_op(benchmark, workload)
    assert_grad(grad.numpy(), ref)


def test_torch_total(benchmark, torch, workload, ref):
    """(e) PyTorch eager forward + backward (CPU, one thread)."""
    describe(benchmark, workload, "torch", "torch eager total")
    seed = torch.from_numpy(ref.seed)

    def setup():
        return (torch.tensor(ref.x0, requires_grad=True),), {}      # dtype of the array

    def total(x):
        chain(x, workload.cycles, torch.tanh, torch.exp, torch.log).backward(seed)
        return x.grad

    grad = benchmark.pedantic(total, setup=setup,
                              rounds=workload.rounds, warmup_rounds=workload.warmup_rounds)
    note_per_op(benchmark, workload)
    # PyTorch's exp/log/tanh kernels may differ from numpy's in the last ulp.
    assert_grad(grad.numpy(), ref, rtol=1e-9)
