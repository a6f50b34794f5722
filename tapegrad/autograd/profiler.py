"""tapegrad.autograd.profiler: the legacy profiler entry points (torch.autograd.profiler), the same
objects as tapegrad.profiler: record_function blocks are timed, individual operators are not."""
from ..profiler import EventList, FunctionEvent, FunctionEventAvg, profile, record_function

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]
