"""tapegrad.autograd.profiler: the legacy profiler entry points (torch.autograd.profiler). The events,
record_function and the recording itself are tapegrad.profiler's; only `profile` differs: the legacy
profile prints as its events (PyTorch's torch.autograd.profiler.profile defines __str__ / __repr__,
torch.profiler.profile does not), so tutorials' `print(prof)` shows the per-event table."""
from .. import profiler as _profiler
from ..profiler import EventList, FunctionEvent, FunctionEventAvg, ProfilerActivity, record_function

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]


def kineto_available() -> bool:
    """Whether torch.profiler's profiler (PyTorch's Kineto one) is there: tapegrad.profiler's
    profile, schedule and activities stand in for it, so scripts that ask before profiling
    profile."""
    return True

_UNFINISHED = "<unfinished torch.autograd.profile>"


class profile(_profiler.profile):
    """torch.autograd.profiler.profile: tapegrad.profiler.profile whose str() is the table of
    every event recorded (one row per event, in order, not averaged) and whose repr() is the list
    of events, as PyTorch's; before the profile has stopped both are PyTorch's "unfinished"."""

    _finished = False

    def start(self):
        self._finished = False
        return super().start()

    def stop(self):
        super().stop()
        self._finished = True

    def __str__(self):
        return str(self.function_events) if self._finished else _UNFINISHED

    def __repr__(self):
        return repr(list(self.function_events)) if self._finished else _UNFINISHED
