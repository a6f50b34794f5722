"""tapegrad.autograd.profiler: the legacy profiler entry points (torch.autograd.profiler), the same
objects as tapegrad.profiler: each op call, backward node and record_function block is an event."""
from ..profiler import EventList, FunctionEvent, FunctionEventAvg, profile, record_function

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]
