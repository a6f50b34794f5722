"""Row broadcasts, the pattern of every hand-written layer: eager, compiled, numpy, PyTorch.

Workloads (one group each; kinds in the summary: numpy = hand-written forward + backward,
total = tapegrad eager, replay = tapegrad.compile replayed, torch = PyTorch eager):

  bias row      (x + b).backward(g) for x (16, 8) and a bias row b (8,), float32: the C binary
                kernel row by row forward, b's gradient a column sum
  per-row div   (x / c).backward(g) for x (16, 8) and one value per row c (16, 1), float32
  tiny mlp      mean((tanh(x @ w1 + b1) @ w2 + b2) ** 2), x (16, 8), w1 (8, 16), w2 (16, 4),
                forward + backward of all four parameters, float32: per-op overhead dominates

Each benchmark first checks tapegrad's values and gradients against the numpy reference.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(31)
X = RNG.standard_normal((16, 8)).astype(np.float32)
BIAS = RNG.standard_normal(8).astype(np.float32)
PER_ROW = (RNG.random((16, 1)) + 0.5).astype(np.float32)
G = RNG.standard_normal((16, 8)).astype(np.float32)
PARAMS = [RNG.standard_normal(s).astype(np.float32) * 0.5 for s in [(8, 16), (16,), (16, 4), (4,)]]


def describe(benchmark, workload, kind):
    benchmark.group = f"broadcast: {workload}"
    benchmark.extra_info.update(kind=kind, workload=workload)


# -- bias row and per-row divide ------------------------------------------------------------------

def numpy_bias(x, b, g):
    return x + b, g, g.sum(0)


def numpy_per_row(x, c, g):
    return x / c, g / c, (-g * x / (c * c)).sum(1, keepdims=True)


def lib_binary(lib, op, xv, pv, gv):
    x = lib.tensor(xv, requires_grad=True)
    p = lib.tensor(pv, requires_grad=True)
    g = lib.from_numpy(gv)

    def step():
        x.grad = None
        p.grad = None
        y = op(x, p)
        y.backward(g)
        return y, x.grad, p.grad
    return step


CASES = {"bias row": (lambda x, p: x + p, numpy_bias, BIAS),
         "per-row div": (lambda x, p: x / p, numpy_per_row, PER_ROW)}


@pytest.mark.parametrize("workload", CASES)
@pytest.mark.parametrize("kind", ["numpy", "total"])
def test_binary_broadcast(benchmark, workload, kind):
    op, reference, part = CASES[workload]
    describe(benchmark, workload, kind)
    want = reference(X, part, G)
    if kind == "numpy":
        benchmark(reference, X, part, G)
        return
    step = lib_binary(tg, op, X, part, G)
    for got, w in zip(step(), want):
        np.testing.assert_allclose(got.detach().numpy(), w, rtol=1e-5, atol=1e-6)
    benchmark(step)


@pytest.mark.parametrize("workload", CASES)
def test_binary_broadcast_torch(benchmark, workload, torch):
    op, _, part = CASES[workload]
    describe(benchmark, workload, "torch")
    benchmark(lib_binary(torch, op, X, part, G))


# -- tiny MLP -------------------------------------------------------------------------------------

def mlp(x, w1, b1, w2, b2):
    return ((x @ w1 + b1).tanh() @ w2 + b2).pow(2).mean()


def numpy_mlp(x, w1, b1, w2, b2):
    """Loss and the four parameters' gradients, by hand."""
    h = np.tanh(x @ w1 + b1)
    y = h @ w2 + b2
    loss = np.mean(y * y)
    dy = y * np.float32(2.0 / y.size)
    dz = (dy @ w2.T) * (1 - h * h)
    return loss, x.T @ dz, dz.sum(0), h.T @ dy, dy.sum(0)


def lib_mlp_step(lib, fn):
    x = lib.from_numpy(X)
    params = [lib.tensor(p, requires_grad=True) for p in PARAMS]

    def step():
        for p in params:
            p.grad = None
        loss = fn(x, *params)
        loss.backward()
        return (loss, *[p.grad for p in params])
    return step


@pytest.mark.parametrize("kind", ["numpy", "total", "replay"])
def test_tiny_mlp(benchmark, kind):
    describe(benchmark, "tiny mlp", kind)
    want = numpy_mlp(X, *PARAMS)
    if kind == "numpy":
        benchmark(numpy_mlp, X, *PARAMS)
        return
    fn = tg.compile(mlp) if kind == "replay" else mlp
    step = lib_mlp_step(tg, fn)
    for _ in range(2):                                  # a replay from the second call on
        got = step()
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w, rtol=1e-4, atol=1e-6)
    if kind == "replay":
        assert fn.explain().startswith("replayed") and fn.stats["replays"] == 1
    benchmark(step)


def test_tiny_mlp_torch(benchmark, torch):
    describe(benchmark, "tiny mlp", "torch")
    benchmark(lib_mlp_step(torch, mlp))
