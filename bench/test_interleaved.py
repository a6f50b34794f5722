"""Interleaved ratios for the training workloads (MLP step, polynomial fit).

test_training.py and test_compile.py time each implementation in its own pytest-benchmark group
member, one after another.  On these shared 2-core machines the host's load changes the speed of
everything by up to 1.5x within a minute, so two medians taken a minute apart can disagree by
more than the difference being measured.  Here every implementation runs one call in turn, round
after round, in one process (tapegrad.bench.time_contenders; a round is a block of BLOCK calls
of each, so each runs with its own data in cache as in a training loop), so the noise hits all
of them alike; the medians and their ratios are printed after the run (bench_report), as the issue's
targets are stated: tapegrad eager and tapegrad.compile replay against the hand-written numpy
iteration and, when installed, PyTorch eager (one thread each).

Each implementation's values are checked against the numpy reference in test_training.py and
test_compile.py; this file only times.  With --benchmark-disable (the CI smoke run) it takes a
few rounds, to prove that it runs.
"""
from __future__ import annotations

import pytest

import tapegrad as tg
from tapegrad import bench as B

try:  # conftest.py has already pinned torch to one thread when it is installed
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

BLOCK = 10
ROUNDS = {"mlp": 40, "poly": 300, "hand_adam": 300, "metrics": 300,
          "factories": 300}  # rounds of BLOCK calls
CONTENDERS = {"mlp": B.mlp_contenders, "poly": B.poly_contenders,
              "hand_adam": lambda libs, compiled: B.hand_adam_contenders(libs),
              "metrics": lambda libs, compiled: B.metrics_contenders(libs),
              "factories": lambda libs, compiled: B.factories_contenders(libs)}
LABELS = {"mlp": "MLP 784-256-10 SGD step, batch 64, float32",
          "poly": f"poly fit of sin, {B.POLY_POINTS} points, float32, per iteration",
          "hand_adam": "hand-written Adam step over a 4-32-32-3 MLP's parameters, float32",
          "metrics": f"eval metrics (MSE, MAE, mean(0), sum(1)) of {B.METRICS_SHAPE}, float32",
          "factories": "13 factory calls (zeros, randn, arange, tensor, eye, linspace, the "
                       "*_like ...) and 2 scalar reads at size (3, 4)"}


# The ops of perf46 (tapegrad.bench.SLOW_OP_CASES, timed one by one in test_ops_slow.py), one
# workload each; the 1e6-element ones get fewer rounds.
for _name in B.SLOW_OP_CASES:
    _key = f"slow: {_name}"
    ROUNDS[_key] = 3 if "1e6" in _name else 20
    CONTENDERS[_key] = lambda libs, compiled, _name=_name: B.slow_op_contenders(_name, libs)
    LABELS[_key] = f"{_name} (perf46)"


@pytest.mark.parametrize("workload", list(CONTENDERS))
def test_interleaved(workload, bench_report, benchmark_disabled):
    libs = {"tapegrad": tg}
    if torch is not None:
        libs["torch"] = torch
    ways = CONTENDERS[workload](libs, compiled=True)
    rounds = 1 if benchmark_disabled else ROUNDS[workload]
    med, rounds = B.time_contenders(ways, rounds, budget=0.0, block=BLOCK)
    assert set(med) == set(ways) and all(t > 0 for t in med.values())
    bench_report(f"interleaved, {LABELS[workload]}, median of {rounds} x {BLOCK} "
                 "calls: "
                 + ", ".join(f"{k} {v * 1e6:,.1f} us" for k, v in med.items()))
    for mine in ("tapegrad", "tapegrad replay"):
        if mine not in med:
            continue
        line = f"    {mine} / numpy = {med[mine] / med['numpy']:.3f}"
        if "torch" in med:
            line += f";  {mine} / torch = {med[mine] / med['torch']:.3f}"
        bench_report(line)
