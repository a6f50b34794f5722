"""torch.mps and torch.xpu as PyTorch's CPU build has them: device-choosing code
(`"mps" if torch.mps.is_available() else "cpu"`, `torch.xpu.manual_seed_all(seed)`) runs, and a
call that needs the device raises PyTorch's exception with its text."""
from __future__ import annotations

import pytest

import tapegrad as tg

CALLS = {
    "mps": ["is_available()", "device_count()", "manual_seed(0)", "manual_seed('a')", "seed()",
            "get_rng_state()", "set_rng_state(T.ones(8, dtype=T.uint8))", "empty_cache()",
            "synchronize()", "set_per_process_memory_fraction(0.5)",
            "current_allocated_memory()", "driver_allocated_memory()",
            "recommended_max_memory()"],
    "xpu": ["is_available()", "is_initialized()", "device_count()", "manual_seed(0)",
            "manual_seed('a')", "manual_seed_all(3)", "seed()", "seed_all()", "empty_cache()",
            "memory_allocated()", "max_memory_allocated()", "memory_reserved()",
            "max_memory_reserved()", "is_bf16_supported()", "is_tf32_supported()",
            "get_arch_list()", "get_rng_state_all()", "set_rng_state(T.ones(8, dtype=T.uint8))",
            "init()", "synchronize()", "current_device()", "set_device(0)",
            "get_device_name(0)", "get_device_properties(0)", "get_device_capability()",
            "initial_seed()", "get_rng_state()", "mem_get_info()"],
}


def outcome(T, backend, call):
    try:
        return "value", repr(eval(f"T.{backend}.{call}", {"T": T}))
    except Exception as e:                  # noqa: BLE001  (the exception is the outcome)
        return type(e).__name__, str(e)


@pytest.mark.parametrize("backend, call", [(b, c) for b, cs in CALLS.items() for c in cs])
def test_call_matches_torch(torch, backend, call):
    assert outcome(tg, backend, call) == outcome(torch, backend, call)


def test_device_choice_falls_back_to_cpu():
    device = ("cuda" if tg.cuda.is_available() else "mps" if tg.mps.is_available()
              else "xpu" if tg.xpu.is_available() else "cpu")
    assert tg.ones(2, device=device).device.type == "cpu"


def test_xpu_device_context_refuses_on_entry(torch):
    for T in (tg, torch):
        ctx = T.xpu.device(0)
        with pytest.raises(NotImplementedError, match="compiled without XPU support"):
            with ctx:
                pass


def test_submodules_import_as_torch_names():
    import importlib
    assert importlib.import_module("tapegrad.mps") is tg.mps
    assert importlib.import_module("tapegrad.xpu") is tg.xpu
