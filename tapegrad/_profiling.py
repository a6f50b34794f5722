"""Whether a profiler records: what the Python-level labels PyTorch puts on its profiles ask
(an optimizer's step and zero_grad, a custom Function's forward) before they label anything.
tapegrad.profiler is loaded on first use, so until then the answer is one sys.modules lookup."""
from __future__ import annotations

import contextlib
import sys

_PROFILER = f"{__package__}.profiler"


def recording_profiler():
    """tapegrad.profiler while one of its profilers is active, else None."""
    profiler = sys.modules.get(_PROFILER)
    return profiler if profiler is not None and profiler._active_profilers else None


NO_LABEL = contextlib.nullcontext()     # (reusable: what label() gives when none records)


def label(name):
    """A record_function(name) block while a profiler records, else a do-nothing context."""
    profiler = recording_profiler()
    return NO_LABEL if profiler is None else profiler.record_function(name)


def op_event(name, self, args):
    """The profiler's event of a Python-level op self.<name>(*args) (named as the core names
    its ops: aten::<name>) while a profiler records, else a do-nothing context."""
    profiler = recording_profiler()
    return NO_LABEL if profiler is None else profiler._OpEvent(name, (self, *args))
