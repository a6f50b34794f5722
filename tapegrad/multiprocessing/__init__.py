"""torch.multiprocessing: Python's multiprocessing, with tapegrad tensors that were moved to
shared memory (Tensor.share_memory_, Module.share_memory) passed between processes by
reference to their segment rather than by copy (see tapegrad/_shared_memory.py)."""
from __future__ import annotations as _annotations

import multiprocessing
from multiprocessing import *  # noqa: F401,F403  (the same names torch.multiprocessing exports)

from .. import _shared_memory
from .spawn import (ProcessContext, ProcessExitedException, ProcessRaisedException,  # noqa: E402
                    spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn",
           "start_processes", "ProcessContext", "ProcessRaisedException", "ProcessExitedException"]
__all__ += multiprocessing.__all__

# PyTorch chooses how storages are shared; tapegrad always uses named shared-memory segments,
# and records the strategy asked for so scripts that set and read it behave the same.
_SHARING_STRATEGIES = {"file_descriptor", "file_system"}
_sharing_strategy = "file_descriptor"


def set_sharing_strategy(new_strategy: str) -> None:
    global _sharing_strategy
    if new_strategy not in _SHARING_STRATEGIES:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}")
    _sharing_strategy = new_strategy


def get_sharing_strategy() -> str:
    return _sharing_strategy


def get_all_sharing_strategies() -> set:
    return set(_SHARING_STRATEGIES)


_shared_memory.register_transport_reducers()
