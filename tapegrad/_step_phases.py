"""A whole training step under tapegrad.compile: backward(), zero_grad(), gradient clipping and
the optimizer's and scheduler's step() inside the compiled function.

    @tapegrad.compile
    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        return loss

These calls are not ops of the function's graph: they act on the autograd state (.grad), on
the optimizer's parameters and state, on its learning rates.  While a capture runs, the
library's own methods hand them to `note` (Tensor.backward through _core's route; Optimizer's
and Module's zero_grad; every optimizer class's step wrapper and every scheduler class's step;
clip_grad_norm_ and clip_grad_value_): each runs eagerly with the capture suspended (the
gradients and optimizer state it makes are not steps of the call) and is noted as a phase.  A
replay runs the captured forward in C, then the phases in their order, as the same calls on the
same objects (ReplayPlan.phases, src/tapegrad/replay.pxi):

  - Tensor.backward on the replayed root: the Program's reverse sweep, whose gradients the
    tape accumulates into each .grad exactly as eager's backward does (None or zeros after
    zero_grad(set_to_none=True/False), a sum over calls without one);
  - zero_grad, the clipping and an optimizer's step: the library's own code, the optimizer's
    per-parameter kernels (SGD's, Adam's, ...) - one code path, eager's.  The step reads lr,
    momentum, betas from its param groups and the step counters and moments from its state at
    every call, so a learning-rate scheduler between calls, a parameter added to a group or a
    .grad changed outside the function are what eager would see; the moments (exp_avg,
    momentum_buffer) live in the optimizer and are updated in place;
  - Module.train()/eval(), `tensor.grad = None` (a hand-written zero_grad) and a GradScaler's
    unscale_, step and update (tapegrad/amp.py): the same calls again.

What the phases rely on, checked when the plan is built (otherwise the function stays eager,
with the reason in explain()): the forward reads no .grad (its replay runs before the phases,
so a zero_grad() written before the forward may run after it); no op runs and no value is read
from the first backward() on (the forward is replayed whole before the phases: an op after
step() would read the old parameters); zero_grad and backward are the library's (a subclass's
override calling super() would be noted from inside, its own code skipped); a clipping is given
a module's parameters(), and its total norm is not returned.  The objects the phases act on are
what the function reads by name: Modules and optimizers are guarded by identity (replay.py's
_environment), so another one bound to the name is a new capture.
"""
from __future__ import annotations as _annotations

import sys

from . import _core
from .tensor import Tensor

BACKWARD, ZERO_GRAD, STEP = "backward", "zero_grad", "step"
# Module.train (and eval, which calls it): the forward a replay runs was recorded in the modes
# the capture saw, so only the flags' end state is the phase's work; without it a replayed
# `model.eval()` inside the function left the model in training mode after the call
MODE = "train"
# `tensor.grad = None` (a hand-written zero_grad: `for p in model.parameters(): p.grad = None`):
# a replay clears it again, before the backward as eager does; a tensor assigned to .grad
# keeps the function eager instead (_core's grad setter)
GRAD_NONE = "grad = None"
# (any other kind: a function of tapegrad.nn.utils that rewrites gradients in place, by its
# public name: clip_grad_norm_, clip_grad_value_; its target the tuple of parameters)


class Phase:
    """One call noted during a capture: `kind`, the unrouted method `fn`, its object `target`
    (the root tensor for a backward), its arguments, and how far the capture had got."""
    __slots__ = ("kind", "fn", "target", "args", "kwargs", "n_steps", "n_created", "n_reads",
                 "grads", "result")

    def __init__(self, kind, fn, target, args, kwargs, capture):
        self.kind, self.fn, self.target, self.args, self.kwargs = kind, fn, target, args, kwargs
        self.n_steps = len(capture.steps)
        self.n_created = len(capture.created)
        self.n_reads = len(capture.reads)
        self.grads = []
        self.result = None

    def describe(self) -> str:
        if self.kind == BACKWARD:
            return "backward()"
        if self.kind == GRAD_NONE:
            return ".grad = None"
        if self.kind not in (ZERO_GRAD, STEP) and isinstance(self.target, tuple):
            return f"{self.kind}()"         # (a clipping of parameters)
        return f"{type(self.target).__name__}.{self.kind}()"


