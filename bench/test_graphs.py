"""Graph shapes other than a chain: wide, fan-out/fan-in, reductions, indexing, cross-entropy.

Each workload (tapegrad.bench.graph_cases) is a function of some leaves, written once for both
tapegrad and torch (`graph(lib, **tensors)`), with a hand-written numpy forward + backward as the
reference.  Timed like test_chain.py, one group per workload:

  test_numpy_reference   the hand-written numpy forward + backward
  test_tapegrad_record   tapegrad forward only (graph freed in the untimed teardown)
  test_tapegrad_sweep    tapegrad backward() only, of a graph recorded in the untimed setup
  test_tapegrad_total    tapegrad forward + backward
  test_torch_total       PyTorch eager forward + backward (skips without torch)

Workloads:

  wide            20 branches x 50 elementwise ops from one size-64 input, summed at the end
  fanout          h = tanh(x) used by 100 ops exp(h * c_i), combined by one stack(...).sum(0)
  reductions      mean(dim=1, keepdim) / sum(dim=0) / amax(dim=1) / mean((0, 1)) on (64, 128)
  indexing        x[idx] with repeated rows, x[::2, 4:12], x[rows, cols] with repeated pairs
  cross_entropy   F.cross_entropy on (64, 10) float32 logits

Checks, once and outside the timing: the numpy reference gradient against central finite
differences (a few coordinates per leaf), and every timed method's gradients against the numpy
reference (rtol 1e-10 in float64, 1e-5 in float32; torch's exp/log/tanh may differ in the last
ulp, so 1e-9 there).
"""
from __future__ import annotations

import os
from functools import lru_cache

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.bench import GraphCase, graph_cases

ROUNDS_SCALE = float(os.environ.get("TAPEGRAD_BENCH_ROUNDS_SCALE", "1"))
CASES = graph_cases(ROUNDS_SCALE)


@lru_cache(maxsize=None)
def reference(case_id: str):
    """(value, grads) of the numpy reference, itself checked by finite differences."""
    case = next(c for c in CASES if c.id == case_id)
    case.finite_difference_check()
    return case.reference()


@pytest.fixture(params=CASES, ids=[c.id for c in CASES])
def case(request) -> GraphCase:
    return request.param


@pytest.fixture
def ref(case):
    return reference(case.id)


def describe(benchmark, case: GraphCase, kind: str, method: str) -> None:
    benchmark.group = case.group
    benchmark.extra_info.update(kind=kind, workload=case.id, n_ops=case.n_ops, dtype=case.dtype,
                                shapes={k: list(v.shape) for k, v in case.leaves.items()},
                                method=method)


def pedantic(benchmark, case: GraphCase, fn, **kw):
    return benchmark.pedantic(fn, rounds=case.rounds, warmup_rounds=case.warmup, **kw)


def test_numpy_reference(benchmark, case, ref):
    """(a) hand-written numpy forward + backward: the reference."""
    describe(benchmark, case, "numpy", "numpy reference: forward + manual backward")
    value, grads = pedantic(benchmark, case, case.reference)
    np.testing.assert_array_equal(value, ref[0])
    case.check(grads, ref[1], rtol=0)


def test_tapegrad_record(benchmark, case, ref):
    """(b) tapegrad forward with requires_grad (records the tape); graph freed after the timer."""
    describe(benchmark, case, "record", "tapegrad record only")
    tape = tg._core.tape() if hasattr(tg._core, "tape") else None

    def setup():
        return (case.tensors(tg), []), {}

    def record(t, keep):
        keep.append(case.forward(tg, t))       # keep the graph alive past the timer

    def teardown(t, keep):
        keep.clear()

    pedantic(benchmark, case, record, setup=setup, teardown=teardown)

    # Check once, untimed: the recorded graph's value and backward are the reference's.
    live = getattr(tape, "live_records", None)
    (t, keep), _ = setup()
    record(t, keep)
    out = keep[0]
    if live is not None and case.n_ops is not None:
        assert tape.live_records - live == case.n_ops + 1     # + the leaf's record
    assert out.requires_grad and not out.is_leaf
    np.testing.assert_allclose(out.detach().numpy(), ref[0], rtol=max(case.rtol, 1e-12),
                               atol=case.atol)
    case.backward(tg, out)
    case.check({k: t[k].grad for k in case.leaves}, ref[1])


def test_tapegrad_sweep(benchmark, case, ref):
    """(c) tapegrad backward() only, of a graph recorded in the setup; nothing retained."""
    describe(benchmark, case, "sweep", "tapegrad sweep only")

    def setup():
        t = case.tensors(tg)
        return (t, case.forward(tg, t)), {}

    def sweep(t, out):
        case.backward(tg, out)                 # retain_graph not set: saved values are freed
        return {k: t[k].grad for k in case.leaves}

    grads = pedantic(benchmark, case, sweep, setup=setup)
    case.check(grads, ref[1])

    # Check once, untimed: the sweep really retained nothing (a second backward must fail).
    (t, out), _ = setup()
    case.check(sweep(t, out), ref[1])
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        case.backward(tg, out)


def test_tapegrad_total(benchmark, case, ref):
    """(d) tapegrad forward + backward."""
    describe(benchmark, case, "total", "tapegrad total: record + sweep")
    grads = pedantic(benchmark, case, lambda t: case.total(tg, t),
                     setup=lambda: ((case.tensors(tg),), {}))
    case.check(grads, ref[1])


def test_torch_total(benchmark, torch, case, ref):
    """(e) PyTorch eager forward + backward (CPU, one thread)."""
    describe(benchmark, case, "torch", "torch eager total")
    grads = pedantic(benchmark, case, lambda t: case.total(torch, t),
                     setup=lambda: ((case.tensors(torch),), {}))
    case.check(grads, ref[1], rtol=max(case.rtol, 1e-9))
