"""Whether a profiler records: what the Python-level ops and labels ask (a generic in-place
method, an optimizer's step and zero_grad, a custom Function's forward) before they make an event.
tapegrad.profiler is loaded on first use and sets RECORDING while one of its profilers is
active (the compiled core has its own flag), so until then the answer is one attribute read."""
from __future__ import annotations as _annotations

import contextlib
import sys

RECORDING = False               # set by tapegrad.profiler (_sync_hooks)

_PROFILER = f"{__package__}.profiler"


def recording_profiler():
    """tapegrad.profiler while one of its profilers is active, else None."""
    return sys.modules[_PROFILER] if RECORDING else None


NO_LABEL = contextlib.nullcontext()     # (reusable: what label() gives when none records)


def label(name):
    """A record_function(name) block while a profiler records, else a do-nothing context."""
    return profiler.record_function(name) if (profiler := recording_profiler()) else NO_LABEL


def op_event(name, self, args):
    """The profiler's event of a Python-level op self.<name>(*args) (named as the core names
    its ops: aten::<name>); callers test RECORDING first (a `with` costs ~200 ns)."""
    return sys.modules[_PROFILER]._OpEvent(name, (self, *args))


def kernel_event(name, operands):
    """The profiler's event of a kernel PyTorch runs as one aten op where tapegrad composes it
    (aten::_transformer_encoder_layer_fwd), with `operands`, or a do-nothing context when none
    records (FlopCounterMode reads the name: such a kernel counts as PyTorch's registry says)."""
    profiler = recording_profiler()
    return profiler._OpEvent(name, operands) if profiler is not None else NO_LABEL
