"""tapegrad.accelerator: the torch.accelerator API on a machine without one."""
from __future__ import annotations as _annotations

_NONE = "Cannot access accelerator device when none is available."


def is_available() -> bool:
    """Always False: tapegrad has no accelerator (CPU only)."""
    return False


def current_accelerator(check_available: bool = False):
    """Always None: no accelerator is present."""
    return None


def device_count() -> int:
    """Always 0: no accelerator devices."""
    return 0


def current_device_index() -> int:
    """Raise ``RuntimeError`` as PyTorch does when no accelerator is present."""
    raise RuntimeError(_NONE)


def current_device_idx() -> int:
    """Deprecated alias of ``current_device_index`` (warns ``FutureWarning``, then raises
    ``RuntimeError``: no accelerator).
    """
    import warnings
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_index(device) -> None:
    """Raise ``RuntimeError`` as PyTorch does when no accelerator is present."""
    raise RuntimeError(_NONE)


def synchronize(device=None) -> None:
    """Raise ``RuntimeError`` as PyTorch does when no accelerator is present."""
    raise RuntimeError(_NONE)
