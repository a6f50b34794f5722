"""torch.fork / torch.wait: run a call asynchronously and wait for its Future.

tapegrad has no inter-op thread pool, so fork runs the call at once, as PyTorch's eager fork
does, and returns a completed torch.futures.Future; an exception the call raises propagates from
fork itself, as PyTorch's.  torch.jit.fork / jit.wait are these with TorchScript's deprecation
warning."""
from __future__ import annotations as _annotations

from ._core import type_name as _type_name
from .futures import Future

__all__ = ["fork", "wait"]


def fork(func, *args, **kwargs) -> Future:
    """``func(*args, **kwargs)``, run now, as a completed Future."""
    if not callable(func):
        raise TypeError(f"Object of type '{_type_name(func)}' is not an instance of 'function'")
    future = Future()
    future.set_result(func(*args, **kwargs))
    return future


def wait(future):
    """The value of `future` (blocking until it completes; its exception raised)."""
    if not isinstance(future, Future):
        raise TypeError("wait(): incompatible function arguments. The following argument types "
                        "are supported:\n    1. (arg0: torch._C.Future) -> object\n\n"
                        f"Invoked with: {future!r}")
    return future.wait()
