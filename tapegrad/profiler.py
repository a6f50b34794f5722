"""tapegrad.profiler (and tapegrad.autograd.profiler): per-op events and labelled blocks.

While a `profile` records, every op call is an event named as PyTorch's top-level aten op: the
public functions (tapegrad.matmul, F.linear ...), the Tensor methods (x.sum()), the operators
(a + b, a @ b, a < b, a[i]), and each node backward runs, as PyTorch's engine names it
("autograd::engine::evaluate_function: MmBackward0" holding "MmBackward0"; a leaf's
"torch::autograd::AccumulateGrad").  A Python autograd.Function's forward is an event named
after its class, as in PyTorch (not the Functions tapegrad implements native ops with: F.conv2d's
event is aten::conv2d alone).  `record_function(name)` blocks are events too; an event's
total time includes the events opened inside it, its self time excludes them.  The compiled core
calls `_op_open` / `_op_close` below only while a profiler records (src/tapegrad/profiling.pxi:
outside one, each call pays one C int test).

What differs from PyTorch (docs/differences.md): the children of an op are the public ops
tapegrad's own implementation calls, not aten's decomposition (torch.matmul's aten::mm, F.linear's
aten::t and aten::addmm are not shown); factories (torch.randn, torch.zeros), the Python-level
Tensor methods (x.exp_(), x.zero_(), x.item()) and optimizers' internals are not events; an
indexing expression is one event (aten::select, aten::slice or aten::index), where PyTorch has one
per index; input_shapes lists the call's positional arguments (a tensor's sizes, [] for anything
else), not the defaults PyTorch's schema adds.  Times are wall-clock microseconds and include the
profiler's own overhead per event.

The summary `key_averages().table(...)` has torch's layout (Name, Self CPU %, Self CPU, CPU
total %, CPU total, CPU time avg, # of Calls, and Input Shapes when recorded) and footer.
"""
from __future__ import annotations as _annotations

import enum
import functools
import json
import math
import os
import threading
import time
import tracemalloc
from ._torch_names import object_repr as _object_repr

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "EventList", "FunctionEvent", "FunctionEventAvg", "tensorboard_trace_handler"]

_active_profilers: list = []     # profilers started and not stopped, innermost last


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


# -- op names ------------------------------------------------------------------------------------

# Public names whose PyTorch op has another aten name.
_RENAMED = {"cross_entropy": "cross_entropy_loss", "nll_loss": "nll_loss_nd",
            "norm": "linalg_vector_norm", "__setitem__": "copy_",
            **{name: "to" for name in ("float", "double", "half", "bfloat16", "int", "long",
                                       "short", "char", "byte", "bool")}}

# Public calls that are no op in PyTorch (metadata, hooks; F.normalize is Python there, its ops
# are the events): no event of their own.
_NO_EVENT = frozenset(("is_contiguous", "is_conj", "is_neg", "is_signed", "is_floating_point",
                       "is_complex", "is_tensor", "is_storage", "contiguous", "register_hook",
                       "register_post_accumulate_grad_hook", "normalize", "typename",
                       "broadcast_shapes", "get_default_dtype"))

_event_names: dict = {}         # public name -> event name, or None for no event


def _dispatch_only(name) -> bool:
    """Whether `name` is a Tensor method behind an entry only to dispatch (_public_calls), and
    no public function of that name has one of its own."""
    import tapegrad
    from ._public_calls import DISPATCH_ONLY_METHODS
    return name in DISPATCH_ONLY_METHODS and not hasattr(tapegrad, name)


def _event_name(name):
    found = _event_names.get(name, False)
    if found is False:
        if "::" in name:                # (the core's own: a backward engine's event)
            found = name
        elif _dispatch_only(name):
            found = None                # (a Tensor method's entry made only to dispatch)
        else:
            found = None if name in _NO_EVENT else "aten::" + _RENAMED.get(name, name)
        _event_names[name] = found
    return found


def _index_event_name(key, value=None, writing=False):
    """PyTorch's op of x[key] (aten::select, aten::slice, aten::index ...) or of x[key] = value
    (aten::fill_, aten::copy_, aten::index_put_): one name for the whole expression."""
    from ._core import TensorBase
    parts = key if type(key) is tuple else (key,)
    advanced = any(not isinstance(p, (int, slice)) and p is not None and p is not Ellipsis
                   or isinstance(p, bool) for p in parts)
    if writing:
        if advanced:
            return "aten::index_put_"
        return "aten::copy_" if isinstance(value, TensorBase) else "aten::fill_"
    if advanced:
        return "aten::index"
    if any(isinstance(p, slice) for p in parts):
        return "aten::slice"
    if any(isinstance(p, int) for p in parts):
        return "aten::select"
    return "aten::unsqueeze" if any(p is None for p in parts) else "aten::alias"


