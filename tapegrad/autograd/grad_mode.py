"""torch.autograd.grad_mode: where PyTorch defines its grad-mode guards (scripts import them from
here, and their objects print under this module's name); ours live in tapegrad.grad_mode.
Also the engine's multithreading switch and its gradient layout policy."""
from __future__ import annotations as _annotations

import functools
from _thread import _local as _thread_local     # (threading.local, without loading threading)

from .. import _core
from ..grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "set_multithreading_enabled", "enforce_grad_layout_policy"]

# PyTorch's engine runs the backward of each non-CPU device on a worker thread of its own unless
# this is off.  tapegrad has one device, whose backward PyTorch runs on the calling thread as
# tapegrad's sweep does: the switch is kept and reported, and changes nothing else.
_multithreading = [True]


def is_multithreading_enabled() -> bool:
    """Whether the autograd engine may run backward on its device threads (default True)."""
    return _multithreading[0]


class _SwitchGuard:
    """A switch set when the guard is made and restored when its `with` block ends (or, used as
    a decorator, set only around each call), as PyTorch's _DecoratorContextManager switches.
    A subclass says where its switch lives (_get / _set)."""

    def __init__(self, mode: bool) -> None:
        _core._capture_setting(f"an autograd switch ({type(self).__name__})")
        self.prev = self._get()
        self._set(bool(mode))
        self.mode = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc_info) -> None:
        self._set(self.prev)

    def clone(self):
        """A new guard with the same mode (switching now, as construction does)."""
        return self.__class__(self.mode)

    def __call__(self, func):
        self._set(self.prev)          # decorating: only calls switch it

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper


class set_multithreading_enabled(_SwitchGuard):
    """Set the engine's multithreading switch to `mode` now; used with `with` (or as a decorator)
    it is restored afterwards."""

    @staticmethod
    def _get() -> bool:
        return _multithreading[0]

    @staticmethod
    def _set(mode: bool) -> None:
        _multithreading[0] = mode


# PyTorch's gradient layout contract: an accumulated .grad has its parameter's strides.  Relaxing
# it lets PyTorch's engine keep ("steal") an incoming gradient of another layout; tapegrad always
# creates the .grad it delivers in the parameter's layout, which the relaxed policy allows too, so
# the switch (per thread, as PyTorch's) is kept and reported and changes nothing else.
_grad_layout = _thread_local()


def is_grad_layout_enforcement_enabled() -> bool:
    """Whether this thread's autograd engine enforces the gradient layout contract (default True)."""
    return getattr(_grad_layout, "enabled", True)


class enforce_grad_layout_policy(_SwitchGuard):
    """Set whether the gradient layout contract is enforced (``enable``, default True) for this
    thread now; used with `with` (or as a decorator) it is restored afterwards."""

    def __init__(self, enable: bool = True) -> None:
        super().__init__(enable)

    @staticmethod
    def _get() -> bool:
        return is_grad_layout_enforcement_enabled()

    @staticmethod
    def _set(mode: bool) -> None:
        _grad_layout.enabled = mode
