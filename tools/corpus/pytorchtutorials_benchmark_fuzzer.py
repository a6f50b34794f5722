"""In the style of the pytorch/tutorials recipe benchmark.py, section "Generating inputs with Fuzzer"
(written for this corpus): torch.utils.benchmark.Fuzzer with log-uniform, uniform and strict
FuzzedParameters, FuzzedTensors with steps, dim_parameter, element and allocation limits, integer
dtypes and forced discontiguous layouts, constraints, rejection_rate; each fuzzed input checked
on two batched-dot implementations and timed with Timer.blocked_autorange (only the
Measurement's labels and counts are printed, never a time)."""
import torch
import torch.utils.benchmark as benchmark
from torch.utils.benchmark import Fuzzer, FuzzedParameter, FuzzedTensor, ParameterAlias


def dot_mul_sum(a, b):
    return a.mul(b).sum(-1)


def dot_bmm(a, b):
    a = a.reshape(-1, 1, a.shape[-1])
    b = b.reshape(-1, b.shape[-1], 1)
    return torch.bmm(a, b).flatten(-3)


fuzzer = Fuzzer(
    parameters=[
        FuzzedParameter("rows", minval=1, maxval=4096, distribution="loguniform"),
        FuzzedParameter("cols", minval=2, maxval=512, distribution="loguniform"),
    ],
    tensors=[FuzzedTensor("x", size=("rows", "cols"), min_elements=64, max_elements=20000,
                          probability_contiguous=0.5)],
    seed=42,
)
measurements = []
for tensors, props, params in fuzzer.take(8):
    x = tensors["x"]
    layout = "" if props["x"]["is_contiguous"] else "(discontiguous)"
    label = f"{params['rows']:<5} x {params['cols']:<4} {layout}"
    same = torch.allclose(dot_mul_sum(x, x), dot_bmm(x, x), rtol=1e-4, atol=1e-4)
    print(label, tuple(x.shape), x.stride(), props["x"]["numel"],
          [int(i) for i in props["x"]["order"]], same)
    m = benchmark.Timer(stmt="dot_mul_sum(x, x)", globals={"x": x, "dot_mul_sum": dot_mul_sum},
                        label="Batched dot", sub_label=label,
                        description="mul/sum").blocked_autorange(min_run_time=0.005)
    measurements.append(m)
print(f"rejection rate {fuzzer.rejection_rate:.4f}")
print([(m.label, m.description, m.task_spec.sub_label) for m in measurements[:2]])
print(all(len(m.times) >= 1 and m.number_per_run >= 1 for m in measurements))

strided = Fuzzer(
    parameters=[
        FuzzedParameter("n", 2, 600, distribution="uniform"),
        FuzzedParameter("ndim", 1, 3, distribution="uniform", strict=True),
        FuzzedParameter("gain", 0.25, 4.0, distribution="uniform"),
    ],
    tensors=[
        FuzzedTensor("w", size=("n", 4, 3), steps=(2, 1, 3), dim_parameter="ndim",
                     max_allocation_bytes=40000, dtype=torch.float64),
        FuzzedTensor("idx", size=("n",), dtype=torch.int64, probability_contiguous=0.0),
    ],
    constraints=[lambda p: p["n"] % 4 != 1],
    seed=2024,
)
for tensors, props, params in strided.take(6):
    w, idx = tensors["w"], tensors["idx"]
    print(params["n"], params["ndim"], f"{params['gain']:.5f}", tuple(w.shape), w.stride(),
          w.dtype, props["w"]["steps"], props["w"]["is_contiguous"], idx.dtype,
          bool(((idx >= 1) & (idx < 127)).all()), props["idx"]["dtype"])
print(f"rejection rate {strided.rejection_rate:.4f}")

for bad in (lambda: FuzzedParameter("k", 1, 8, distribution="gaussian"),
            lambda: Fuzzer(parameters=[FuzzedParameter("k", 1, 8, distribution="uniform")],
                           tensors=[FuzzedTensor("k", size=(3,))]),
            lambda: next(Fuzzer(parameters=[FuzzedParameter("k", 1, 2, distribution="uniform")],
                                tensors=[FuzzedTensor("t", size=("k", "k"), min_elements=9)],
                                seed=0).take(1))):
    try:
        bad()
    except (AssertionError, ValueError) as e:
        print(type(e).__name__, e)
print(ParameterAlias("rows"))
