"""tapegrad.nn.attention: which scaled_dot_product_attention backends may run.

PyTorch keeps four backend flags (math, flash, memory-efficient, cuDNN), all on by default;
``sdpa_kernel`` narrows them for a ``with`` block and ``torch.backends.cuda.enable_*_sdp`` sets
them.  On the CPU PyTorch runs the math kernel or its CPU flash kernel (same values), so
F.scaled_dot_product_attention computes when either is on and otherwise raises PyTorch's "No
viable backend" error.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import contextlib
from enum import Enum

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(Enum):
    """The scaled_dot_product_attention backends, numbered as PyTorch numbers them."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


# The one record of which backends are on (torch.backends.cuda's flags read and write it too).
_enabled = {SDPBackend.MATH: True, SDPBackend.FLASH_ATTENTION: True,
            SDPBackend.EFFICIENT_ATTENTION: True, SDPBackend.CUDNN_ATTENTION: True,
            SDPBackend.OVERRIDEABLE: True}


def _set_enabled(backend: SDPBackend, enabled: bool) -> None:
    _enabled[backend] = bool(enabled)


def _is_enabled(backend: SDPBackend) -> bool:
    return _enabled[backend]


def check_cpu_backend() -> None:
    """Raise PyTorch's error when no backend that runs on the CPU (math, flash) is on."""
    if not (_enabled[SDPBackend.MATH] or _enabled[SDPBackend.FLASH_ATTENTION]):
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This "
                           "is likely due to turning off both the math kernel and the fused "
                           "kernels.")


@contextlib.contextmanager
def _flags(on):
    """Only the backends in `on` enabled inside the block; the previous flags restored after."""
    previous = dict(_enabled)
    try:
        for backend in _enabled:
            _enabled[backend] = backend in on
        yield {}
    finally:
        _enabled.update(previous)


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Context manager: only `backends` (an SDPBackend or a list of them) may run
    scaled_dot_product_attention inside the block.  `set_priority` orders them; with a single
    CPU kernel the order changes nothing.  The argument is checked on entering the block."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend "
                             f"instances, got {_type_name(backends)}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    with _flags(set(backends)) as ctx:
        yield ctx