class StepPhases:
    """ReplayPlan.phases: called with the replayed value, (fn's return value, root 0, root 1,
    ...), runs the phases and returns fn's return value."""
    __slots__ = ("calls", "names")

    def __init__(self, phases, roots):
        index = {id(t): i for i, t in enumerate(roots)}
        # (fn, root index or -1, target, args, kwargs): the target held for the optimizer and
        # module calls (the environment guard checks the function still reaches the same one)
        self.calls = tuple((p.fn, index[id(p.target)] if p.kind == BACKWARD else -1,
                            None if p.kind == BACKWARD else p.target, p.args, p.kwargs)
                           for p in phases)
        self.names = tuple(p.describe() for p in phases)

    def __call__(self, value):
        for fn, root, target, args, kwargs in self.calls:
            fn(value[root + 1] if root >= 0 else target, *args, **kwargs)
        return value[0]


# -- noting the calls during a capture -------------------------------------------------------------
# The library's own methods call `note` while a capture runs (noting is not None): an optimizer's
# step wrapper (tapegrad/optim/optimizer.py's hooked_step, which wraps every class's step, a
# script's subclass's too, and is what a scheduler's wrapper of opt.step calls), Optimizer's and
# Module's zero_grad, and Tensor.backward (through _core's route).  A call made inside a phase
# (a subclass's super().step()) runs plainly: the capture is suspended then.

noting = None       # the _Noted phases of the capture running now (one at a time), or None


class _Noted(list):
    """The phases of a capture, and why any call could not be one."""

    def __init__(self, watch=None):
        super().__init__()
        self.refusals = []
        # the capture's watch on the Python state the function reads (replay.py's
        # _PythonState): what a phase changes (the flags train() sets, the lr a scheduler's
        # step writes into the param groups) is the phase's work, which a replay does again,
        # so the watch looks before each phase and takes its snapshots again after it
        self.watch = watch


def _holds_tensor(obj) -> bool:
    if isinstance(obj, _core.TensorBase):
        return True
    if isinstance(obj, (tuple, list)):
        return any(_holds_tensor(o) for o in obj)
    if isinstance(obj, dict):
        return any(_holds_tensor(o) for o in obj.values())
    return callable(obj)


def _refusal(kind, target, args, kwargs, own) -> str | None:
    """Why this call cannot be a phase, or None.  `own`: the library's method, which the
    target's class must not override (zero_grad, backward: an override calling super() would
    be noted from inside, and a replay would skip the rest of its code).  A step needs no such
    test: its wrapper is the class's outermost step, the script's own code included."""
    if own is not None and getattr(type(target), kind, None) is not own:
        return (f"it calls {type(target).__name__}.{kind}(), which overrides the library's "
                f"(a replay would skip its code)")
    if _holds_tensor(args) or _holds_tensor(kwargs):
        return (f"it calls {kind}() with a tensor or a callable argument (a gradient, inputs=, "
                "a closure), which a replay does not feed")
    if kind == BACKWARD and kwargs.get("create_graph"):
        return "it calls backward(create_graph=True) (a replay does not record its backward)"
    return None


def _params_of(target):
    """The parameters a zero_grad() or step() of `target` (or a clipping of the parameters
    `target`) acts on."""
    if isinstance(target, tuple):
        return target
    if isinstance(target, _core.TensorBase):     # (.grad = None's; a backward's root is none)
        return (target,) if target.is_leaf else ()
    if hasattr(target, "param_groups"):
        return [p for g in target.param_groups for p in g["params"]]
    if hasattr(target, "parameters"):
        return list(target.parameters())
    return []


def _grads_of(target):
    """The .grad tensors a phase on `target` reads or writes."""
    return [p.grad for p in _params_of(target)
            if isinstance(p, _core.TensorBase) and p.grad is not None]


def note(kind, fn, target, args, kwargs, own=None):
    """fn(target, *args, **kwargs), noted as a phase of the capture running on this thread (run
    plainly on another thread, or inside a phase)."""
    noted = noting
    cap = _core._capture_suspend() if noted is not None else None
    if cap is None:
        return fn(target, *args, **kwargs)
    try:
        why = _refusal(kind, target, args, kwargs, own)
        if why is not None:
            noted.refusals.append(why)
        phase = Phase(kind, fn, target, args, kwargs, cap)
        phase.grads.extend(_grads_of(target))
        if noted.watch is not None:
            noted.watch.before_phase()
        result = phase.result = fn(target, *args, **kwargs)
        if noted.watch is not None:
            noted.watch.after_phase()
        phase.grads.extend(_grads_of(target))
        noted.append(phase)
        return result
    finally:
        _core._capture_resume(cap)