def _inside_counted_op(event) -> bool:
    # An op nested in one whose FLOPs are counted (x @ y's inner matmul, addmm's add): its work
    # is already in that count.
    while event is not None:
        if event.flops:
            return True
        event = event.cpu_parent
    return False


def _shape_of(x, tensor_type):
    return list(x.shape) if isinstance(x, tensor_type) else []


# -- the hooks the compiled core calls while a profiler records ----------------------------------

def _op_open(name, operands):
    """The event of a public call `name` with `operands` (None: a backward node, `name` its
    grad_fn name): a token for _op_close."""
    if operands is None:
        names = ("autograd::engine::evaluate_function: " + name, name)
    elif name == "__getitem__":
        names = (_index_event_name(operands[1]),)
    elif name == "__setitem__":
        names = (_index_event_name(operands[1], operands[2], True),)
    else:
        key = _event_name(name)
        if key is None:
            return None
        names = (key,)
    opened = []
    for profiler in _active_profilers:
        if profiler._recording:
            for key in names:
                opened.append((profiler, profiler._open(key, operands, "cpu_op")))
    return opened


def _op_close(token, result=None):
    """Close what _op_open opened (innermost first); `result` is the op's (None for a backward
    node or a failed call): what a FlopCounterMode, which listens as a profiler, reads."""
    if token:
        end = _now_us()
        for profiler, event in reversed(token):
            profiler._close(event, end, result)


class _OpEvent:
    """The event of an op written in Python (the generic in-place methods, x.exp_()), as the
    core's hooks make them for its own (tapegrad/_profiling.py op_event)."""

    def __init__(self, name, operands):
        self.name = name
        self.operands = operands
        self.token = None
        self.result = None          # (the op's result, set by a caller that has one to give)

    def __enter__(self):
        self.token = _op_open(self.name, self.operands)
        return self

    def __exit__(self, *exc):
        _op_close(self.token, self.result)
        return False


def _sync_hooks():
    """Give the compiled core the hooks while some profiler records, take them back after."""
    from . import _core, _profiling
    _profiling.RECORDING = any(p._recording for p in _active_profilers)
    if _profiling.RECORDING:
        _core._set_profiler(_op_open, _op_close)
    else:
        _core._set_profiler(None, None)


# -- events --------------------------------------------------------------------------------------

class Interval:
    """An event's start and end, microseconds."""

    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        return self.end - self.start


class _Figures:
    """What an event and an average of events share: their times as the table prints them, and
    torch's device figures, zeros (there is no device), so that sort_by="cuda_time_total" sorts
    as it does on a CPU-only PyTorch.  The CPU memory figures stay 0 unless the profile measures
    memory (profile_memory=True)."""
    device_time_total = self_device_time_total = device_time = 0.0
    device_memory_usage = self_device_memory_usage = 0
    flops = 0

    @property
    def cpu_time_str(self):
        return _format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self):
        return _format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self):
        return _format_time(self.self_cpu_time_total)


