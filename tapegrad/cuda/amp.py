"""tapegrad.cuda.amp: the deprecated CUDA spellings of tapegrad.amp's GradScaler and autocast.

PyTorch warns (FutureWarning) that they are deprecated, then, having no CUDA, disables them:
the scaler passes everything through and the autocast region is a no-op.
"""
from __future__ import annotations as _annotations

import warnings

from .. import amp as _amp
from ..amp import _DeviceAutocast, _DeviceGradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]


class GradScaler(_DeviceGradScaler):
    """``tapegrad.amp.GradScaler('cuda', ...)``: disabled here (no CUDA), with PyTorch's warnings."""
    _torch_module = "torch.cuda.amp.grad_scaler"

    _device = "cuda"


class autocast(_DeviceAutocast):  # noqa: N801  (PyTorch's name)
    """``tapegrad.amp.autocast('cuda', ...)``: a no-op here (no CUDA), with PyTorch's warnings."""
    _torch_module = "torch.cuda.amp.autocast_mode"

    _device = "cuda"


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