def parameters_of(parameters):
    """A clipping's `parameters` (a tensor, a list, usually a generator) as the tuple a phase
    holds: the generator is spent by the capture's own call."""
    if isinstance(parameters, _core.TensorBase):
        return (parameters,)
    return tuple(parameters)


def _noted_backward(tensor, gradient, retain_graph, create_graph, inputs):
    kwargs = {k: v for k, v in (("gradient", gradient), ("retain_graph", retain_graph),
                                ("create_graph", create_graph), ("inputs", inputs))
              if v is not None and v is not False}
    return note(BACKWARD, _core.TensorBase.backward, tensor, (), kwargs, Tensor.backward)


def _clear_grad(tensor):
    tensor.grad = None


def _noted_grad_none(tensor):
    if not tensor.is_leaf:
        # (a tensor the call made: the replay's is another one, whose .grad a phase holding
        # the capture's could not clear)
        noting.refusals.append("it sets .grad = None on a tensor that is not a leaf")
    note(GRAD_NONE, _clear_grad, tensor, (), {})


def begin(watch=None):
    """Start noting phases (a capture begins); returns the list they are noted in.  `watch`:
    see _Noted."""
    global noting
    noting = _Noted(watch)
    _core._set_step_phase_route(_noted_backward, _noted_grad_none)
    return noting


def end():
    global noting
    noting = None
    _core._set_step_phase_route(None)


# -- building the plan ---------------------------------------------------------------------------

class Unphased(Exception):
    """Why a capture's phases cannot be replayed (the function stays eager)."""


def _tensors_in(value, out):
    if isinstance(value, _core.TensorBase):
        out.append(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _tensors_in(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _tensors_in(v, out)
    return out


def plan_value(capture, result, noted, effects, reached=()):
    """fn's return value as the plan returns it: `result` itself when the call made no phase,
    else (result, root 0, ...) with the backward roots, so that the Program returns them too.
    Raises Unphased when the phases cannot follow a replayed forward.  `reached`: the objects
    the function reads (replay.py's _environment), whose Modules are guarded."""
    if noted.refusals:
        raise Unphased("; ".join(dict.fromkeys(noted.refusals)))
    if not noted:
        return result, ()
    made = {id(p.result) for p in noted if isinstance(p.result, _core.TensorBase)}
    if any(id(t) in made for t in _tensors_in(result, [])):
        raise Unphased("it returns what a phase returns (clip_grad_norm_'s total norm), which "
                       "a replay does not make")
    from .nn.modules.module import Module
    guarded = [tuple(m.parameters()) for m in reached if isinstance(m, Module)]
    for p in noted:
        if isinstance(p.target, tuple) and not any(
                len(g) == len(p.target) and all(a is b for a, b in zip(g, p.target))
                for g in guarded):
            raise Unphased(f"it calls {p.kind}() on parameters other than a module's "
                           "parameters() (a replay could not see that list change)")
    # (zero_grad, `.grad = None` and train/eval may come before the forward's ops: their
    # replays after it change nothing the forward reads - it reads no .grad, and its modes are
    # recorded)
    first = next((i for i, p in enumerate(noted) if p.kind not in (ZERO_GRAD, MODE, GRAD_NONE)),
                 len(noted))
    n_steps, n_created, n_reads = len(capture.steps), len(capture.created), len(capture.reads)
    for p in noted[first:]:
        if (p.n_steps, p.n_created, p.n_reads) != (n_steps, n_created, n_reads):
            raise Unphased(f"it runs ops or reads values after {noted[first].describe()} (a "
                           "replay runs the whole forward before backward() and the "
                           "optimizer's step)")
    # (the forward's in-place writes into module buffers - BatchNorm's num_batches_tracked -
    # come after the replayed forward and before the phases, as in eager, unless a phase acts
    # on what they write)
    written = {id(e[4]) for e in effects}
    if any(id(q) in written for p in noted for q in _params_of(p.target)):
        raise Unphased("it writes in place into a tensor an optimizer or a clipping acts on "
                       "(a replay performs such writes after its forward)")
    roots = []
    for p in noted:
        if p.kind == BACKWARD and not any(p.target is r for r in roots):
            roots.append(p.target)
    return (result, *roots), roots


def check_externals(noted, externals) -> None:
    """Raises Unphased if the forward reads a .grad the phases read or write (the replay runs
    the whole forward before them, so a zero_grad() written before it would come too late)."""
    grads = {id(g) for p in noted for g in p.grads}
    if any(id(t) in grads for t in externals):
        raise Unphased("it reads a .grad in its forward (a replay runs zero_grad(), "
                       "backward() and step() after the whole forward)")
