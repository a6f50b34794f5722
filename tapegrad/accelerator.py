"""tapegrad.accelerator: the torch.accelerator API on a machine without one."""
from __future__ import annotations

_NONE = "Cannot access accelerator device when none is available."


def is_available() -> bool:
    return False


def current_accelerator(check_available: bool = False):
    return None


def device_count() -> int:
    return 0


def current_device_index() -> int:
    raise RuntimeError(_NONE)


def current_device_idx() -> int:
    import warnings
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_index(device) -> None:
    raise RuntimeError(_NONE)


def synchronize(device=None) -> None:
    raise RuntimeError(_NONE)
