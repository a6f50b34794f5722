"""tapegrad.cpu.amp: the deprecated CPU spellings of tapegrad.amp's GradScaler and autocast.

PyTorch warns (FutureWarning) that they are deprecated and otherwise behaves as
``torch.amp.GradScaler('cpu', ...)`` / ``torch.amp.autocast('cpu', ...)``: the scaler scales on
the CPU; the autocast casts the listed ops' inputs (tapegrad/_autocast.py) to its dtype,
bfloat16 unless given (which tapegrad refuses at the first op that would cast: it has no
bfloat16 tensors yet); a disabled one (``enabled=False``) is a no-op.
"""
from __future__ import annotations as _annotations

from ..amp import _DeviceAutocast, _DeviceGradScaler

__all__ = ["GradScaler", "autocast"]


class GradScaler(_DeviceGradScaler):
    """``tapegrad.amp.GradScaler('cpu', ...)``, with PyTorch's deprecation warning."""
    _torch_module = "torch.cpu.amp.grad_scaler"

    _device = "cpu"


class autocast(_DeviceAutocast):  # noqa: N801  (PyTorch's name)
    """``tapegrad.amp.autocast('cpu', ...)``, with PyTorch's deprecation warning; its dtype
    defaults to bfloat16 as PyTorch's does."""
    _torch_module = "torch.cpu.amp.autocast_mode"

    _device = "cpu"
    _default_dtype = "bfloat16"