class FunctionEvent(_Figures):
    """One event: an op call, a backward node or a record_function block, with the events opened
    inside it (cpu_children) and the one it was opened in (cpu_parent)."""

    def __init__(self, id, name, start_us, parent, input_shapes, category, thread):
        self.id = id
        self.name = self.key = name
        self.time_range = Interval(start_us, start_us)
        self.cpu_parent = parent
        self.cpu_children = []
        self.input_shapes = input_shapes
        self.category = category            # "cpu_op" or "user_annotation" (Chrome trace's cat)
        self.thread = thread
        self.count = 1
        self.is_async = False
        self.is_user_annotation = category == "user_annotation"
        self.stack = []
        self.cpu_memory_usage = 0           # bytes allocated less bytes freed while it ran
        self._traced_at_open = 0

    @property
    def cpu_time_total(self):
        """Wall time of the event, microseconds."""
        return self.time_range.end - self.time_range.start

    @property
    def self_cpu_time_total(self):
        """Wall time of the event minus the events opened in it, microseconds."""
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    cpu_time = cpu_time_total

    @property
    def self_cpu_memory_usage(self):
        """cpu_memory_usage minus the events opened in it, bytes."""
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_str} "
                f"start_us={self.time_range.start:.3f} end_us={self.time_range.end:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg(_Figures):
    """The events of one key (and input shapes, when grouped so), aggregated: what
    key_averages lists."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.input_shapes = None
        self.cpu_parent = None
        self.cpu_children = None
        self.is_async = False
        self.is_user_annotation = False
        self.stack = None
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0

    def add(self, other):
        """Accumulate one event (or average) of this key."""
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.is_user_annotation = other.is_user_annotation
        elif other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {other.key} vs {self.key}")
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.flops += other.flops
        return self

    def __iadd__(self, other):
        return self.add(other)

    @property
    def cpu_time(self):
        """Average wall time per call, microseconds."""
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes or ''}>")


_FLOP_UNITS = ("FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs")


def _format_time(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_memory(nbytes):
    # torch's units: B, then KB / MB / GB with two decimals (a negative size frees)
    for unit, size in (("GB", 1024 ** 3), ("MB", 1024 ** 2), ("KB", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _format_share(part, total):
    if total == 0:
        return "NaN"
    return f"{part * 100.0 / total:.2f}%"


class EventList(list):
    """A list of events (or of their averages) with torch's summary table; from a profile that
    measured memory, the table has torch's "CPU Mem" and "Self CPU Mem" columns, from one that
    counted FLOPs (with_flops) a "Total FLOPs" column when some event has any."""

    def __init__(self, events=(), profile_memory=False, with_flops=False):
        super().__init__(events)
        self._profile_memory = profile_memory
        self._with_flops = with_flops

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False,
              time_unit=None):
        """The summary table as a string, torch's layout; ``sort_by`` an attribute such as
        "cpu_time_total", "self_cpu_time_total", "cpu_time" or "count" (descending);
        ``row_limit`` rows at most; ``top_level_events_only``: only events opened in none."""
        events = list(self)
        if not events:
            return ""
        if sort_by is not None:
            key = sort_by.replace("cuda", "device").replace("xpu", "device").replace(
                "privateuse1", "device").replace("cpu_time_avg", "cpu_time")
            events.sort(key=lambda e: getattr(e, key), reverse=True)
        name_width = max(len(e.key) for e in events) + 4
        if max_name_column_width is not None:
            name_width = min(name_width, max_name_column_width)
        has_shapes = any(e.input_shapes for e in events)
        shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
        if max_shapes_column_width is not None:
            shapes_width = min(shapes_width, max_shapes_column_width)
        headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
        if self._profile_memory:
            headers += ["CPU Mem", "Self CPU Mem"]
        headers.append("# of Calls")
        widths = [name_width] + [12] * (len(headers) - 1)
        if has_shapes:
            headers.append("Input Shapes")
            widths.append(shapes_width)
        counted = [e.flops for e in events if e.flops > 0] if self._with_flops else []
        if counted:
            # one unit for the column, the one of its smallest count (FLOPs, KFLOPs, ...)
            power = min(int(math.log10(min(counted)) / 3), len(_FLOP_UNITS) - 1)
            headers.append(f"Total {_FLOP_UNITS[power]}")
            widths.append(12)

        def line(cells):
            return "".join(f"{str(c):>{w}}  " for c, w in zip(cells, widths))

        rule = "".join("-" * w + "  " for w in widths)
        total = sum(e.self_cpu_time_total for e in events)

        def shown(us):
            if time_unit == "s":
                return f"{us / 1e6:.3f}s"
            if time_unit == "ms":
                return f"{us / 1e3:.3f}ms"
            if time_unit == "us":
                return f"{us:.3f}us"
            return _format_time(us)

        out = []
        if header is not None:
            out += ["=" * len(rule), header]
        if top_level_events_only:
            out += ["=" * len(rule), "This report only display top-level ops statistics"]
        out += [rule, line(headers), rule]
        rows = 0
        for e in events:
            if rows == row_limit:
                break
            if top_level_events_only and e.cpu_parent is not None:
                continue
            rows += 1
            name = e.key
            if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
                name = name[:max_name_column_width - 3] + "..."
            cells = [name, _format_share(e.self_cpu_time_total, total),
                     shown(e.self_cpu_time_total), _format_share(e.cpu_time_total, total),
                     shown(e.cpu_time_total), shown(e.cpu_time)]
            if self._profile_memory:
                cells += [_format_memory(e.cpu_memory_usage),
                          _format_memory(e.self_cpu_memory_usage)]
            cells.append(e.count)
            if has_shapes:
                cells.append(str(e.input_shapes)[:shapes_width])
            if counted:
                cells.append(f"{e.flops / 1000 ** power:8.3f}" if e.flops > 0 else "--")
            out.append(line(cells))
        out.append(rule)
        out.append(f"Self CPU time total: {shown(total)}")
        return "\n".join(out) + "\n"

    def __str__(self):
        return self.table()

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """The events aggregated by key (and input shapes), in order of first appearance."""
        groups = {}
        for event in self:
            key = (event.key, str(event.input_shapes)) if group_by_input_shape else event.key
            average = groups.get(key)
            if average is None:
                average = groups[key] = FunctionEventAvg()
            average.add(event)
        if not group_by_input_shape:
            # PyTorch blanks the shapes of an average not grouped by them: they would be the first
            # call's shapes only, and the table then has no Input Shapes column.
            for average in groups.values():
                average.input_shapes = ""
        return EventList(groups.values(), self._profile_memory, self._with_flops)

    def total_average(self):
        """All the events as one average, key "Total"."""
        total = FunctionEventAvg()
        for event in self:
            total.count += event.count
            total.cpu_time_total += event.cpu_time_total
            total.self_cpu_time_total += event.self_cpu_time_total
            total.cpu_memory_usage += event.cpu_memory_usage
            total.self_cpu_memory_usage += event.self_cpu_memory_usage
            total.flops += event.flops
        total.key = "Total"
        return total

    @property
    def self_cpu_time_total(self):
        """Sum of the events' self times, microseconds."""
        return sum(e.self_cpu_time_total for e in self)

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace (chrome://tracing, Perfetto) JSON file."""
        pid = os.getpid()
        trace = []
        for e in self:
            item = {"ph": "X", "cat": e.category, "name": e.name, "pid": pid, "tid": e.thread,
                    "ts": e.time_range.start, "dur": e.cpu_time_total}
            if e.input_shapes:
                item["args"] = {"Input Dims": e.input_shapes}
            trace.append(item)
        with open(path, "w") as handle:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, handle)


