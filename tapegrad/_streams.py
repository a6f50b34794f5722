"""torch.Stream and torch.Event on the CPU, as PyTorch's CPU build has them.

The CPU runs every op in order on one implicit stream: a Stream is always idle (query() True,
synchronize() returns at once) and an Event is always reached, but PyTorch's CPU backend
records no events, so record(), record_event() and wait_stream() raise its RuntimeError.  An
accelerator device is refused as PyTorch without one refuses it.
"""
from __future__ import annotations as _annotations

from ._device import device as _device

__all__ = ["Stream", "Event"]

_NO_CPU_EVENTS = "cpu backend doesn't support events."
_CPU_DEVICE_TYPE = 0            # c10::DeviceType::CPU, what PyTorch's device_type reports


def _cpu_device(device):
    """The CPU device a stream or event lives on; PyTorch's errors for any other."""
    if device is None:
        return _device("cpu")
    d = device if isinstance(device, _device) else _device(device)
    if d.type != "cpu":
        raise RuntimeError(f"PyTorch is not linked with support for {d.type} devices")
    return d


class Stream:
    """The CPU's one stream."""

    _c_type_name = "torch.Stream"

    def __init__(self, device=None, *, priority: int = 0):
        self.device = _cpu_device(device)
        self.stream_id = 0
        self.device_index = -1
        self.device_type = _CPU_DEVICE_TYPE

    def query(self) -> bool:
        """True: the CPU stream has no pending work."""
        return True

    def synchronize(self) -> None:
        """Returns at once: every CPU op has finished when it returns."""
        return None

    def wait_event(self, event) -> None:
        """PyTorch's RuntimeError: the CPU backend has no events."""
        raise RuntimeError(_NO_CPU_EVENTS)

    def wait_stream(self, stream) -> None:
        """PyTorch's RuntimeError: the CPU backend has no events to wait with."""
        raise RuntimeError(_NO_CPU_EVENTS)

    def record_event(self, event=None):
        """PyTorch's RuntimeError: the CPU backend records no events."""
        raise RuntimeError(_NO_CPU_EVENTS)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def __eq__(self, other):
        if not isinstance(other, Stream):
            return NotImplemented
        return (self.device_type, self.device_index, self.stream_id) == \
            (other.device_type, other.device_index, other.stream_id)

    def __hash__(self):
        return hash((self.device_type, self.device_index, self.stream_id))

    def __repr__(self):
        return (f"torch.Stream device_type=cpu, device_index={self.device_index}, "
                f"stream_id={self.stream_id}")


class Event:
    """A CPU event: nothing to wait for, and nothing the CPU backend can record."""

    _c_type_name = "torch.Event"

    def __init__(self, device=None, *, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        self.device = _cpu_device(device)
        self.event_id = 0
        self._flag = 1 if enable_timing else 0

    def record(self, stream=None) -> None:
        """PyTorch's RuntimeError: the CPU backend records no events."""
        raise RuntimeError(_NO_CPU_EVENTS)

    def query(self) -> bool:
        """True: nothing to wait for."""
        return True

    def synchronize(self) -> None:
        """Returns at once."""
        return None

    def wait(self, stream=None) -> None:
        """Returns at once."""
        return None

    def elapsed_time(self, end_event) -> float:
        """PyTorch's ValueError: timing needs two recorded events with enable_timing=True,
        and no CPU event is ever recorded."""
        if not (self._flag and getattr(end_event, "_flag", 0)):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        # (record() always raises on the CPU, so no CPU event is ever recorded)
        raise ValueError("Both events must be recorded before calculating elapsed time.")

    def __repr__(self):
        return (f"torch.Event device_type=cpu, device_index=-1, event_flag={self._flag}, "
                f"event_id={self.event_id}")
