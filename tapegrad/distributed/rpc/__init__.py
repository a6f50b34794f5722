"""torch.distributed.rpc on a build without a distributed backend: the names scripts test
against exist (``isinstance(out, torch.distributed.rpc.api.RRef)``, as rasbt's training helpers
do, is False), ``is_available()`` is False, and making an RRef raises PyTorch's error for an
uninitialised RPC framework."""
from __future__ import annotations as _annotations

from . import api
from .api import RRef

__all__ = ["RRef", "api", "is_available"]


def is_available() -> bool:
    """False: tapegrad has no RPC agent."""
    return False
