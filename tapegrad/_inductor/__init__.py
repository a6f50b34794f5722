"""torch._inductor: PyTorch's compiler back end.  Scripts written for torch.compile tune it
through ``torch._inductor.config`` (``coordinate_descent_tuning``, ``triton.unique_kernel_names``),
reached as an attribute without importing it; tapegrad has one back end, its replay
(tapegrad/replay.py), and keeps these settings without acting on them."""
from __future__ import annotations as _annotations

from . import config

__all__ = ["config"]
