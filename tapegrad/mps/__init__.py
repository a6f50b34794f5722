"""tapegrad.mps: the torch.mps API of a PyTorch build without Apple's Metal backend.

Device-choosing code asks `torch.mps.is_available()` (or seeds and tidies MPS only when it is in
use), so these answer as PyTorch's CPU build answers: not available, no devices, seeding accepted;
every call that needs the Metal device raises PyTorch's RuntimeError naming the backend call it
could not execute.
"""
from __future__ import annotations as _annotations

__all__ = ["current_allocated_memory", "device_count", "driver_allocated_memory", "empty_cache",
           "get_rng_state", "is_available", "manual_seed", "recommended_max_memory", "seed",
           "set_per_process_memory_fraction", "set_rng_state", "synchronize"]


def _no_mps(backend_call: str):
    raise RuntimeError(f"Cannot execute {backend_call}() without MPS backend.")


def is_available() -> bool:
    """Always False: Apple's Metal backend is not built in (as torch.backends.mps.is_available)."""
    return False


def device_count() -> int:
    """Always 0: no MPS devices."""
    return 0


def manual_seed(seed: int) -> None:
    """Accept a seed for the (absent) MPS generator: a no-op, as in PyTorch without MPS (which does
    not even convert ``seed``)."""
    return None


def seed() -> None:
    """Raise PyTorch's RuntimeError: there is no MPS generator to reseed."""
    _no_mps("getDefaultGenerator")


def get_rng_state(device="mps"):
    """Raise PyTorch's RuntimeError: there is no MPS generator."""
    _no_mps("getDefaultGenerator")


def set_rng_state(new_state, device="mps") -> None:
    """Raise PyTorch's RuntimeError: there is no MPS generator."""
    _no_mps("getDefaultGenerator")


def empty_cache() -> None:
    """Raise PyTorch's RuntimeError: there is no MPS allocator to empty."""
    _no_mps("emptyCache")


def synchronize() -> None:
    """Raise PyTorch's RuntimeError: there is no MPS device to wait for."""
    _no_mps("deviceSynchronize")


def set_per_process_memory_fraction(fraction) -> None:
    """Raise PyTorch's RuntimeError: there is no MPS allocator."""
    _no_mps("setMemoryFraction")


def current_allocated_memory() -> int:
    """Raise PyTorch's RuntimeError: there is no MPS allocator."""
    _no_mps("getCurrentAllocatedMemory")


def driver_allocated_memory() -> int:
    """Raise PyTorch's RuntimeError: there is no MPS driver."""
    _no_mps("getDriverAllocatedMemory")


def recommended_max_memory() -> int:
    """Raise PyTorch's RuntimeError: there is no MPS device."""
    _no_mps("getRecommendedMaxMemory")
