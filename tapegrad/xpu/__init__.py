"""tapegrad.xpu: the torch.xpu API of a PyTorch build without Intel GPU (XPU) support.

As tapegrad.cuda does for CUDA: probing, seeding, tidying and the memory counters answer or do
nothing as in PyTorch's CPU build (they are CUDA's answers, shared from tapegrad.cuda); the calls
that need a device raise PyTorch's `AssertionError: Torch not compiled with XPU enabled`.
"""
from __future__ import annotations as _annotations

from ..cuda import (device_count, empty_cache, get_arch_list, is_bf16_supported,  # noqa: F401
                    is_initialized, manual_seed, manual_seed_all, max_memory_allocated,
                    max_memory_reserved, memory_allocated, memory_reserved, seed, seed_all)

__all__ = ["current_device", "device", "device_count", "empty_cache", "get_arch_list",
           "get_device_capability", "get_device_name", "get_device_properties", "get_rng_state",
           "get_rng_state_all", "init", "initial_seed", "is_available", "is_bf16_supported",
           "is_initialized", "is_tf32_supported", "manual_seed", "manual_seed_all",
           "max_memory_allocated", "max_memory_reserved", "mem_get_info", "memory_allocated",
           "memory_reserved", "seed", "seed_all", "set_device", "set_rng_state",
           "set_rng_state_all", "synchronize"]

_NO_XPU = "Torch not compiled with XPU enabled"


def _no_xpu():
    raise AssertionError(_NO_XPU)


def is_available() -> bool:
    """Always False: tapegrad runs on the CPU only, as a PyTorch build without XPU."""
    return False


def is_tf32_supported() -> bool:
    """Always False: no XPU device."""
    return False


def get_rng_state_all() -> list:
    """Always ``[]``: one state per XPU device, and there are none."""
    return []


def set_rng_state(new_state, device="xpu") -> None:
    """Setting an (absent) XPU generator's state: a no-op, as PyTorch queues it for a lazy init
    that never comes."""
    return None


def set_rng_state_all(new_states) -> None:
    """A no-op: there are no XPU generators."""
    return None


# Everything below needs an XPU device.
def init() -> None:
    """Raise PyTorch's ``AssertionError: Torch not compiled with XPU enabled``."""
    _no_xpu()


def synchronize(device=None) -> None:
    """Raise PyTorch's ``AssertionError: Torch not compiled with XPU enabled``."""
    _no_xpu()


def current_device() -> int:
    """Raise PyTorch's ``AssertionError: Torch not compiled with XPU enabled``."""
    _no_xpu()


def set_device(device) -> None:
    """Raise PyTorch's ``AssertionError: Torch not compiled with XPU enabled``."""
    _no_xpu()


def get_device_name(device=None) -> str:
    """Raise PyTorch's ``AssertionError: Torch not compiled with XPU enabled``."""
    _no_xpu()


def get_device_properties(device=None):
    """Raise PyTorch's ``AssertionError: Torch not compiled with XPU enabled``."""
    _no_xpu()


def get_device_capability(device=None):
    """Raise PyTorch's ``AssertionError: Torch not compiled with XPU enabled``."""
    _no_xpu()


def initial_seed() -> int:
    """Raise PyTorch's ``AssertionError: Torch not compiled with XPU enabled``."""
    _no_xpu()


def get_rng_state(device="xpu"):
    """Raise PyTorch's ``AssertionError: Torch not compiled with XPU enabled``."""
    _no_xpu()


def mem_get_info(device=None):
    """Raise PyTorch's ``AssertionError: Torch not compiled with XPU enabled``."""
    _no_xpu()


class device:
    """Context manager that would select an XPU device: constructing it is allowed, entering it
    raises PyTorch's NotImplementedError (no XPU support compiled in)."""

    def __init__(self, device) -> None:
        self.idx = device

    def __enter__(self):
        raise NotImplementedError("PyTorch was compiled without XPU support")

    def __exit__(self, *exc) -> bool:
        return False


from . import memory, random  # noqa: E402,F401  (torch.xpu.memory and .random, importable without their own import)
