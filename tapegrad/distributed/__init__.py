"""torch.distributed on a build without a distributed backend: the names scripts import exist
(so ``from torch.distributed import init_process_group`` works in a script that only uses it
when launched by torchrun), ``is_available()`` is False, and every call that needs a process
group raises the error PyTorch raises when none was initialised."""
from __future__ import annotations as _annotations

import enum

from . import rpc

__all__ = ["rpc", "Backend", "GroupMember", "ReduceOp", "all_gather", "all_gather_object", "all_reduce",
           "all_to_all", "barrier", "broadcast", "broadcast_object_list", "destroy_process_group", "gather",
           "get_backend", "get_rank", "get_world_size", "group", "init_process_group", "irecv", "is_available",
           "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
           "is_torchelastic_launched", "isend", "new_group", "recv", "reduce", "reduce_scatter", "scatter",
           "send"]

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


class _RedOpType(enum.Enum):
    """The reduction kinds; PyTorch's pybind enum prints as ``RedOpType.SUM`` and converts to int."""
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8

    def __int__(self) -> int:
        return self.value

    __index__ = __int__

    def __repr__(self) -> str:
        return f"<RedOpType.{self.name}: {self.value}>"

    def __str__(self) -> str:
        return f"RedOpType.{self.name}"


_RedOpType.__name__ = _RedOpType.__qualname__ = "RedOpType"


class ReduceOp:
    """``dist.ReduceOp.SUM`` etc.: scripts name these at import time (as default arguments of their
    all-reduce helpers), so they must exist even though no collective can run here."""
    RedOpType = _RedOpType
    SUM = _RedOpType.SUM
    AVG = _RedOpType.AVG
    PRODUCT = _RedOpType.PRODUCT
    MIN = _RedOpType.MIN
    MAX = _RedOpType.MAX
    BAND = _RedOpType.BAND
    BOR = _RedOpType.BOR
    BXOR = _RedOpType.BXOR
    PREMUL_SUM = _RedOpType.PREMUL_SUM


class Backend(str):
    """A backend name, lower-cased as PyTorch's ``Backend("GLOO") == "gloo"``."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"
    FAKE = "fake"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        return str.__new__(cls, name.lower())


class GroupMember:
    """``GroupMember.WORLD`` is None until a default process group exists (never, here)."""
    WORLD = None
    NON_GROUP_MEMBER = -100


class group:
    """``dist.group.WORLD``: None without a default process group."""
    WORLD = None


def is_nccl_available() -> bool:
    return False


def is_gloo_available() -> bool:
    return False


def is_mpi_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    """True when the process was started by torchrun (it sets TORCHELASTIC_RUN_ID)."""
    import os
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def _needs_group(name: str):
    def collective(*args, **kwargs):
        _default_group()
    collective.__name__ = collective.__qualname__ = name
    collective.__doc__ = "Raises ValueError: there is no default process group."
    return collective


# Every collective / point-to-point call needs the default process group, which never exists here:
# each raises PyTorch's ValueError for that case.
for _name in ("all_gather", "all_gather_object", "all_reduce", "all_to_all", "broadcast",
              "broadcast_object_list", "gather", "get_backend", "irecv", "isend", "new_group", "recv",
              "reduce", "reduce_scatter", "scatter", "send"):
    globals()[_name] = _needs_group(_name)
del _name
