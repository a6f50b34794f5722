"""Faults found by held-out proxy scripts (session proxyn), each checked against PyTorch.

torch.cuda on a machine without CUDA: JarvisLee0423/Pytorch_Practice's TorchNN.py tests
`if torch.cuda.is_available:` (never called, so always true) and then calls
`torch.cuda.set_device(0)`.  PyTorch's CPU build fails there with an AttributeError (its
`torch._C._cuda_setDevice` binding is absent), not the AssertionError of the functions that
initialise CUDA first; the memory-statistics functions have their own CPU-build answers.
"""
from __future__ import annotations

import warnings

import pytest

import tapegrad as tg

CUDA_CALLS = [
    "set_device(0)", "set_device(1)", "set_device(-1)", "set_device('cuda:0')",
    "set_device(T.device('cuda', 1))", "set_device('cuda')", "set_device('cpu')",
    "set_device(None)", "set_device(1.5)",
    "reset_peak_memory_stats()", "reset_peak_memory_stats(0)", "reset_peak_memory_stats('cpu')",
    "reset_accumulated_memory_stats()", "reset_max_memory_allocated()",
    "reset_max_memory_cached('cuda:0')", "memory_snapshot()",
    "memory_stats()", "memory_stats('cpu')", "memory_stats_as_nested_dict()",
    "memory_summary()", "memory_summary(0, abbreviated=True)", "memory_summary('cpu')",
    "memory_cached()", "max_memory_cached()", "memory_allocated('cpu')",
    "set_per_process_memory_fraction(0.5)", "list_gpu_processes()", "utilization()",
]


def outcome(T, call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ("value", repr(eval(f"T.cuda.{call}", {"T": T})))
        except Exception as e:              # noqa: BLE001  (the exception is the outcome)
            result = (type(e).__name__, str(e))
    return result, [(w.category.__name__, str(w.message)) for w in caught]


@pytest.mark.parametrize("call", CUDA_CALLS)
def test_cuda_call_matches_torch_cpu_build(torch, call):
    if torch.cuda.is_available():
        pytest.skip("the oracle must be a PyTorch build (or machine) without CUDA")
    assert outcome(tg, call) == outcome(torch, call)


def test_unchecked_is_available_then_set_device_raises_attribute_error():
    # The script's own guard: a script may catch exactly this type.
    with pytest.raises(AttributeError, match="_cuda_setDevice"):
        if tg.cuda.is_available:
            tg.cuda.set_device(0)
