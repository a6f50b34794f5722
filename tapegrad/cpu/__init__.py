"""tapegrad.cpu: the CPU's device module, as torch.cpu (device-agnostic scripts call
``torch.get_device_module(device).synchronize()`` and the like).

The CPU runs every op synchronously in the calling thread, so synchronize is immediate and a
stream is only the default one: Stream and stream() exist so that code written for streams runs
unchanged, with nothing to order.
"""
from __future__ import annotations as _annotations

from . import amp  # noqa: F401  (torch.cpu.amp.autocast / GradScaler; also importable as a module)

__all__ = ["Stream", "StreamContext", "current_device", "current_stream", "device_count",
           "is_available", "is_initialized", "set_device", "stream", "synchronize"]


def is_available() -> bool:
    """Always True: tapegrad runs on the CPU."""
    return True


def is_initialized() -> bool:
    """Always True: the CPU needs no initialisation."""
    return True


def device_count() -> int:
    """The number of CPU devices PyTorch counts: 1."""
    return 1


def current_device() -> str:
    """The current CPU device's name, 'cpu'."""
    return "cpu"


def set_device(device) -> None:
    """Select the CPU device: there is one, so nothing changes."""


def synchronize(device=None) -> None:
    """Wait for the CPU's pending work: ops are synchronous, so there is none."""


class Stream:
    """The CPU's stream: ops run in order in the calling thread, so every stream is the same
    one; wait_stream / synchronize / query have nothing to wait for."""

    def __init__(self, priority: int = -1) -> None:
        self.priority = priority

    def wait_stream(self, stream) -> None:
        """Order after `stream`: already so."""

    def synchronize(self) -> None:
        """Wait for the stream's work: already done."""

    def query(self) -> bool:
        """Whether all the stream's work is done: always."""
        return True

    def record_event(self, event=None):
        """Record an event on the stream: there is nothing to mark, returns `event`."""
        return event


_DEFAULT_STREAM = Stream()


def current_stream(device=None) -> Stream:
    """The CPU's (only) stream."""
    return _DEFAULT_STREAM


class StreamContext:
    """Context manager selecting a stream: on the CPU, a no-op."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def __enter__(self):
        return self.stream

    def __exit__(self, *exc) -> None:
        return None


def stream(stream) -> StreamContext:
    """Run the enclosed code on `stream`: on the CPU, as before."""
    return StreamContext(stream)


_DEVICE_MODULES = {"cpu": "cpu", "cuda": "cuda"}


def get_device_module(device=None):
    """The module of a device type (tapegrad.cpu, tapegrad.cuda): for None, the current
    accelerator's, which for tapegrad is the CPU's."""
    import importlib
    from ..amp import _DEVICE_TYPES
    if device is None:
        kind = "cpu"
    else:
        kind = getattr(device, "type", device)
        if not isinstance(kind, str):
            raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, "
                               f"or None")
        kind = kind.split(":")[0]
        if kind not in _DEVICE_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at "
                               f"start of device string: {device}")
    if kind not in _DEVICE_MODULES:
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered "
                           f"as 'torch.{kind}'.")
    return importlib.import_module(f"tapegrad.{_DEVICE_MODULES[kind]}")
