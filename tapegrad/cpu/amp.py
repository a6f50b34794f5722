"""tapegrad.cpu.amp: the deprecated CPU spellings of tapegrad.amp's GradScaler and autocast.

PyTorch warns (FutureWarning) that they are deprecated and otherwise behaves as
``torch.amp.GradScaler('cpu', ...)`` / ``torch.amp.autocast('cpu', ...)``: the scaler scales on
the CPU; an enabled CPU autocast is refused by tapegrad.amp (no bfloat16), a disabled one
(``enabled=False``, the usual ``enabled=use_amp`` guard) is a no-op.
"""
from __future__ import annotations

import warnings

from ..amp import GradScaler as _GradScaler, autocast as _autocast

__all__ = ["GradScaler", "autocast"]


class GradScaler(_GradScaler):
    """``tapegrad.amp.GradScaler('cpu', ...)``, with PyTorch's deprecation warning."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


class autocast(_autocast):  # noqa: N801  (PyTorch's name)
    """``tapegrad.amp.autocast('cpu', ...)``, with PyTorch's deprecation warning; its dtype
    defaults to bfloat16 as PyTorch's does."""

    def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        if dtype is None:
            from .. import bfloat16 as dtype
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
