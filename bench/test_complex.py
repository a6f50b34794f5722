"""Complex elementwise ops at small sizes: the per-op cost of tapegrad's complex path (numpy per
op, recorded as one node each) beside its real path and PyTorch's, for the same chain.

The chain (size 10, 60 ops: mul, add, exp, sin, div, sqrt ...) runs forward + backward in
complex128 and in float64, in tapegrad and in PyTorch; each benchmark checks once, untimed, that
its gradient equals PyTorch's.  Compare the medians' ratios (tapegrad / torch) per dtype:
conftest's summary prints them per workload.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

SIZE = 10
CYCLES = 10                                  # 6 ops a cycle
N_OPS = 6 * CYCLES


def chain(lib, x, w):
    for _ in range(CYCLES):
        x = (x * w + 0.5).sin() / (x.exp() + 2.0)
        x = x.sqrt()
    return x


def _inputs(lib, dtype):
    rng = np.random.default_rng(0)
    x = rng.uniform(0.1, 1.0, SIZE)
    w = rng.uniform(0.1, 1.0, SIZE)
    if dtype == "complex128":
        x = x + 1j * rng.uniform(-0.5, 0.5, SIZE)
        w = w + 1j * rng.uniform(-0.5, 0.5, SIZE)
    return lib.tensor(x, requires_grad=True), lib.tensor(w)


def _step(lib, x, w):
    y = chain(lib, x, w)
    (y.abs() if y.is_complex() else y).sum().backward()
    return x.grad


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("lib_name", ["tapegrad", "torch"])
def test_complex_chain_total(benchmark, lib_name, dtype):
    lib = tg if lib_name == "tapegrad" else pytest.importorskip("torch")
    benchmark.group = f"chain size={SIZE} x{N_OPS} ops {dtype}"
    benchmark.extra_info.update(kind="total" if lib is tg else "torch",
                                workload=f"complex-chain-{dtype}", size=SIZE, n_ops=N_OPS,
                                dtype=dtype, method=f"{lib_name} forward + backward")

    def setup():
        return _inputs(lib, dtype), {}

    grad = benchmark.pedantic(lambda x, w: _step(lib, x, w), setup=setup, rounds=50,
                              warmup_rounds=3)
    if lib is tg:
        torch = pytest.importorskip("torch")
        expected = _step(torch, *_inputs(torch, dtype))
        np.testing.assert_allclose(grad.resolve_conj().numpy(),
                                   expected.resolve_conj().numpy(), rtol=1e-9, atol=1e-12)
