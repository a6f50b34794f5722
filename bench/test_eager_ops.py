"""Eager ops that small training and data scripts call every batch, at ordinary sizes (session 33,
perf25): flips and rolls for augmentation, reflect padding, running sums and products, sampling,
label bookkeeping (unique, one_hot), embedding lookups, stacking a batch, masks (triu / tril).
Several were composites of slow numpy paths (a gather for flip and roll, np.take for the pads,
numpy's strided accumulate for cumsum, np.where over an index mask for triu / tril): 3-19x
PyTorch's time.

Workloads (one group each, float32 unless said, forward only, no grad; kinds in the summary:
total = tapegrad, torch = PyTorch):

  flip (64,1000) dim 1         roll (64,1000) 3 dim 1       pad (8,3,32,32) reflect 2
  cumsum (64,1000) dim 1       cumprod (64,100) dim 1       cumsum (1000,)
  randn (64,100)               unique 1000 int64 labels     embedding (64,32) ids, 100x64
  stack 32 x (10,)             triu (64,64)                 tril (256,256)
  one_hot 4096 labels, 100 classes

Each benchmark first checks tapegrad's result against PyTorch's on the same input (randn: the
shape and dtype; its values come from tapegrad's own generator stream).
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(33)


def _f32(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, shape).astype(np.float32)


_IDS = RNG.integers(0, 100, (64, 32))
_TABLE = _f32(100, 64)
_ROWS = [_f32(10) for _ in range(32)]

# name: (arrays, call(lib, F, *tensors))
CASES = {
    "flip (64,1000) dim 1": ((_f32(64, 1000),), lambda lib, F, x: lib.flip(x, (1,))),
    "roll (64,1000) 3 dim 1": ((_f32(64, 1000),), lambda lib, F, x: lib.roll(x, 3, 1)),
    "pad (8,3,32,32) reflect": ((_f32(8, 3, 32, 32),),
                                lambda lib, F, x: F.pad(x, (2, 2, 2, 2), mode="reflect")),
    "cumsum (64,1000) dim 1": ((_f32(64, 1000),), lambda lib, F, x: lib.cumsum(x, 1)),
    "cumprod (64,100) dim 1": ((_f32(64, 100, low=0.9, high=1.1),),
                               lambda lib, F, x: lib.cumprod(x, 1)),
    "cumsum (1000,)": ((_f32(1000),), lambda lib, F, x: lib.cumsum(x, 0)),
    "randn (64,100)": ((), lambda lib, F: lib.randn(64, 100)),
    "unique 1000 labels": ((RNG.integers(0, 100, 1000),), lambda lib, F, x: lib.unique(x)),
    "embedding (64,32) of 100x64": ((_IDS, _TABLE), lambda lib, F, i, w: F.embedding(i, w)),
    "stack 32 x (10,)": (tuple(_ROWS), lambda lib, F, *xs: lib.stack(xs)),
    "triu (64,64)": ((_f32(64, 64),), lambda lib, F, x: lib.triu(x)),
    "tril (256,256)": ((_f32(256, 256),), lambda lib, F, x: lib.tril(x)),
    "one_hot 4096 of 100": ((RNG.integers(0, 100, 4096),),
                            lambda lib, F, x: F.one_hot(x, 100)),
}


def describe(benchmark, workload, kind):
    benchmark.group = f"eager ops: {workload}"
    benchmark.extra_info.update(kind=kind, workload=workload)


@pytest.mark.parametrize("workload", CASES)
def test_eager_op(benchmark, workload, torch):
    import tapegrad.nn.functional as TF
    import torch.nn.functional as F
    arrays, call = CASES[workload]
    describe(benchmark, workload, "total")
    ours = [tg.from_numpy(a) for a in arrays]
    theirs = [torch.from_numpy(a) for a in arrays]
    got, want = call(tg, TF, *ours), call(torch, F, *theirs)
    assert tuple(got.shape) == tuple(want.shape) and str(got.dtype) == str(want.dtype)
    if arrays:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    benchmark(call, tg, TF, *ours)


@pytest.mark.parametrize("workload", CASES)
def test_eager_op_torch(benchmark, workload, torch):
    import torch.nn.functional as F
    arrays, call = CASES[workload]
    describe(benchmark, workload, "torch")
    benchmark(call, torch, F, *[torch.from_numpy(a) for a in arrays])
