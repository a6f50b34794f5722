"""Tensor factories and small-tensor reads at script sizes (factory45): the calls a script makes
every step -- zeros(3, 4), randn(shape, requires_grad=True), arange(n), tensor(2.5), full, eye,
linspace, the *_like -- and float(t), int(t), t.shape, t.item(), from_numpy.  At these sizes the
per-call overhead is the whole time: they cost 4-60 us where PyTorch takes 1-2 us, before the
compiled fast paths (tapegrad/_factories.pyx) and the leaner scalar reads.

Each form is one group with two members (kinds in the summary: total = tapegrad, torch =
PyTorch, one thread); each benchmark first checks tapegrad's result against PyTorch's (dtype and
shape; values where they are not random).  bench/test_interleaved.py's "factories" workload times
a mixed block of them round-robin against PyTorch, the steadier ratio on a loaded machine.

Before / after (tapegrad / PyTorch per-call time, one thread, interleaved timeit rounds on a
shared 2-core host; before: medians of a quiet run, after: minima of the rounds, the host being
loaded then):

  form                          before   after      form                        before   after
  zeros(3, 4)                     1.63    0.65      randn(3, 4)                   1.21    0.56
  zeros(3, 4, dtype=f64)          7.61    0.72      randn(3, 4, requires_grad)    5.48    0.64
  ones(3, 4, device='cpu')       10.21    0.60      rand(3, 4, dtype=f64)         6.53    0.68
  empty(3, 4)                     9.74    0.76      randint(0, 10, (3, 4))       13.15    0.50
  full((3, 4), 2.)                6.73    0.64      arange(10)                    9.57    0.50
  eye(3)                          4.54    1.06      arange(10, dtype=f32)         9.80    0.49
  linspace(0, 1, 5)              17.77    0.50      tensor(2.5)                   2.92    0.19
  tensor([1., 2.], dtype=f64)     3.46    0.44      ones_like / empty_like   5.78/6.24  0.80/0.82
  rand_like(x)                   13.23    0.80      full_like(x, 2.)              1.52    0.69
  float(t) / int(t)          2.45/2.37 1.45/1.39   t.shape                       1.86    1.45
  t.item() / bool(t)         1.58/1.52 0.86/0.88   t.to(same dtype)              1.68    0.58
  from_numpy(a)                   1.59    1.24      as_tensor([1., 2.])     1.03-6.0    0.19
  interleaved 'factories' block (13 factory calls and 2 scalar reads): 11.5x -> 0.47x
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

_ARRAY = np.ones((3, 4), np.float32)

# name: call(lib, x) with x a (3, 4) float32 tensor of ones; random results are checked for
# dtype and shape only (tapegrad's stream is its own).
CASES = {
    "zeros(3, 4)": lambda lib, x: lib.zeros(3, 4),
    "zeros((3, 4), dtype=float64)": lambda lib, x: lib.zeros((3, 4), dtype=lib.float64),
    "zeros(x.shape)": lambda lib, x: lib.zeros(x.shape),
    "ones(3, 4, device='cpu')": lambda lib, x: lib.ones(3, 4, device="cpu"),
    "ones(3, 4, requires_grad=True)": lambda lib, x: lib.ones(3, 4, requires_grad=True),
    "empty(3, 4)": lambda lib, x: lib.empty(3, 4),
    "full((3, 4), 2.0)": lambda lib, x: lib.full((3, 4), 2.0),
    "randn(3, 4)": lambda lib, x: lib.randn(3, 4),
    "randn(3, 4, requires_grad=True)": lambda lib, x: lib.randn(3, 4, requires_grad=True),
    "rand(3, 4, dtype=float64)": lambda lib, x: lib.rand(3, 4, dtype=lib.float64),
    "randint(0, 10, (3, 4))": lambda lib, x: lib.randint(0, 10, (3, 4)),
    "arange(10)": lambda lib, x: lib.arange(10),
    "arange(10, dtype=float32)": lambda lib, x: lib.arange(10, dtype=lib.float32),
    "linspace(0, 1, 5)": lambda lib, x: lib.linspace(0, 1, 5),
    "eye(3)": lambda lib, x: lib.eye(3),
    "tensor(2.5)": lambda lib, x: lib.tensor(2.5),
    "tensor([1., 2., 3.])": lambda lib, x: lib.tensor([1.0, 2.0, 3.0]),
    "tensor([1., 2.], dtype=float64)": lambda lib, x: lib.tensor([1.0, 2.0], dtype=lib.float64),
    "zeros_like(x)": lambda lib, x: lib.zeros_like(x),
    "empty_like(x)": lambda lib, x: lib.empty_like(x),
    "full_like(x, 2.0)": lambda lib, x: lib.full_like(x, 2.0),
    "rand_like(x)": lambda lib, x: lib.rand_like(x),
    "randn_like(x)": lambda lib, x: lib.randn_like(x),
    "from_numpy(a)": lambda lib, x: lib.from_numpy(_ARRAY),
    "float(x[0, 0])": lambda lib, x: float(x[0, 0]),
    "int(x[0, 0])": lambda lib, x: int(x[0, 0]),
    "x.shape": lambda lib, x: x.shape,
}
_RANDOM = ("randn", "rand(", "randint", "rand_like", "randn_like", "empty")


def describe(benchmark, workload, kind):
    benchmark.group = f"factories: {workload}"
    benchmark.extra_info.update(kind=kind, workload=workload)


def _check(got, want, workload):
    if isinstance(want, tuple):         # (a shape)
        assert tuple(got) == tuple(want)
    elif isinstance(want, (int, float)):
        assert type(got) is type(want) and got == want
    else:
        assert str(got.dtype) == str(want.dtype) and tuple(got.shape) == tuple(want.shape)
        assert got.requires_grad == want.requires_grad
        if not any(r in workload for r in _RANDOM):
            np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


@pytest.mark.parametrize("workload", CASES)
def test_factory(benchmark, workload, torch):
    call = CASES[workload]
    describe(benchmark, workload, "total")
    x, tx = tg.ones(3, 4), torch.ones(3, 4)
    _check(call(tg, x), call(torch, tx), workload)
    benchmark(call, tg, x)


@pytest.mark.parametrize("workload", CASES)
def test_factory_torch(benchmark, workload, torch):
    describe(benchmark, workload, "torch")
    benchmark(CASES[workload], torch, torch.ones(3, 4))
