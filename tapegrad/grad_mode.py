"""Grad mode guards: no_grad, enable_grad, set_grad_enabled (context managers and decorators).

The flag itself is a C thread-local in the core, read on every op; these classes only flip it and
restore it, so grad mode is per thread, as in PyTorch.
"""
from __future__ import annotations

import functools

from . import _core

is_grad_enabled = _core.is_grad_enabled


class _GradModeGuard(_core.GradModeGuard):
    """Base: sets grad mode to `self._mode` on enter, restores the previous mode on exit (both
    compiled, in the core); also usable as a decorator."""

    _mode: bool

    def __call__(self, func):
        mode = self._mode

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            prev = _core._set_grad_enabled(mode)
            try:
                return func(*args, **kwargs)
            finally:
                _core._set_grad_enabled(prev)

        return wrapper


class no_grad(_GradModeGuard):
    """Operations inside do not record; results do not require grad."""

    _mode = False


class enable_grad(_GradModeGuard):
    """Re-enables recording inside a no_grad region."""

    _mode = True


class set_grad_enabled(_GradModeGuard):
    """Sets grad mode to `mode` now (usable as a plain call), restoring it when used with `with`."""

    def __init__(self, mode: bool) -> None:
        self._mode = bool(mode)
        self._prev = _core._set_grad_enabled(self._mode)

    def __enter__(self):
        return None

    def __exit__(self, *exc_info) -> None:
        _core._set_grad_enabled(self._prev)

    def __call__(self, func):
        # Used as a decorator: constructing it already switched the mode; undo that first.
        _core._set_grad_enabled(self._prev)
        return super().__call__(func)
