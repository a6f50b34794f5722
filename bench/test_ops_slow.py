"""Ops that scripts call and that were far slower than PyTorch (perf46): kthvalue on rows with
ties, scatter_add / index_add / index_put(accumulate=True), segment_reduce, bucketize /
searchsorted; (perf47) grid_sample (forward, and backward to the input and the grid),
histogram, diag / diag_embed, unfold().contiguous(), stack, one_hot, affine_grid, interpolate,
F.unfold, cdist, a small scatter_add; at the sizes scripts use.  The workloads are tapegrad.bench.SLOW_OP_CASES (the
interleaved ratios against PyTorch are in test_interleaved.py, kind "slow: ...").

Kinds in the summary: numpy = numpy's nearest call (np.partition, np.add.at, np.*.reduceat,
np.searchsorted: the floor, not always the same answer among ties), total = tapegrad, torch =
PyTorch.  Cases marked "+ backward" time the forward and the backward of its sum.  Each
benchmark first checks tapegrad's answer against PyTorch's (values, and indices where the op
returns them).
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import bench as B

CASES = list(B.SLOW_OP_CASES)


def describe(benchmark, workload, kind):
    benchmark.group = f"slow ops: {workload}"
    benchmark.extra_info.update(kind=kind, workload=workload)


def _answers(result):
    if isinstance(result, tuple):
        return [r.detach().numpy() for r in result]
    return [] if result is None else [result.detach().numpy()]


@pytest.mark.parametrize("workload", CASES)
@pytest.mark.parametrize("kind", ["numpy", "total"])
def test_slow_op(benchmark, workload, kind):
    case = B.SLOW_OP_CASES[workload]
    describe(benchmark, workload, kind)
    if kind == "numpy":
        arrays = case.arrays()
        benchmark(case.numpy, *arrays)
        return
    benchmark.pedantic(case.call, setup=lambda: (B.slow_op_tensors(case, tg), {}),
                       rounds=20 if "1e6" in workload else 100, warmup_rounds=1)


@pytest.mark.parametrize("workload", CASES)
def test_slow_op_torch(benchmark, workload, torch):
    case = B.SLOW_OP_CASES[workload]
    if not case.grad:       # tapegrad's answer is PyTorch's (the check, untimed)
        mine = _answers(case.call(*B.slow_op_tensors(case, tg)))
        theirs = _answers(case.call(*B.slow_op_tensors(case, torch)))
        for m, t in zip(mine, theirs):
            np.testing.assert_allclose(m, t, rtol=1e-5, atol=1e-4)
    describe(benchmark, workload, "torch")
    benchmark.pedantic(case.call, setup=lambda: (B.slow_op_tensors(case, torch), {}),
                       rounds=20 if "1e6" in workload else 100, warmup_rounds=1)
