"""tapegrad.profiler (and tapegrad.autograd.profiler): time labelled blocks of a program.

What is measured: the wall time of every `record_function(name)` block run while a `profile` is
active, nested blocks included (a block's self time excludes the blocks inside it).  tapegrad's
compiled core has no per-operator hook, so unlike torch's profiler there are no `aten::mm`-style
rows for individual operators: label the regions of interest with record_function.  The summary
`key_averages().table(...)` has torch's column layout (Name, Self CPU %, Self CPU, CPU total %,
CPU total, CPU time avg, # of Calls) and footer.
"""
from __future__ import annotations

import enum
import functools
import json
import time

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "EventList", "FunctionEvent", "FunctionEventAvg", "tensorboard_trace_handler"]

_active_profilers: list = []     # profilers currently recording, innermost last


class ProfilerActivity(enum.Enum):
    """The devices whose activity is profiled (tapegrad runs on the CPU only)."""
    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What a :func:`schedule` asks the profiler to do at a step."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """A step -> ProfilerAction function: skip ``skip_first`` steps, then cycles of ``wait`` idle,
    ``warmup`` and ``active`` recorded steps (the last active one saves), ``repeat`` times (0:
    forever)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError("Invalid profiler schedule arguments")
    cycle = wait + warmup + active

    def action(step):
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        position = step % cycle
        if position < wait:
            return ProfilerAction.NONE
        if position < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if position < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return action


class FunctionEvent:
    """One timed block: name, start and end in microseconds, nested children."""

    def __init__(self, name, start_us, parent):
        self.name = self.key = name
        self.start_us = start_us
        self.end_us = start_us
        self.parent = parent
        self.children = []
        self.count = 1

    @property
    def cpu_time_total(self):
        """Wall time of the block, microseconds."""
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self):
        """Wall time of the block minus the blocks nested in it, microseconds."""
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.children)

    cpu_time = cpu_time_total


class FunctionEventAvg:
    """The events of one name, aggregated (what key_averages lists)."""

    def __init__(self, key):
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0

    def add(self, event):
        """Accumulate one event of this name."""
        self.count += 1
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        return self

    @property
    def cpu_time(self):
        """Average wall time per call, microseconds."""
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"cpu_time={_format_time(self.cpu_time)} count={self.count}>")


def _format_time(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


class EventList(list):
    """A list of events with torch's summary table."""

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False):
        """The summary table as a string, torch's layout; ``sort_by`` an attribute such as
        "cpu_time_total", "self_cpu_time_total", "cpu_time" or "count" (descending)."""
        rows = list(self)
        if sort_by is not None:
            rows.sort(key=lambda e: getattr(e, sort_by.replace("cpu_time_avg", "cpu_time")),
                      reverse=True)
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        self_total = sum(e.self_cpu_time_total for e in self)
        names = [e.key if len(e.key) <= max_name_column_width else e.key[:max_name_column_width - 3] + "..."
                 for e in rows]
        name_width = max([len(n) for n in names] + [0]) + 4
        headers = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]

        def line(first, cells):
            return f"{first:>{name_width}}  " + "".join(f"{c:>12}  " for c in cells)

        rule = "-" * name_width + "  " + "".join("-" * 12 + "  " for _ in headers)

        def percent(part):
            return f"{100.0 * part / self_total:.2f}%" if self_total else "0.00%"

        out = [rule, line("Name", headers), rule]
        if header is not None:
            out.insert(0, header)
        for name, e in zip(names, rows):
            out.append(line(name, [percent(e.self_cpu_time_total), _format_time(e.self_cpu_time_total),
                                   percent(e.cpu_time_total), _format_time(e.cpu_time_total),
                                   _format_time(e.cpu_time), str(e.count)]))
        out.append(rule)
        out.append(f"Self CPU time total: {_format_time(self_total)}")
        return "\n".join(out) + "\n"

    def __str__(self):
        return self.table()

    @property
    def self_cpu_time_total(self):
        """Sum of the events' self times, microseconds."""
        return sum(e.self_cpu_time_total for e in self)


def _now_us():
    return time.perf_counter_ns() / 1e3


class profile:
    """Context manager recording the record_function blocks run inside it (see the module doc).

    ``activities``, ``record_shapes``, ``profile_memory``, ``with_stack``... are accepted for
    signature parity; CUDA activity cannot be recorded (there is no device).  With ``schedule``,
    only steps the schedule marks RECORD / RECORD_AND_SAVE are recorded (``step()`` advances) and
    ``on_trace_ready(prof)`` is called at each RECORD_AND_SAVE step's end."""

    def __init__(self, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False,
                 use_cuda=None, enabled=True, **kwargs):
        self.enabled = enabled
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.events = []          # every finished block, in order of completion
        self._stack = []          # open blocks
        self._recording = False

    def _should_record(self):
        if self.schedule is None:
            return True
        return self.schedule(self.step_num) in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)

    def start(self):
        """Begin recording (what entering the ``with`` block does)."""
        if self.enabled:
            _active_profilers.append(self)
            self._recording = self._should_record()
        return self

    def stop(self):
        """End recording (what leaving the ``with`` block does)."""
        if self in _active_profilers:
            _active_profilers.remove(self)
        self._recording = False

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def step(self):
        """Mark the end of a training step (advances the schedule)."""
        if self.schedule is not None and \
                self.schedule(self.step_num) is ProfilerAction.RECORD_AND_SAVE and self.on_trace_ready:
            self.on_trace_ready(self)
        self.step_num += 1
        self._recording = self.enabled and self in _active_profilers and self._should_record()

    def _open(self, name):
        if not self._recording:
            return None
        parent = self._stack[-1] if self._stack else None
        event = FunctionEvent(name, _now_us(), parent)
        if parent is not None:
            parent.children.append(event)
        self._stack.append(event)
        return event

    def _close(self, event):
        event.end_us = _now_us()
        if self._stack and self._stack[-1] is event:
            self._stack.pop()
        self.events.append(event)

    def function_events(self):
        """The recorded blocks, each a FunctionEvent."""
        return EventList(self.events)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        """The events aggregated by name, in order of first appearance (an EventList)."""
        groups = {}
        for event in sorted(self.events, key=lambda e: e.start_us):
            groups.setdefault(event.key, FunctionEventAvg(event.key)).add(event)
        return EventList(groups.values())

    def export_chrome_trace(self, path):
        """Write the blocks as a Chrome trace (chrome://tracing, Perfetto) JSON file."""
        trace = {"traceEvents": [{"name": e.name, "ph": "X", "ts": e.start_us,
                                  "dur": e.cpu_time_total, "pid": 0, "tid": 0, "cat": "user_annotation"}
                                 for e in self.events]}
        with open(path, "w") as handle:
            json.dump(trace, handle)

    def table(self, **kwargs):
        """Shorthand for key_averages().table(...)."""
        return self.key_averages().table(**kwargs)


class record_function:
    """Label a block (context manager) or every call of a function (decorator) for `profile`."""

    def __init__(self, name, args=None):
        self.name = name
        self._opened = []

    def __enter__(self):
        self._opened = [(p, p._open(self.name)) for p in _active_profilers]
        return self

    def __exit__(self, *exc):
        for profiler, event in self._opened:
            if event is not None:
                profiler._close(event)
        self._opened = []
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)
        return wrapper


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An on_trace_ready callback writing each saved trace as Chrome-trace JSON into dir_name."""
    import os
    import socket

    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        prof.export_chrome_trace(os.path.join(
            dir_name, f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json"))
    return handler
