"""Selections along a dim (topk, kthvalue, median): the hot path of accuracy, beam search and
top-k sampling. Each is a partition in PyTorch (std::partial_sort / nth_element), so a full sort
of every row shows up as a large ratio here (topk was 27-48x PyTorch with one).

Workloads (one group each, float32, forward only, no grad; kinds in the summary: numpy =
np.argpartition plus a sort of the k picked, the floor; total = tapegrad; torch = PyTorch):

  topk (64,1000) k=5      a batch of class scores, top-5 accuracy
  topk (1,50000) k=10     one vocabulary row, top-k sampling
  topk (256,10) k=3       many short rows: per-call overhead dominates
  topk (8,100000) k=100   beam search over a large vocabulary
  kthvalue (64,1000) k=3  and  median (64,1000) dim=1

Each benchmark first checks tapegrad's values and indices against a stable-order reference
(numpy's stable argsort: these rows have no ties, so PyTorch's answer is the same).
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(24)


def _rows(shape):
    # distinct values (a permutation), so the answer does not depend on the order among ties
    return (RNG.permutation(int(np.prod(shape))).reshape(shape) / 7.0).astype(np.float32)


CASES = {
    "topk (64,1000) k=5": (_rows((64, 1000)), lambda lib, x: lib.topk(x, 5, dim=1), 5),
    "topk (1,50000) k=10": (_rows((1, 50000)), lambda lib, x: lib.topk(x, 10, dim=1), 10),
    "topk (256,10) k=3": (_rows((256, 10)), lambda lib, x: lib.topk(x, 3, dim=1), 3),
    "topk (8,100000) k=100": (_rows((8, 100000)), lambda lib, x: lib.topk(x, 100, dim=1), 100),
    "kthvalue (64,1000) k=3": (_rows((64, 1000)), lambda lib, x: lib.kthvalue(x, 3, 1), -3),
    "median (64,1000)": (_rows((64, 1000)), lambda lib, x: lib.median(x, 1), 0),
}


def numpy_select(a, k):
    """k > 0: the k largest of each row, largest first; k < 0: the |k|-th smallest; 0: the
    lower median."""
    n = a.shape[1]
    if k > 0:
        part = np.argpartition(a, n - k, axis=1)[:, n - k:]
        order = np.argsort(-np.take_along_axis(a, part, 1), axis=1)
        index = np.take_along_axis(part, order, 1)
        return np.take_along_axis(a, index, 1), index
    rank = -k - 1 if k < 0 else (n - 1) // 2
    index = np.argpartition(a, rank, axis=1)[:, rank]
    return a[np.arange(len(a)), index], index


def describe(benchmark, workload, kind):
    benchmark.group = f"selection: {workload}"
    benchmark.extra_info.update(kind=kind, workload=workload)


@pytest.mark.parametrize("workload", CASES)
@pytest.mark.parametrize("kind", ["numpy", "total"])
def test_selection(benchmark, workload, kind):
    a, call, k = CASES[workload]
    describe(benchmark, workload, kind)
    if kind == "numpy":
        benchmark(numpy_select, a, k)
        return
    x = tg.from_numpy(a)
    values, indices = call(tg, x)
    want_values, want_indices = numpy_select(a, k)
    np.testing.assert_array_equal(values.numpy(), want_values)
    np.testing.assert_array_equal(indices.numpy(), want_indices)
    benchmark(call, tg, x)


@pytest.mark.parametrize("workload", CASES)
def test_selection_torch(benchmark, workload, torch):
    a, call, _ = CASES[workload]
    describe(benchmark, workload, "torch")
    benchmark(call, torch, torch.from_numpy(a))
