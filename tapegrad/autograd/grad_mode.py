"""torch.autograd.grad_mode: where PyTorch defines its grad-mode guards (scripts import them from
here, and their objects print under this module's name); ours live in tapegrad.grad_mode.
Also the engine's multithreading switch."""
from __future__ import annotations as _annotations

import functools

from ..grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "set_multithreading_enabled"]

# PyTorch's engine runs the backward of each non-CPU device on a worker thread of its own unless
# this is off.  tapegrad has one device, whose backward PyTorch runs on the calling thread as
# tapegrad's sweep does: the switch is kept and reported, and changes nothing else.
_multithreading = [True]


def is_multithreading_enabled() -> bool:
    """Whether the autograd engine may run backward on its device threads (default True)."""
    return _multithreading[0]


class set_multithreading_enabled:
    """Set the engine's multithreading switch to `mode` now; used with `with` (or as a decorator)
    it is restored afterwards."""

    def __init__(self, mode: bool) -> None:
        self.prev = _multithreading[0]
        _multithreading[0] = bool(mode)
        self.mode = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc_info) -> None:
        _multithreading[0] = self.prev

    def clone(self) -> "set_multithreading_enabled":
        """A new guard with the same mode (switching now, as construction does)."""
        return self.__class__(self.mode)

    def __call__(self, func):
        _multithreading[0] = self.prev          # decorating: only calls switch it

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper
