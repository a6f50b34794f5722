"""Second order: a Hessian-vector product against a gradient of the same function.

hvp(x, v) = d/dx (grad f(x) . v): autograd.grad with create_graph=True (the backward is recorded
with the graph VJPs), then autograd.grad of that gradient along v (a sweep of the recorded
backward).  Workloads (tapegrad.bench.hvp_cases):

  sum(exp(tanh(x)) * x), x of 1,000 float64     elementwise: per-op costs and small kernels
  MLP 32-64-1 (Linear, tanh, Linear) MSE loss   matrix products; H v in all the parameters
  in its parameters, batch 128, float64

Benchmarks per workload (one group each):

  test_tapegrad_grad     the gradient alone: forward + one plain sweep
  test_tapegrad_hvp      forward + create_graph sweep + sweep of the recorded backward
  test_torch_grad        the same in PyTorch eager (skips without torch)
  test_torch_hvp
  test_numpy_reference   the hand-written H v (the elementwise function only)

The headline figure is hvp / grad (extra_info kind "hvp" and "grad"; the summary prints the
ratio): theory says a small constant (the recorded backward is about as long as the forward, and
it is swept once more).  Checks, outside the timing: H v equals central differences of the
gradient along v (tapegrad and torch), and the hand-written reference for the elementwise
function.
"""
from __future__ import annotations

import os

import pytest

import tapegrad as tg
from tapegrad import bench as B

ROUNDS_SCALE = float(os.environ.get("TAPEGRAD_BENCH_ROUNDS_SCALE", "1"))
ROUNDS = dict(rounds=max(1, round(50 * ROUNDS_SCALE)), warmup_rounds=3)
CASES = {c.id: c for c in B.hvp_cases()}


def describe(benchmark, case, kind: str, method: str) -> None:
    benchmark.group = case.group
    benchmark.extra_info.update(kind=kind, workload=case.id, dtype="float64", method=method)


@pytest.mark.parametrize("case_id", CASES)
def test_tapegrad_grad(benchmark, case_id):
    case = CASES[case_id]
    describe(benchmark, case, "grad", "tapegrad: forward + backward (gradient)")
    case.check(tg)
    benchmark.pedantic(case.gradient, setup=lambda: ((tg, case.leaves(tg)), {}), **ROUNDS)


@pytest.mark.parametrize("case_id", CASES)
def test_tapegrad_hvp(benchmark, case_id):
    case = CASES[case_id]
    describe(benchmark, case, "hvp", "tapegrad: forward + create_graph backward + backward")
    benchmark.pedantic(case.hvp,
                       setup=lambda: ((tg, case.leaves(tg), case.directions(tg)), {}), **ROUNDS)


@pytest.mark.parametrize("case_id", CASES)
def test_torch_grad(benchmark, torch, case_id):
    case = CASES[case_id]
    describe(benchmark, case, "torch grad", "torch eager: gradient")
    case.check(torch)
    benchmark.pedantic(case.gradient, setup=lambda: ((torch, case.leaves(torch)), {}), **ROUNDS)


@pytest.mark.parametrize("case_id", CASES)
def test_torch_hvp(benchmark, torch, case_id):
    case = CASES[case_id]
    describe(benchmark, case, "torch", "torch eager: Hessian-vector product")
    benchmark.pedantic(case.hvp,
                       setup=lambda: ((torch, case.leaves(torch), case.directions(torch)), {}),
                       **ROUNDS)


def test_numpy_reference(benchmark):
    case = CASES["hvp_elementwise"]
    describe(benchmark, case, "numpy", "numpy: hand-written H v")
    benchmark.pedantic(case.numpy_hvp, args=(case.arrays, case.vs), **ROUNDS)
