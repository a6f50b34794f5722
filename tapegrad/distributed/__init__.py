"""torch.distributed on a build without a distributed backend: the names scripts import exist
(so ``from torch.distributed import init_process_group`` works in a script that only uses it
when launched by torchrun), ``is_available()`` is False, and every call that needs a process
group raises the error PyTorch raises when none was initialised."""
from __future__ import annotations

from . import rpc

__all__ = ["rpc", "barrier", "destroy_process_group", "get_rank", "get_world_size", "init_process_group",
           "is_available", "is_initialized"]

_NOT_INITIALISED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


def is_available() -> bool:
    """False: tapegrad has no distributed backend (no gloo, nccl or mpi)."""
    return False


def is_initialized() -> bool:
    """False: no process group can be initialised in this build."""
    return False


def _default_group():
    raise ValueError(_NOT_INITIALISED)


def init_process_group(backend=None, *args, **kwargs) -> None:
    """Raises RuntimeError: this build has no backend to create a process group with."""
    name = backend.upper() if isinstance(backend, str) else "a distributed backend"
    raise RuntimeError(f"Distributed package doesn't have {name} built in")


def destroy_process_group(group=None) -> None:
    """Raises AssertionError, as PyTorch does when there is no group to destroy."""
    raise AssertionError("Process group cannot be None")


def get_rank(group=None) -> int:
    """Raises ValueError: there is no default process group."""
    _default_group()


def get_world_size(group=None) -> int:
    """Raises ValueError: there is no default process group."""
    _default_group()


def barrier(group=None, *args, **kwargs) -> None:
    """Raises ValueError: there is no default process group."""
    _default_group()
