"""The classifier's loss: cross_entropy forward + backward on logits of common shapes, float32.

Workloads (one group each; kinds: numpy = hand-written log-softmax, NLL and gradient,
total = tapegrad eager, torch = PyTorch eager):

  batch 64 x 1000 classes   an ImageNet-sized head
  batch 8192 x 65 classes   a character language model's logits (batch 64 x context 128)
  batch 64 x 10 classes     MNIST-sized: per-op overhead dominates

Each benchmark first checks tapegrad's loss and gradient against the numpy reference.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(32)
SHAPES = {"64x1000": (64, 1000), "8192x65": (8192, 65), "64x10": (64, 10)}
DATA = {name: (RNG.standard_normal(shape).astype(np.float32) * 2,
               RNG.integers(0, shape[1], shape[0]))
        for name, shape in SHAPES.items()}


def describe(benchmark, workload, kind):
    benchmark.group = f"cross_entropy: {workload}"
    benchmark.extra_info.update(kind=kind, workload=workload)


def numpy_cross_entropy(z, y):
    """Mean NLL of log_softmax(z) and its gradient with respect to z."""
    shifted = z - z.max(1, keepdims=True)
    e = np.exp(shifted)
    total = e.sum(1, keepdims=True)
    rows = np.arange(z.shape[0])
    loss = (np.log(total[:, 0]) - shifted[rows, y]).mean()
    dz = e / total
    dz[rows, y] -= 1
    return loss, dz / np.float32(z.shape[0])


def lib_step(lib, z, y):
    logits = lib.tensor(z, requires_grad=True)
    target = lib.tensor(y)

    def step():
        logits.grad = None
        loss = lib.nn.functional.cross_entropy(logits, target)
        loss.backward()
        return loss, logits.grad
    return step


@pytest.mark.parametrize("workload", list(SHAPES))
@pytest.mark.parametrize("kind", ["numpy", "total"])
def test_cross_entropy(benchmark, kind, workload):
    describe(benchmark, workload, kind)
    z, y = DATA[workload]
    if kind == "numpy":
        benchmark(numpy_cross_entropy, z, y)
        return
    step = lib_step(tg, z, y)
    loss, grad = step()
    want_loss, want_grad = numpy_cross_entropy(z, y)
    np.testing.assert_allclose(loss.item(), want_loss, rtol=1e-5)
    np.testing.assert_allclose(grad.numpy(), want_grad, rtol=1e-4, atol=1e-7)
    benchmark(step)


@pytest.mark.parametrize("workload", list(SHAPES))
def test_cross_entropy_torch(benchmark, torch, workload):
    describe(benchmark, workload, "torch")
    benchmark(lib_step(torch, *DATA[workload]))
