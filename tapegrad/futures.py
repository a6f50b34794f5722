"""torch.futures: Future, the handle of a value that may not be ready yet, with collect_all and
wait_all.  tapegrad's torch.jit.fork runs its call at once (no inter-op pool), so the futures it
returns are complete; a Future made directly is completed by set_result / set_exception, possibly
from another thread, and wait() blocks until then, as PyTorch's does."""
from __future__ import annotations as _annotations

import threading
from typing import Generic, TypeVar

from ._core import type_name as _type_name

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")
_PENDING = object()


class Future(Generic[T]):
    """A value or an exception, delivered once; callbacks run when it arrives (at once when it
    already has)."""

    def __init__(self, *, devices=None):
        self._done = threading.Condition()
        self._value = _PENDING
        self._exception = None
        self._callbacks = []

    def done(self) -> bool:
        return self._value is not _PENDING or self._exception is not None

    def _complete(self, value, exception) -> None:
        with self._done:
            if self.done():
                raise RuntimeError("Attempting to mark a completed Future as complete again. "
                                   "Note that a Future can only be marked completed once.")
            self._value, self._exception = value, exception
            callbacks, self._callbacks = self._callbacks, []
            self._done.notify_all()
        for callback in callbacks:
            callback(self)

    def set_result(self, result) -> None:
        self._complete(result, None)

    def set_exception(self, result) -> None:
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception(): expected an exception, not {_type_name(result)}")
        self._complete(_PENDING, result)

    def wait(self):
        """The value, once there (blocks until then); a delivered exception is raised."""
        with self._done:
            self._done.wait_for(self.done)
        return self.value()

    def value(self):
        """The value of a completed future (PyTorch asserts completion: RuntimeError here)."""
        if not self.done():
            raise RuntimeError("value(): the Future is not completed yet (call wait())")
        if self._exception is not None:
            raise self._exception
        return self._value

    def add_done_callback(self, callback) -> None:
        """callback(self) when the future completes (now, when it has)."""
        with self._done:
            if not self.done():
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback) -> "Future":
        """A new future completed with callback(self) once this one completes (with its
        exception, when callback raises)."""
        chained = Future()

        def run(fut):
            try:
                result = callback(fut)
            except Exception as error:          # (PyTorch hands it on to the chained future)
                chained.set_exception(error)
            else:
                chained.set_result(result)
        self.add_done_callback(run)
        return chained


def _check_futures(futures, fn: str) -> list:
    futures = list(futures)
    for f in futures:
        if not isinstance(f, Future):
            raise TypeError(f"{fn}(): incompatible function arguments: expected a sequence of "
                            f"torch.futures.Future, got an element of type {_type_name(f)}")
    return futures


def collect_all(futures) -> Future:
    """A future completed, with the list of `futures`, once all of them are."""
    futures = _check_futures(futures, "_collect_all")
    collected = Future()
    remaining = [len(futures)]
    lock = threading.Lock()

    def arrived(_):
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            collected.set_result(futures)
    if not futures:
        collected.set_result([])
    for f in futures:
        f.add_done_callback(arrived)
    return collected


def wait_all(futures) -> list:
    """The values of all `futures` (waiting for each); the first exception among them raised."""
    return [f.wait() for f in _check_futures(futures, "_collect_all")]
