"""tapegrad.cuda.amp: the deprecated CUDA spellings of tapegrad.amp's GradScaler and autocast.

PyTorch warns (FutureWarning) that they are deprecated, then, having no CUDA, disables them:
the scaler passes everything through and the autocast region is a no-op.
"""
from __future__ import annotations

import warnings

from .. import amp as _amp
from ..amp import GradScaler as _GradScaler, autocast as _autocast

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]


class GradScaler(_GradScaler):
    """``tapegrad.amp.GradScaler('cuda', ...)``: disabled here (no CUDA), with PyTorch's warnings."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


class autocast(_autocast):  # noqa: N801  (PyTorch's name)
    """``tapegrad.amp.autocast('cuda', ...)``: a no-op here (no CUDA), with PyTorch's warnings."""

    def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``tapegrad.amp.custom_fwd(..., device_type='cuda')``, with PyTorch's FutureWarning."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """``tapegrad.amp.custom_bwd(..., device_type='cuda')``, with PyTorch's FutureWarning."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return _amp.custom_bwd(bwd, device_type="cuda")