def _now_us():
    return time.perf_counter_ns() / 1e3


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


class profile:
    """Context manager recording the ops and record_function blocks run inside it (see the module
    doc); torch.profiler.profile and torch.autograd.profiler.profile.

    ``record_shapes`` keeps each op's input shapes; ``with_flops`` sets each op event's ``flops``
    by PyTorch's formulas (tapegrad/_profiler_flops.py); ``profile_memory`` sets each event's
    ``cpu_memory_usage``, the bytes allocated less the bytes freed while it ran, as tracemalloc
    counts them (tensor data, which numpy reports to it, and the Python objects made: a view
    shows a few hundred bytes where PyTorch shows 0; memory allocated before the profile started
    counts nothing when freed), and gives the table its memory columns; ``activities``,
    ``with_stack``... are accepted for signature parity; CUDA activity cannot be recorded (there
    is no device).  With ``schedule``, only steps the schedule marks RECORD / RECORD_AND_SAVE are
    recorded (``step()`` advances), each step a "ProfilerStep*" block, and
    ``on_trace_ready(prof)`` is called at each RECORD_AND_SAVE step's end (and at the end of a
    profile that records when it stops), each active cycle's events replacing the last's."""
    _torch_module = "torch.profiler.profiler"  # where PyTorch defines it (its default repr names it)
    __repr__ = _object_repr

    def __init__(self, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False,
                 use_cuda=None, enabled=True, **kwargs):
        self.enabled = enabled
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes = bool(record_shapes)
        self.with_flops = bool(with_flops)
        self.profile_memory = bool(profile_memory)
        self._started_tracing = False     # (whether stop() ends the tracemalloc trace)
        self.step_num = 0
        self._events = []         # every event opened, in order of opening
        self._stacks = {}         # thread id -> its open events, innermost last
        self._recording = False
        self._step_block = None   # the record_function of the step running (with a schedule)
        self.acc_events = acc_events

    def _action(self):
        return ProfilerAction.RECORD if self.schedule is None else self.schedule(self.step_num)

    def start(self):
        """Begin recording (what entering the ``with`` block does)."""
        if self.enabled:
            if self.profile_memory and not tracemalloc.is_tracing():
                tracemalloc.start()
                self._started_tracing = True
            _active_profilers.append(self)
            self._recording = self._action() in _RECORDING
            _sync_hooks()
            self._enter_step()
        return self

    def stop(self):
        """End recording (what leaving the ``with`` block does); events still open (an
        exception left them) end now, and a trace being recorded is handed to on_trace_ready."""
        self._exit_step()
        was_recording = self._recording
        if self in _active_profilers:
            _active_profilers.remove(self)
        self._recording = False
        _sync_hooks()
        end = _now_us()
        for stack in self._stacks.values():
            for event in stack:
                event.time_range.end = end
                self._measure_memory(event)
        self._stacks.clear()
        if self._started_tracing:
            tracemalloc.stop()
            self._started_tracing = False
        if was_recording and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def step(self):
        """Mark the end of a training step: advance the schedule; at the end of an active cycle
        (RECORD_AND_SAVE) hand the trace to on_trace_ready, and a new cycle's recording starts
        with no events (unless acc_events)."""
        self._exit_step()
        previous = self._action()
        if previous is ProfilerAction.RECORD_AND_SAVE and self._recording:
            self._recording = False
            _sync_hooks()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        self.step_num += 1
        recording = self.enabled and self in _active_profilers and self._action() in _RECORDING
        if recording and previous is not ProfilerAction.RECORD and not self.acc_events:
            self._events = []
            self._stacks.clear()
        self._recording = recording
        _sync_hooks()
        self._enter_step()

    def _enter_step(self):
        # With a schedule, each step is a block of its own (PyTorch's "ProfilerStep#<n>", which
        # its events list as "ProfilerStep*").
        if self.schedule is not None and self._recording:
            self._step_block = record_function("ProfilerStep*").__enter__()

    def _exit_step(self):
        if self._step_block is not None:
            self._step_block.__exit__(None, None, None)
            self._step_block = None

    def _open(self, name, operands=None, category="user_annotation"):
        thread = threading.get_ident()
        stack = self._stacks.get(thread)
        if stack is None:
            stack = self._stacks[thread] = []
        parent = stack[-1] if stack else None
        shapes = []
        if self.record_shapes and operands:
            from ._core import TensorBase
            shapes = [_shape_of(x, TensorBase) for x in operands]
        event = FunctionEvent(len(self._events), name, _now_us(), parent, shapes, category,
                              thread)
        if self.profile_memory:
            event._traced_at_open = tracemalloc.get_traced_memory()[0]
        if self.with_flops and operands and not _inside_counted_op(parent):
            from ._profiler_flops import op_flops
            event.flops = op_flops(name, operands)
        if parent is not None:
            parent.cpu_children.append(event)
        stack.append(event)
        self._events.append(event)
        return event

    def _close(self, event, end=None, result=None):
        event.time_range.end = _now_us() if end is None else end
        self._measure_memory(event)
        stack = self._stacks.get(event.thread)
        if stack and event in stack:
            while stack.pop() is not event:     # (events an exception left open end here)
                pass

    def _measure_memory(self, event):
        if self.profile_memory and tracemalloc.is_tracing():
            event.cpu_memory_usage = tracemalloc.get_traced_memory()[0] - event._traced_at_open

    @property
    def function_events(self):
        """Every event recorded, in order of start (torch.autograd.profiler.profile's)."""
        return EventList(self._events, self.profile_memory, self.with_flops)

    def events(self):
        """Every event recorded, in order of start (torch.profiler.profile's)."""
        return self.function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """The events aggregated by name (and input shapes), in order of first appearance."""
        return self.function_events.key_averages(group_by_input_shape)

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace (chrome://tracing, Perfetto) JSON file."""
        self.function_events.export_chrome_trace(path)

    def table(self, **kwargs):
        """Shorthand for key_averages().table(...)."""
        return self.key_averages().table(**kwargs)


class record_function:
    """Label a block (context manager) or every call of a function (decorator) for `profile`."""
    _torch_module = "torch.autograd.profiler"  # where PyTorch defines it (its default repr names it)
    __repr__ = _object_repr

    def __init__(self, name, args=None):
        self.name = name
        self._opened = []

    def __enter__(self):
        self._opened = [(p, p._open(self.name)) for p in _active_profilers if p._recording]
        return self

    def __exit__(self, *exc):
        for profiler, event in reversed(self._opened):
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
    import socket

    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        prof.export_chrome_trace(os.path.join(
            dir_name, f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json"))
    return handler
