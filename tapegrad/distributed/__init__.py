"""torch.distributed for a single process: ``is_available()`` is True and a gloo process group
of world size 1 can be initialised, so scripts that call MoCo's ``concat_all_gather``, SimCLR's
``GatherLayer`` or DDP on one CPU process run; every collective is exact for one rank (see
distributed_c10d).  Without ``init_process_group`` every call that needs a group raises the
error PyTorch raises when none was initialised."""
from __future__ import annotations as _annotations

from . import distributed_c10d, rpc
from .distributed_c10d import *  # noqa: F401,F403  (the public names, listed in its __all__)
from .distributed_c10d import __all__ as _c10d_all

__all__ = ["rpc", *_c10d_all]
