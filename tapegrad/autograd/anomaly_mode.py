"""Anomaly detection: torch.autograd.detect_anomaly / set_detect_anomaly.

When on, every recorded op remembers the Python stack of the forward call that created it, and an
error raised while computing an op's gradient is re-raised naming the op and where its forward
ran (a UserWarning with the full forward traceback is also emitted, as PyTorch does).  With
check_nan (the default), a backward op that returns NaN raises
"Function 'XBackward0' returned nan values in its 0th output."
"""
from __future__ import annotations as _annotations

import warnings

from .. import _core
from .._torch_names import object_repr as _object_repr

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection (``autograd.detect_anomaly`` / ``set_detect_anomaly``) is on."""
    return _core._anomaly_enabled()


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks every backward result for NaN."""
    return _core._anomaly_check_nan_enabled()


class detect_anomaly:
    """Context manager that enables anomaly detection inside it.

    Not a decorator: PyTorch's detect_anomaly defines no __call__, so `@detect_anomaly()` raises
    TypeError there, and a script relying on it must fail the same way here."""
    __repr__ = _object_repr  # Python's default repr, under PyTorch's module path

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        # (a with block that ends inside the function too: its backward checks run eagerly)
        _core._capture_setting("anomaly detection (detect_anomaly)")
        _core._set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args) -> None:
        _core._set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:
    """Turn anomaly detection on or off now (and back when used as a context manager)."""
    __repr__ = _object_repr  # Python's default repr, under PyTorch's module path

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        _core._capture_setting("anomaly detection (set_detect_anomaly)")
        self.prev, self.prev_check_nan = _core._set_anomaly_enabled(bool(mode), bool(check_nan))

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args) -> None:
        _core._set_anomaly_enabled(self.prev, self.prev_check_nan)
