"""Complex ops at small sizes: the per-op cost of tapegrad's complex path (compiled records,
numpy per op) beside its real path and PyTorch's.

test_complex_chain_total: a chain (size 10, 60 ops: mul, add, exp, sin, div, sqrt ...) runs
forward + backward in complex128 and in float64, in tapegrad and in PyTorch; each benchmark checks
once, untimed, that its gradient equals PyTorch's.  Compare the medians' ratios (tapegrad / torch)
per dtype: conftest's summary prints them per workload.

test_complex_per_op_interleaved: add, mul, exp, abs, sum and matmul one by one at sizes 1-1000,
timed round-robin against PyTorch (the ratios are printed in the summary).
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


# -- per op, interleaved --------------------------------------------------------------------------
# Each op's cost alone at sizes 1-1000, forward and forward + backward: tapegrad complex128
# against PyTorch complex128 and tapegrad float64, timed round-robin in one process
# (time_contenders, CPU time of this thread) so that the machine's load hits all alike.  A call
# runs the op OP_CALLS times on leaves that require grad; its backward sums the results first
# (sum, then abs for a complex result), so the backward figure carries those few ops too.

OP_CALLS = 20
PER_OP = {
    "add": lambda x, w: x + w,
    "mul": lambda x, w: x * w,
    "exp": lambda x, w: x.exp(),
    "abs": lambda x, w: x.abs(),
    "sum": lambda x, w: x.sum(),
    "matmul": lambda x, w: x @ w,
}
PER_OP_SIZES = (1, 10, 100, 1000)


def _op_inputs(lib, dtype, size, op):
    rng = np.random.default_rng(0)
    shape = (int(round(size ** 0.5)),) * 2 if op == "matmul" else (size,)   # size elements
    x = rng.uniform(0.1, 1.0, shape)
    w = rng.uniform(0.1, 1.0, shape)
    if dtype == "complex128":
        x = x + 1j * rng.uniform(-0.5, 0.5, shape)
        w = w + 1j * rng.uniform(-0.5, 0.5, shape)
    return lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)


def _op_calls(op, backward):
    fn = PER_OP[op]

    def run(x, w):
        ys = [fn(x, w) for _ in range(OP_CALLS)]
        if backward:
            total = ys[0]
            for y in ys[1:]:
                total = total + y
            (total.abs().sum() if total.is_complex() else total.sum()).backward()
    return run


@pytest.mark.parametrize("op", sorted(PER_OP))
def test_complex_per_op_interleaved(op, bench_report, benchmark_disabled):
    import time

    from tapegrad import bench as B
    torch = pytest.importorskip("torch")
    libs = {"tapegrad complex128": (tg, "complex128"), "torch complex128": (torch, "complex128"),
            "tapegrad float64": (tg, "float64")}
    for backward in (False, True):
        for size in PER_OP_SIZES:
            ways = {name: B.Contender(
                        (lambda lib=lib, dt=dt: _op_inputs(lib, dt, size, op)),
                        _op_calls(op, backward))
                    for name, (lib, dt) in libs.items()}
            med, _ = B.time_contenders(ways, 1 if benchmark_disabled else 30, budget=0.0,
                                       clock=time.thread_time)
            per_op = {k: v / OP_CALLS * 1e6 for k, v in med.items()}
            bench_report(f"complex {op:6s} size {size:4d} {'fwd+bwd' if backward else 'fwd    '}: "
                         + ", ".join(f"{k} {v:.1f} us" for k, v in per_op.items())
                         + f";  tapegrad / torch = "
                         f"{per_op['tapegrad complex128'] / per_op['torch complex128']:.2f}")
