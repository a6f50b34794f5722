"""torch.compiler: the user-facing controls of compilation, over tapegrad.compile (capture on the
first call, replay in C afterwards; see tapegrad.replay).

``is_compiling()`` is True while a compiled function's capture runs (its first call, or a
recapture), as PyTorch's is True while Dynamo traces: code that branches on it is captured with
the True branch.  ``disable(fn)`` keeps ``fn`` out of compiled code: a compiled function that
calls it is not replayed but runs eagerly on every call (PyTorch breaks the graph around it; the
results are the same).  ``reset()`` forgets every capture.
"""
from __future__ import annotations as _annotations

import functools

from . import _compile_stance, replay
from .replay import compile, current_capture, reset_all

__all__ = ["compile", "reset", "disable", "is_compiling", "is_dynamo_compiling", "is_exporting",
           "allow_in_graph", "assume_constant_result", "list_backends", "set_stance",
           "cudagraph_mark_step_begin"]


def is_compiling() -> bool:
    """Whether the running code is being captured by tapegrad.compile."""
    return current_capture() is not None


def is_dynamo_compiling() -> bool:
    """The same as is_compiling(): tapegrad's capture is its Dynamo."""
    return is_compiling()


def is_exporting() -> bool:
    """False: tapegrad has no torch.export."""
    return False


def reset() -> None:
    """Forget every compiled function's captures; each captures again on its next call."""
    reset_all()


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """Keep ``fn`` (a function or method; usable as a decorator, with or without arguments) out
    of compiled code: a compiled function that calls it runs eagerly instead of replaying.
    ``recursive`` and ``reason`` are accepted as PyTorch takes them (``reason`` shows in
    ``explain()``)."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)
    why = (f"it calls {getattr(fn, '__name__', fn)}, which torch.compiler.disable keeps out of "
           "compiled code" + (f" ({reason})" if reason else ""))

    @functools.wraps(fn)
    def run_eagerly(*args, **kwargs):
        capture = current_capture()
        if capture is None:
            return fn(*args, **kwargs)
        capture.unsupported.append(why)
        # fn runs as outside compiled code: is_compiling() is False inside it.
        replay._capture_state.capture = None
        try:
            return fn(*args, **kwargs)
        finally:
            replay._capture_state.capture = capture

    run_eagerly._torchdynamo_disable = True
    return run_eagerly


def allow_in_graph(fn):
    """``fn`` itself: whatever tensor ops it runs are captured with the rest of the call."""
    return fn


def assume_constant_result(fn):
    """``fn`` itself: the capture runs it once and keeps what its result led to; a replay checks
    the guards a capture records, not ``fn``."""
    return fn


def set_stance(stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
               force_backend=None):
    """Set how compiled functions behave: "default", "force_eager" (run them eagerly),
    "eager_then_compile" (the first call eagerly), "eager_on_recompile" (run eagerly where
    torch.compile would compile again), "fail_on_recompile" (raise there).  Usable as a
    function call, a context manager or a decorator (tapegrad/_compile_stance.py)."""
    return _compile_stance.set_stance(stance, skip_guard_eval_unsafe=skip_guard_eval_unsafe,
                                      force_backend=force_backend)


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The backends tapegrad.compile accepts by name (all run the one replay backend)."""
    return ["inductor"]


def cudagraph_mark_step_begin() -> None:
    """Nothing to mark: tapegrad records no CUDA graphs (it computes on the CPU only)."""
