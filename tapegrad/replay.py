"""`tapegrad.compile(fn)`: record a call once, replay it in C on new values.

    @tapegrad.compile
    def loss_fn(x, y):
        return ((model_w * x + model_b - y) ** 2).mean()

    for x, y in batches:
        opt.zero_grad()
        loss = loss_fn(x, y)        # first call: eager, captured; later calls: replayed
        loss.backward()             # the captured reverse sweep, .grad as eager gives it
        opt.step()                  # parameters are read in place each call

The whole training step may be compiled too (`opt.zero_grad(); loss = ...; loss.backward();
clip_grad_norm_(model.parameters(), c); opt.step(); sched.step()` in one function): backward(),
zero_grad(), gradient clipping and the optimizer's and scheduler's steps are phases a replay
runs after its forward, as the same calls on the same objects (tapegrad/_step_phases.py).

The first call with a given signature (the tensor arguments' shapes, dtypes and requires_grad,
which arguments are the same tensor, the other arguments' values, grad mode) runs `fn` eagerly
and captures its ops (src/tapegrad/capture.pxi).  Every public op of the library is captured:
the elementwise ops and reductions that have C replay kernels as C steps, ops that register a
replay step (linear, softmax, log_softmax, nll_loss; cross_entropy as the last two) as that step
(their forward on the slots' arrays, their own VJP: no tensor, no record), any other op as a step
that re-runs it on the new values (its own code, its own VJP from the op table; random ops draw
from the generator stream eager would use).  The capture becomes a Program
(src/tapegrad/replay.pxi): the steps that reach the outputs, over buffers allocated once.  Later calls run the Program's forward in C and return tensors whose
backward runs the Program's reverse sweep (one node on the tape, whose backward is the only
Python the tape runs for it) - values and gradients equal the eager ones bit for bit.  The
return value may nest: tensors (and None) in tuples, lists, named tuples, torch.return_types and
dicts (an LSTM's `out, (h, c)`, a HuggingFace-style dict of outputs); a tensor returned twice
comes back as one tensor, as eager returns it.

Guards - what would make a replay differ from an eager run - send the call back to eager
capture (or raise, with on_guard_failure="raise"):
  - the signature above (a different signature has its own capture);
  - the tensors `fn` reads from its closure or globals (parameters): their shapes, dtypes,
    layout and requires_grad are checked at every call; their values are read in place;
  - Python decisions on tensor values: every item() / bool() / float() / int() / tolist() of a
    captured value is re-checked after the replayed forward;
  - a re-run op whose result has another shape or dtype than at capture (masked_select,
    nonzero, boolean indexing: shapes that depend on values) sends the call back to capture;
  - an in-place write that records nothing into a tensor the function neither made nor reads
    nor takes as an argument (a module buffer: BatchNorm's num_batches_tracked.add_(1)) is
    performed again by the replay after its forward; the buffers of the modules `fn` is or
    reads are guarded by identity (a rebound buffer sends the call back to capture);
  - what cannot be replayed makes the function run eagerly at every call (`.explain()` lists
    each reason) - never a stale replay: other in-place writes (into tensors the function made
    or reads or was given, random fills), .numpy() reads, ops reached
    other than by their public names (a reference taken from an internal module), custom
    autograd.Functions, draws from Python's or numpy's random numbers, and Python state the
    call changes: a print, an append to a list or a count in a dict or an attribute of an
    object the function reads from outside, a global it rebinds (here or on a module or class
    of the script's), a library layer's settings or tables (`dropout.p = ...`,
    `layer.training = False`, register_buffer) or an optimizer's param group (a first capture
    that changes state, as a cache filled on first use does, is not kept: the next call
    captures again and replays if that capture changes nothing; what a phase changes - a
    scheduler's lr, eval()'s flags - is the phase's, done again by the replay); a library-wide
    setting set (set_default_dtype, set_printoptions, a torch.backends flag, ...:
    _core._capture_setting), an attribute set on a scheduler, a tensor assigned to .grad.

  - the function's environment: every Python number and every tensor it reads by name from its
    closure cells or its globals (and those of functions it defines inside, and of the Python
    functions it calls by such a name, followed in turn), its defaults, and what it reads
    through attributes and constant subscripts of those names and of `self` (`self.scale`,
    `Config.lr`, `cfg.opt["lr"]`, `self.encoder.temperature`; a method it calls on self is
    followed with that self), and of the arguments the signature holds by identity (a Module or
    another object without __eq__: `train_step(model, batch)`); for a Module (compiled, or read by the function), the forward of
    each user-defined submodule is followed the same way, and every submodule's training flag,
    parameters, buffers and children are guarded by identity, and a library layer's settings
    (_layer_settings: Dropout's p, a LeakyReLU's slope), which the library's forward reads.  A changed number (a learning
    rate, a temperature), a name or attribute rebound to another tensor, function or module
    (`model.fc = nn.Linear(...)`, a new Parameter in `model.weight`, `model.double()`) sends
    the call back to capture, because the capture baked the number in / reads the old tensor /
    ran the old function.

Not guarded: what is reached other than by names and attributes of stored values (a
property's result, an object's __getattr__ other than a Module's, an item under a computed
index, the contents of a numpy array or a mutable default) - call `.reset()` after changing
those.
"""
from __future__ import annotations as _annotations

import builtins
import collections
import contextlib
import dis
import functools
import pickle
import random
import types
import sys
import threading
import weakref

import numpy as np

from . import _compile_stance, _core, _meta, _settings, _step_phases
from . import overrides as _overrides
from .grad_mode import is_grad_enabled
from .tensor import Tensor

__all__ = ["compile", "CompiledFunction", "GuardFailure"]


def _typenum_dtype(num):
    return next(d for d in map(np.dtype, np.typecodes["All"]) if d.num == num)


_FLOAT_TYPENUMS = {np.dtype(np.float32).num: np.dtype(np.float32),
                   np.dtype(np.float64).num: np.dtype(np.float64)}


class GuardFailure(RuntimeError):
    """A replay would differ from an eager run (raised with on_guard_failure="raise")."""


class _Unsupported(Exception):
    pass


class _Plan(_core.ReplayPlan):
    """One captured signature: a Program and how to feed it, or why it runs eagerly (the fields
    are _core.ReplayPlan's, which replays it)."""


# The capture running on this thread (tapegrad.compiler.is_compiling, disable), and every
# compiled function alive (tapegrad.compiler.reset forgets their captures).
_capture_state = threading.local()
_COMPILED = weakref.WeakSet()


def current_capture():
    """The capture this thread is running (a compiled function's first call), or None."""
    return getattr(_capture_state, "capture", None)


def _stop_routing() -> None:
    """End the routing of public calls into this thread's capture (once)."""
    if getattr(_capture_state, "routing", False):
        _capture_state.routing = False
        _ROUTES.remove()
        _route_public_calls(None)


def _replay_skipping_context_entered(what: str) -> None:
    """Called by tapegrad/overrides.py (a torch function mode starts) and tapegrad/_settings.py
    (CPU autocast turns on) in this thread.  During a capture, the routes would take the calls
    the function makes from now on past a mode (its __torch_function__ would never see them), and
    a replay would skip the context at every later call: the capture stops routing, so the rest
    of the call runs eagerly in the context, and notes why the function cannot replay (it then
    runs eagerly at every call)."""
    if current_capture() is not None and getattr(_capture_state, "routing", False):
        _core._capture_unsupported(f"it enters {what} (a replay would run its ops past it)")
        _stop_routing()


def reset_all() -> None:
    """Forget the captures of every compiled function: each captures again on its next call."""
    for compiled in list(_COMPILED):
        compiled.reset()


class CompiledFunction(_core.CompiledCall):
    """What tapegrad.compile returns; call it as the function it wraps."""

    def __init__(self, fn, on_guard_failure="recapture", cache_size=8):
        if on_guard_failure not in ("recapture", "raise"):
            raise ValueError("on_guard_failure must be 'recapture' or 'raise', got "
                             f"{on_guard_failure!r}")
        self.fn = fn
        self.on_guard_failure = on_guard_failure
        self.cache_size = int(cache_size)
        self._plans = {}
        self._changed_state = set()     # signatures whose capture changed Python state once
        self.stats = {"captures": 0, "replays": 0, "eager": 0, "guard_failures": 0}
        self._torch_cache = _compile_stance._CacheModel(fn)   # torch.compile's compilations
        functools.update_wrapper(self, fn)
        _COMPILED.add(self)

    def __get__(self, instance, owner=None):
        """A compiled method (`@torch.compile()` on `def forward(self, x)`, as minRF's MMDiT
        does) binds to its instance as the function it wraps would."""
        return self if instance is None else types.MethodType(self, instance)

    def reset(self):
        """Forget every capture (the next call captures again)."""
        self._plans.clear()
        self._changed_state.clear()
        self._last_plan = None
        self._torch_cache.reset()

    def _stance_call(self, args, kwargs):
        """A call while torch.compiler.set_stance holds a stance other than "default"."""
        return _compile_stance.call_with_stance(self, args, kwargs)

    def _context_call(self, args, kwargs):
        """A call while some thread has a torch function mode or autocasts, or once a Tensor
        subclass dispatches to its __torch_function__: in a thread in such a context, or with
        such an instance among the arguments, the function runs eagerly, so the mode or the
        subclass sees its calls and the casts happen (torch.compile traces through all three);
        otherwise the call takes its ordinary path (the stance's, which may be "default")."""
        if (_overrides._is_torch_function_mode_enabled() or _settings.is_autocast_enabled("cpu")
                or _overrides._holds_dispatching_instance(args, kwargs)):
            self.stats["eager"] += 1
            return self.fn(*args, **kwargs)
        return self._stance_call(args, kwargs)

    def explain(self):
        """One line per captured signature: replayed, or why it runs eagerly."""
        lines = []
        for plan in self._plans.values():
            if plan.program is not None:
                groups = plan.program.fused_groups
                fused = sum(last - first + 1 for first, last, _ in groups)
                recomputed = len(plan.program.recomputed_groups)
                # ops without a C step or a registered replay step run their eager code on
                # tensors at each replay (the slower kind of step): named here
                rerun = list(dict.fromkeys(getattr(c[0], "__name__", repr(c[0]))
                                           for c in plan.program.calls()))
                lines.append(f"replayed: {plan.program.n_steps} steps"
                             + (f" ({fused} of them fused into {len(groups)} loop"
                                f"{'s' if len(groups) > 1 else ''} over blocks"
                                + (f", {recomputed} recomputing its values in the backward"
                                   if recomputed == 1 else
                                   f", {recomputed} recomputing their values in the backward"
                                   if recomputed else "")
                                + ")" if groups else "")
                             + (f"; ops re-run on tensors: {', '.join(rerun)}" if rerun else "")
                             + (f"; then {', '.join(plan.phases.names)}"
                                if plan.phases is not None else ""))
            else:
                lines.append(f"eager: {plan.reason}")
        return "\n".join(lines)

    # __call__ is _core.CompiledCall's: a replayed call runs no Python frame.
    def _slow_call(self, args, kwargs, flat, key, plan, guard_failed):
        """A call the C path did not replay: a new signature (capture), a plan that runs
        eagerly, or a failed guard (recapture, or raise)."""
        if guard_failed:
            self.stats["guard_failures"] += 1
            if self.on_guard_failure == "raise":
                raise GuardFailure(f"tapegrad.compile({getattr(self.fn, '__name__', self.fn)}): "
                                   "a guard failed (a closure tensor changed shape, dtype or "
                                   "requires_grad, or a value the function branched on changed)")
        elif plan is not None:
            self.stats["eager"] += 1
            return self.fn(*args, **kwargs)
        return self._capture(key, flat, args, kwargs)

    def _capture(self, key, flat, args, kwargs):
        if getattr(_capture_state, "capture", None) is not None:
            # called while another compiled function captures (a compiled block inside a
            # compiled model): its ops run eagerly into the outer capture, as torch.compile
            # inlines a nested compiled function
            return self.fn(*args, **kwargs)
        self._torch_cache.note_compile(args, kwargs)
        self._last_plan = None          # (the C path's shortcut to the plan it replayed last)
        env, reached = _environment(self.fn, args, kwargs)
        rng_before = _global_rng().bit_generator.state
        foreign = _ForeignRandomness(env)
        python_state = _PythonState(reached)
        global _effects
        effects = _effects = []
        capture = _core._capture_begin()
        _capture_state.capture = capture
        try:
            _route_public_calls(_core._capture_op_call)
            _ROUTES.install()
            _capture_state.routing = True
            phases = _step_phases.begin(python_state)
            try:
                with python_state.watching_prints():
                    result = self.fn(*args, **kwargs)
            finally:
                _step_phases.end()
                _stop_routing()
        finally:
            _capture_state.capture = None
            _core._capture_end()
        self.stats["captures"] += 1
        changed = python_state.changes()
        if key is not None and changed and key not in self._changed_state:
            # a first capture that changed Python state may have filled a cache the function
            # keeps (a rotary table built on first use): the next call captures again, and
            # replays if that capture changes nothing
            self._changed_state.add(key)
            return result
        if key is not None:
            if len(self._plans) >= self.cache_size:
                self._plans.pop(next(iter(self._plans)))
            if foreign.drew():
                plan = _Plan(reason="it draws random numbers from Python's random module or "
                             "numpy's (random.random(), np.random.beta(...), a Generator it "
                             "reads), which a replay would not draw again")
            else:
                plan = _build_plan(capture, flat, result, effects, phases, reached)
                if changed:
                    reasons = [plan.reason] if plan.program is None and plan.reason else []
                    plan = _Plan(reason="; ".join(reasons + [
                        f"it {changed} at every call, which a replay would not do again"]))
            plan.env = env
            if plan.program is not None:
                plan.program.global_rng = _global_rng
                plan.program.rerun_kind = _rerun_kind(
                    plan.program, _global_rng().bit_generator.state != rng_before)
            self._plans[key] = plan
        return result


# (a Python subclass of CompiledCall: its calls take the vectorcall entry only when told so)
_core._enable_vectorcall(CompiledFunction)


# torch.compile's modes (its error lists them in this order).
_TORCH_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
            options=None, disable=False, on_guard_failure="recapture", cache_size=8):
    """Capture `model` (a function or an nn.Module) on its first call and replay it in C on
    later calls (see the module docs).

    Usable as @compile, @compile(...) or `model = compile(model)`.  A Module comes back as an
    OptimizedModule (its parameters, train()/eval(), state_dict under `_orig_mod.`), as
    torch.compile returns.  torch.compile's settings are accepted so scripts run unchanged:
    `mode` is checked as PyTorch checks it (and not together with `options`); `fullgraph`,
    `dynamic`, `backend`, `mode` and `options` select nothing here (there is one backend, the
    replay); `disable=True` returns `model` itself."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in _TORCH_MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           + ", ".join(_TORCH_MODES))
    settings = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                    options=options, disable=disable, on_guard_failure=on_guard_failure,
                    cache_size=cache_size)
    if model is None:
        return lambda f: compile(f, **settings)
    if not callable(model):
        raise TypeError(f"tapegrad.compile expects a callable, got {type(model).__name__}")
    if disable:
        return model
    compiled = CompiledFunction(model, on_guard_failure, cache_size)
    from .nn.modules.module import Module
    if isinstance(model, Module):
        from ._optimized_module import OptimizedModule
        return OptimizedModule(model, compiled)
    return compiled


_MISS = object()

# Whether captures fuse runs of elementwise steps (src/tapegrad/fusion.pxi); off only to measure
# or test the fused loops against the step-by-step replay.
_FUSE = True
# The saved bytes above which a fused group's backward recomputes its values block by block
# instead of reading them back (fusion.pxi; None: the core's threshold, < 0: never).  Set only
# to measure or test the recomputing backward at small sizes.
_RECOMPUTE_BYTES = None


def _global_rng():
    from ._random import _global_numpy_generator
    return _global_numpy_generator()


def _holds_generator(obj) -> bool:
    from ._random import Generator
    if isinstance(obj, (Generator, np.random.Generator)):
        return True
    if isinstance(obj, (tuple, list)):
        return any(_holds_generator(o) for o in obj)
    if isinstance(obj, dict):
        return any(_holds_generator(o) for o in obj.values())
    return False


def _rerun_kind(program, drew_global) -> int:
    """How a create_graph backward can run the call again eagerly with the replay's values
    (Program.rerun_kind): 0 as is, 1 from the global stream's state before the replay (the
    capture drew from it), 2 not at all (an op given its own generator)."""
    if any(_holds_generator(call[1:3]) for call in program.calls()):
        return 2
    return 1 if drew_global else 0


# -- the library's ops, routed through the capture while one runs ---------------------------------
# A capture notes each public op the function calls (src/tapegrad/capture.pxi, _capture_op_call):
# ops with C replay hooks keep their steps, any other op becomes one step that re-runs it.  The
# public functions of the namespaces (tapegrad, nn.functional, linalg, special, fft) reach it
# through their entry (tapegrad/_public_calls.py, src/tapegrad/out_arg_call.h), which sends a call
# there while a capture runs: their names are never rebound, so a reference taken before
# (`from tapegrad import exp`) is captured too and identity checks hold.  The creation functions
# (their meta wrapper, tapegrad/_meta.py) do the same.  Still pointed at thin wrappers during a
# capture, and put back after: Tensor's methods, and the public functions' plain objects bound
# under other names in the library's modules (a layer's `from .._batch_norm import batch_norm`).
# An op reached another way is not routed: its tensors stay unclaimed and the call runs eagerly
# (explain() says so), never a stale replay.

# Names that are not ops, or must not run again at every replay (disk I/O).
_NOT_ROUTED = frozenset({
    "compile", "load", "save", "manual_seed", "seed", "initial_seed", "vmap", "backward",
    "register_hook", "register_post_accumulate_grad_hook", "retain_grad", "requires_grad_",
    "item", "tolist", "numpy", "size", "dim", "ndimension", "nelement", "numel", "element_size",
    "data_ptr", "stride", "storage_offset", "is_contiguous", "is_floating_point", "is_complex",
    "is_leaf", "get_device", "untyped_storage", "storage", "share_memory_", "pin_memory",
    "apply_", "map_", "zero_", "fill_", "copy_", "set_", "detach_", "resize_", "resize_as_",
})

# Dunders that are ops implemented outside the C arithmetic hooks: indexing, and the operators
# the op families define (comparisons, bitwise, @, ...: _core.TENSOR_METHODS).
_ROUTED_DUNDERS = frozenset(["__getitem__"] + [n for n in _core.TENSOR_METHODS
                                               if n.startswith("__")])


def _route_public_calls(route) -> None:
    """Send the public functions' calls (their entry, and the creation functions' meta wrapper)
    to `route` (_core._capture_op_call) while a capture runs; None ends it."""
    _core._set_capture_route(route)
    _meta.capture_route[0] = route


def _routable(name, value) -> bool:
    if name in _NOT_ROUTED or name.endswith("_") and not name.endswith("__"):
        return False
    if name.startswith("__") and name not in _ROUTED_DUNDERS:
        return False
    if isinstance(value, type) or not callable(value):
        return False
    module = getattr(value, "__module__", None) or ""
    return module.startswith("tapegrad") or type(value).__name__ in (
        "cython_function_or_method", "method_descriptor", "wrapper_descriptor")


def _routed(fn):
    call = _core._capture_op_call

    def routed(*args, **kwargs):
        return call(fn, args, kwargs)
    routed.__wrapped__ = fn
    routed.__name__ = getattr(fn, "__name__", "op")
    routed._capture_route = True        # (overrides' _tensor_attribute sees through it)
    return routed


# In-place methods a capture can note as a write the replay performs again (a module buffer's
# update: BatchNorm's num_batches_tracked.add_(1)); _core._capture_inplace_call decides.  Not
# these: writes of the metadata (views, shape, grad state, sharing), Python callbacks, and the
# random fills (a replay performs its writes after the forward: draws would change order).
_INPLACE_NOT_ROUTED = frozenset({
    "requires_grad_", "detach_", "resize_", "resize_as_", "set_", "share_memory_", "apply_",
    "map_", "map2_", "squeeze_", "unsqueeze_", "t_", "transpose_", "swapaxes_", "swapdims_",
    "as_strided_", "normal_", "uniform_", "bernoulli_", "cauchy_", "exponential_", "geometric_",
    "log_normal_", "random_",
})
_INPLACE_DUNDERS = frozenset({"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
                              "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__",
                              "__irshift__"})

# The effects list of the capture running now (_capture sets it; one capture at a time).
_effects = []


def _inplace_routable(name, value) -> bool:
    if name in _INPLACE_DUNDERS:
        return callable(value)
    return (name.endswith("_") and not name.startswith("_") and name not in _INPLACE_NOT_ROUTED
            and callable(value) and not isinstance(value, (type, staticmethod, classmethod)))


def _routed_inplace(fn):
    call = _core._capture_inplace_call

    def routed(*args, **kwargs):
        return call(fn, args, kwargs, _effects)
    routed.__wrapped__ = fn
    routed.__name__ = getattr(fn, "__name__", "op")
    routed._capture_route = True
    return routed


def _loaded_modules() -> int:
    return sum(1 for name in sys.modules if name.startswith("tapegrad."))


class _Routes:
    """(namespace, name, original, routed, own) for every routed op, built on first use."""

    def __init__(self):
        self.entries = None
        self.modules = 0            # how many tapegrad modules were loaded at the last build

    def build(self):
        import tapegrad
        entries = []
        # (only modules already loaded: importing tapegrad.nn here would cost a second)
        spaces = [tapegrad] + [sys.modules[m] for m in (
            "tapegrad.nn.functional", "tapegrad.linalg", "tapegrad.special", "tapegrad.fft")
            if m in sys.modules]
        # The namespaces' public functions are entries, captured there (not rebound); the plain
        # functions behind them, bound under other names in the library's Python modules (a
        # layer's `from .._batch_norm import batch_norm`), are routed, or the op would run unseen.
        by_id = {}
        for ns in spaces:
            for name, value in list(vars(ns).items()):
                plain = getattr(value, "__out_arg_of__", None)
                if plain is None and _routable(name, value):
                    plain = getattr(value, "__meta_dispatch__", None)   # a creation function
                if plain is not None and _routable(name, plain) and id(plain) not in by_id:
                    by_id[id(plain)] = _routed(plain)
        for mod_name, mod in list(sys.modules.items()):
            if (not mod_name.startswith("tapegrad.") or mod in spaces
                    or not (getattr(mod, "__file__", None) or "").endswith(".py")):
                continue
            for name, value in list(vars(mod).items()):
                if id(value) in by_id and not name.startswith("__"):
                    entries.append((mod, name, value, by_id[id(value)], True))
                elif isinstance(value, type) and value.__module__ == mod_name:
                    # a layer class holding its op as a staticmethod (MaxPool2d._fn)
                    for attr, v in list(vars(value).items()):
                        if isinstance(v, staticmethod) and id(v.__func__) in by_id:
                            entries.append((value, attr, v, staticmethod(by_id[id(v.__func__)]),
                                            True))
        seen = set()
        for klass in Tensor.__mro__:
            if klass is object:
                continue
            for name, value in list(vars(klass).items()):
                if name in seen:
                    continue
                seen.add(name)
                if isinstance(value, property) and name in ("T", "mT", "H", "mH"):
                    entries.append((Tensor, name, Tensor.__dict__.get(name),
                                    property(_routed(value.fget)), name in Tensor.__dict__))
                elif _routable(name, value) and not isinstance(value, (staticmethod,
                                                                        classmethod)):
                    entries.append((Tensor, name, Tensor.__dict__.get(name), _routed(value),
                                    name in Tensor.__dict__))
                elif _inplace_routable(name, value):
                    entries.append((Tensor, name, Tensor.__dict__.get(name),
                                    _routed_inplace(value), name in Tensor.__dict__))
        self.entries = entries
        self.modules = _loaded_modules()

    def install(self):
        # rebuilt when modules were loaded since (remove() must put back what the namespaces
        # hold now, not a stale function)
        if self.entries is None or self.modules != _loaded_modules():
            self.build()
        for ns, name, _, routed, _ in self.entries:
            setattr(ns, name, routed)

    def remove(self):
        for ns, name, original, _, own in self.entries:
            if own:
                setattr(ns, name, original)
            else:
                delattr(ns, name)


_ROUTES = _Routes()


# Re-run ops whose only effect is their result: factories and shape ops, which read no tensor's
# values, draw no random numbers and raise on nothing the guards do not fix (shapes, dtypes, the
# Python arguments).  A replay skips them when nothing reads their results (an LSTM's initial
# zeros and the stack of its final states, which `out, _ = lstm(x)` discards); any other re-run
# op runs even then, as it may raise on values or draw.
_PURE_NAMES = (
    "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like",
    "arange", "linspace", "logspace", "eye",
    "stack", "cat", "concat", "concatenate", "hstack", "vstack", "dstack", "reshape", "view",
    "view_as", "reshape_as", "transpose", "swapaxes", "swapdims", "permute", "t", "flatten",
    "unflatten", "unsqueeze", "squeeze", "contiguous", "expand", "expand_as", "narrow", "chunk",
    "unsafe_chunk", "split", "unsafe_split", "unbind", "movedim", "moveaxis", "select", "clone",
    "detach",
)


_pure_calls_set = []     # (filled lazily: tapegrad's namespace is complete by the first capture)


def _pure_calls():
    from . import creation
    fns = set()
    for name in _PURE_NAMES:
        for ns in (sys.modules["tapegrad"], creation, Tensor, _core.TORCH_FUNCTIONS):
            fn = ns.get(name) if isinstance(ns, dict) else getattr(ns, name, None)
            while callable(fn):
                try:
                    fns.add(fn)
                except TypeError:
                    break
                fn = getattr(fn, "__wrapped__", None)
    return fns


# -- the environment guard ------------------------------------------------------------------------
# A capture bakes in the Python numbers the function combined with tensors (`x * lr`) and holds
# the tensor objects it read.  Both can come from names the function looks up at each call: its
# closure cells and its globals.  The guard remembers what those names held at capture and
# compares at every replay (identity first, then equality, so 0.0 and -0.0 differ too).

# Random states outside tapegrad's (_ForeignRandomness watches those the function can reach).
_RANDOM_STATES = (random.Random, np.random.Generator, np.random.RandomState, np.random.BitGenerator)


def _is_guarded_value(v) -> bool:
    # (strings, None and dtypes too: a branch on a mode string or an optional setting, or a
    # cast to a dtype held by name, is baked into the capture as much as a number is; a random
    # generator by identity, which also lets the capture watch whether the call draws from it)
    return v is None or isinstance(v, (int, float, complex, np.number, str, bytes, _core.dtype,
                                       Tensor) + _RANDOM_STATES)


def _is_held_object(v) -> bool:
    """What the function calls or steps, guarded by identity where it reads it by name: any
    callable (a Module, whose ops the capture ran on its parameters; a library function such as
    `act = torch.tanh`; a functools.partial; an object with __call__) and an optimizer (the
    replay's phases call its zero_grad and step).  Another one bound to the name
    (`model = Net()`, `act = torch.sigmoid`, `opt = Adam(...)` between calls) is a new capture,
    not the old one's replay."""
    if callable(v):
        return True
    optim = sys.modules.get("tapegrad.optim.optimizer")
    return optim is not None and isinstance(v, optim.Optimizer)


_same = _core._same_binding


# The instructions that read a global by name (3.12 adds the last; LOAD_NAME: a class body).
_GLOBAL_LOADS = ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS")


def _global_reads(code):
    """The names `code` reads as globals.  Not co_names, which also holds the attribute names
    it reads: `opt.step()` in a training step would guard a global loop counter `step`, which
    changes at every call, and the step would capture again at every call."""
    return dict.fromkeys(op.argval for op in dis.get_instructions(code)
                         if op.opname in _GLOBAL_LOADS)


# The instructions that rebind or delete a global (`global last; last = loss`).
_GLOBAL_STORES = ("STORE_GLOBAL", "DELETE_GLOBAL")


def _global_stores(code):
    """The names `code` rebinds or deletes as globals."""
    return dict.fromkeys(op.argval for op in dis.get_instructions(code)
                         if op.opname in _GLOBAL_STORES)


def _code_objects(code):
    yield code
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            yield from _code_objects(c)


def _environment(fn, args=(), kwargs=None):
    """The guard entries of a capture, and the objects the function reads (for _PythonState).
    The entries: (namespace, name, value) for each number or tensor `fn` reads from a closure cell, a
    global or an attribute (and its defaults), where namespace is the cell (name None), the dict that holds it (the
    globals, an object's __dict__, a Module's _parameters/_buffers/_modules) or the class of a
    class attribute; the same, by identity, for each Python function it reads that way (a
    helper it calls), whose own closure cells, globals and attributes are followed in turn,
    because the capture ran that helper's ops with that helper's numbers; for every
    user-defined Module it reaches (the compiled model itself, its submodules, a model read as
    a global or passed as an argument), its forward followed with the module as `self`; the
    attributes it reads of an argument that the call's signature holds by identity (a Module,
    an object of a class without __eq__: `train_step(model, batch)`) as those of `self`; and
    for every Module in those
    trees, each submodule's training flag, parameters, buffers and children (see
    _module_state)."""
    from .nn.modules.module import Module
    env = []
    function = getattr(fn, "__func__", fn)
    bound = _identity_arguments(function, args, kwargs or {})
    if getattr(fn, "__self__", None) is not None:
        bound.update(_self_binding(function, fn.__self__))
    modules = [fn, *bound.values()]     # (every object read: the Modules among them, and
                                        # what _PythonState watches)
    pending = [(function, bound)]       # (function, {local name: the object it holds})
    guarded = set()

    def guard(ns, name, v, always=False):
        """Guard what `name` in `ns` holds (numbers, tensors, helpers, modules and optimizers;
        objects if told)."""
        if (always or _is_guarded_value(v) or _is_followed_function(v)
                or _is_held_object(v)) and (id(ns), name) not in guarded:
            guarded.add((id(ns), name))
            env.append((ns, name, v))
        modules.append(v)
        if _is_followed_function(v):
            pending.append((v, {}))

    followed, forwards_followed = set(), set()
    while True:
        while pending:
            f, bound = pending.pop()
            code = getattr(f, "__code__", None)
            key = (id(f), tuple(sorted((k, id(v)) for k, v in bound.items())))
            if code is None or key in followed:
                continue
            followed.add(key)
            for cell in f.__closure__ or ():
                try:
                    guard(cell, None, cell.cell_contents)
                except ValueError:              # an empty cell: assigned later
                    continue
            # its defaults: a capture that used one baked it in (f.__defaults__ = (5.0,))
            if f.__defaults__:
                guard(f, "__defaults__", f.__defaults__, always=True)
            if f.__kwdefaults__:
                guard(f, "__kwdefaults__", f.__kwdefaults__, always=True)
                for name, v in f.__kwdefaults__.items():
                    guard(f.__kwdefaults__, name, v)
            glb = f.__globals__
            seen = set()
            cells = dict(zip(code.co_freevars, f.__closure__ or ()))
            for c in _code_objects(code):
                for name in _global_reads(c):
                    if name in seen:
                        continue
                    seen.add(name)
                    v = glb.get(name, _MISS)
                    if v is not _MISS:
                        guard(glb, name, v)
                for name in _global_stores(c):
                    # a global the function rebinds (`global last; last = loss`): a replay
                    # would not rebind it, so its module's globals are watched (a capture that
                    # rebinds it to something new is not kept) and what it held before the
                    # call is guarded (a script rebinding it between calls sends the call
                    # back to capture, where eager's rebinding is seen again)
                    if (id(glb), name) not in guarded:
                        guarded.add((id(glb), name))
                        env.append((glb, name, glb.get(name, _core._ENV_ABSENT)))
                    if not any(m is glb for m in modules):
                        modules.append(glb)
                for step in _read_paths(c, glb, cells, bound):
                    if step[0] == "method":     # self.helper(x): its reads, with that self
                        pending.append((step[1], _self_binding(step[1], step[2])))
                        continue
                    # each object on the path by identity (a tuple's items cannot change),
                    # then the last one read as a name's value
                    ns, name, value = step
                    if not isinstance(ns, tuple):
                        guard(ns, name, value, always=True)
        # the forwards of the user-defined Modules reached so far, each with its module as self
        # (a submodule's forward reads its own attributes and the globals of its file)
        grown = False
        for root in list(modules):
            if not isinstance(root, Module):
                continue
            for m in root.modules():
                if id(m) in forwards_followed:
                    continue
                forwards_followed.add(id(m))
                forward = getattr(type(m), "forward", None)
                if _is_followed_function(forward):
                    pending.append((forward, _self_binding(forward, m)))
                    grown = True
                # its hooks (the capture ran them: a feature extractor's dict, a print)
                for hook in _module_hooks(m):
                    function = getattr(hook, "__func__", hook)
                    if _is_followed_function(function):
                        pending.append((function, _self_binding(function,
                                                                getattr(hook, "__self__", None))))
                        modules.append(getattr(hook, "__self__", None))
                        grown = True
        if not grown:
            break
    env.extend(entry for entry in _module_state(modules)
               if (id(entry[0]), entry[1]) not in guarded)
    return tuple(env), modules


def _is_subscript(ins) -> bool:
    return ins.opname == "BINARY_SUBSCR" or (ins.opname == "BINARY_OP" and ins.argrepr == "[]")


# The loads of a local variable (3.12 and 3.13 add the checked and the paired forms).
_LOCAL_LOADS = ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_BORROW")
_PAIRED_LOCAL_LOADS = ("LOAD_FAST_LOAD_FAST", "LOAD_FAST_BORROW_LOAD_FAST_BORROW")


def _self_binding(function, obj) -> dict:
    """{name of the first parameter: obj} for a method `function` bound to obj."""
    code = getattr(function, "__code__", None)
    if obj is None or code is None or not code.co_argcount:
        return {}
    return {code.co_varnames[0]: obj}


def _identity_arguments(function, args, kwargs) -> dict:
    """{parameter name: argument} for the arguments of a call that its signature holds by
    identity (call_key compares non-tensor arguments with ==, which is identity for a Module or
    an object whose class defines no __eq__): the plan is this object's, so what its
    attributes held at capture can be guarded like self's."""
    code = getattr(function, "__code__", None)
    if code is None:
        return {}
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    bound = dict(zip(names, args))
    bound.update((k, v) for k, v in kwargs.items() if k in names)
    return {k: v for k, v in bound.items()
            if not isinstance(v, (Tensor, type, types.ModuleType))
            and type(v).__eq__ is object.__eq__ and type(v).__hash__ is object.__hash__}


def _read_root(op, glb, cells, bound):
    """(ns, name, object) when instruction `op` loads a global, a closure cell or a local that
    holds a fixed object of the plan (`self`, an argument held by identity: ns None), else
    None."""
    if op.opname == "LOAD_GLOBAL":
        obj = glb.get(op.argval, _MISS)
        return None if obj is _MISS else (glb, op.argval, obj)
    if bound:
        if op.opname in _LOCAL_LOADS or (op.opname in ("LOAD_DEREF", "LOAD_CLOSURE")
                                          and op.argval not in cells):
            name = op.argval
        elif op.opname in _PAIRED_LOCAL_LOADS:
            name = op.argval[1]
        else:
            name = None
        if name in bound:
            return None, None, bound[name]
    if op.opname == "LOAD_DEREF" and op.argval in cells:
        try:
            return cells[op.argval], None, cells[op.argval].cell_contents
        except ValueError:
            return None
    return None


def _read_paths(code, glb, cells, bound):
    """The reads along each chain of attribute loads and constant subscripts that `code`
    applies to a global, a closure cell or `self`: `cfg["lr"]`, `Config.lr`, `self.temperature`,
    `self.encoder.scale`, `settings.opt["lr"]` (values a capture bakes in as it bakes in a
    global number, or objects whose ops it ran).  Yields (ns, name, value) for each step, where
    the step read (see _environment) and what it read, each object on the path included (the
    root's binding too); or ("method", function, self) for a method of a user's class the chain ends at (its reads
    are followed with that self)."""
    ins = list(dis.get_instructions(code))
    for i, op in enumerate(ins):
        root = _read_root(op, glb, cells, bound)
        if root is None:
            continue
        obj = root[2]
        path = []
        j = i + 1
        while j < len(ins):
            step = ins[j]
            if step.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                found = _attribute_read(obj, step.argval)
                if found is None:
                    break
                if found[0] == "method":
                    path.append(found)
                    break
                entries, obj = found
                path.extend(entries)
                j += 1
            elif (isinstance(obj, (dict, list, tuple)) and j + 1 < len(ins)
                  and step.opname in ("LOAD_CONST", "LOAD_SMALL_INT") and _is_subscript(ins[j + 1])):
                key = step.argval
                if isinstance(key, slice):               # (a new list at every call)
                    break
                if isinstance(obj, dict):
                    item = dict.get(obj, key, _MISS)     # (no defaultdict insertion)
                else:
                    try:
                        item = obj[key]
                    except (IndexError, TypeError):
                        item = _MISS
                if item is _MISS:
                    break
                path.append((obj, key, item))
                obj = item
                j += 2
            else:
                break
        if not path:
            continue
        if root[0] is not None:                 # the root name's own binding, by identity
            yield root
        yield from path


def _is_library_module(obj) -> bool:
    """A module of the standard library or an installed package (tapegrad itself, numpy, math):
    its attributes are the library's (torch.tanh, np.pi), not settings of the user's."""
    name = getattr(obj, "__name__", "") or ""
    if name.partition(".")[0] in sys.stdlib_module_names or name.startswith("tapegrad"):
        return True
    path = getattr(obj, "__file__", None) or ""
    return "site-packages" in path or "dist-packages" in path or not path


def _attribute_read(obj, name):
    """Where `obj.name` is read from, as the guard reads it again: (entries, value) with
    entries [(ns, name, value)], ("method", function, obj) for a method of a user's class, or
    None where the read is not a stored value (a property, a __getattr__ other than a Module's,
    a library module's attribute, a tensor's attributes)."""
    from .nn.modules.module import Module
    if isinstance(obj, types.ModuleType):
        if _is_library_module(obj):
            return None
        value = obj.__dict__.get(name, _MISS)
        return None if value is _MISS else ([(obj.__dict__, name, value)], value)
    if isinstance(obj, Tensor) or _is_library_function(obj):
        return None
    if isinstance(obj, Module):
        for store in ("_parameters", "_buffers", "_modules"):
            held = obj.__dict__.get(store)
            if held and name in held:
                return [(held, name, held[name])], held[name]
    if isinstance(obj, type):
        owner = next((k for k in obj.__mro__ if name in k.__dict__), None)
        if owner is None:
            return None
        value = owner.__dict__[name]
        if _is_followed_function(value):            # Config.helper(x): a plain function
            return "method", value, None
        if hasattr(type(value), "__get__") or not _is_settings_class(owner):
            return None
        return [(obj, name, value)], value
    own = getattr(obj, "__dict__", None)
    if isinstance(own, dict) and name in own:
        return [(own, name, own[name])], own[name]
    owner = next((k for k in type(obj).__mro__ if name in k.__dict__), None)
    if owner is None or not _is_settings_class(owner):
        return None
    value = owner.__dict__[name]
    if _is_followed_function(value):
        return "method", value, obj
    if hasattr(type(value), "__get__"):             # a property, classmethod, slot
        return None
    entries = [(type(obj), name, value)]
    if isinstance(own, dict):                       # no instance attribute shadows it later
        entries.append((own, name, _core._ENV_ABSENT))
    return entries, value


def _is_settings_class(cls) -> bool:
    """A user's class (not tapegrad's nor a library's): its class attributes are settings."""
    module = sys.modules.get(getattr(cls, "__module__", "") or "")
    return cls is not object and module is not None and not _is_library_module(module)


def _is_library_function(obj) -> bool:
    return callable(obj) and isinstance(obj, (types.BuiltinFunctionType, types.FunctionType,
                                              types.MethodType)) \
        and not _is_followed_function(getattr(obj, "__func__", obj))


def _is_followed_function(v) -> bool:
    """A user's Python function (not tapegrad's own: their numbers are constants of the
    library, and following them would only lengthen every replay's guard)."""
    return (isinstance(v, types.FunctionType)
            and not (getattr(v, "__module__", None) or "").startswith("tapegrad"))


def _module_hooks(module):
    """The forward and backward hooks a Module call runs: the module's own and the global ones."""
    from .nn.modules import _hooks
    tables = [module.__dict__.get(name) or {} for name in (
        "_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")]
    tables += [_hooks._global_forward_pre_hooks, _hooks._global_forward_hooks,
               _hooks._global_backward_pre_hooks, _hooks._global_backward_hooks]
    return [hook for table in tables for hook in list(table.values())]


def _module_state(candidates):
    """Guard entries for every submodule of the Modules among `candidates`: its training flag
    (Dropout, BatchNorm and any forward that branches on `self.training` take another path
    after model.eval() / model.train(), so a capture made in one mode must not replay in the
    other: compile(model) kept dropping out after model.eval()); and, by identity, its
    parameters, buffers and children: the replay reads the tensors of the capture (running
    statistics too, and writes num_batches_tracked into them) and ran the forwards of the
    submodules of the capture, so `model.fc = nn.Linear(...)`, a parameter rebound to a new
    Parameter or `model.double()` must send the call back to capture."""
    from .nn.modules.module import Module
    from .utils.hooks import _HOOK_TABLES_VERSION
    seen, env = set(), []
    for root in candidates:
        if not isinstance(root, Module):
            continue
        if not env:     # hooks registered or removed since (the capture ran those of then)
            env.append((_HOOK_TABLES_VERSION, "version", _HOOK_TABLES_VERSION["version"]))
        for m in root.modules():
            if id(m) not in seen:
                seen.add(id(m))
                env.append((m.__dict__, "training", m.__dict__.get("training", _MISS)))
                if _runs_library_code(m):
                    env.extend((m.__dict__, name, v) for name, v in _layer_settings(m))
                for store in ("_parameters", "_buffers", "_modules"):
                    held = m.__dict__.get(store)
                    if held:
                        env.extend((held, name, v) for name, v in held.items())
    return env


def _layer_settings(module):
    """The settings a layer keeps in its attributes (Dropout's p, LeakyReLU's negative_slope,
    BatchNorm's momentum and eps, a convolution's stride and padding): the numbers, flags,
    strings, dtypes, None and tuples of them in its __dict__ (its training flag apart).  A
    library forward reads them at every eager call, but _environment does not follow the
    library's code, so a capture baked them in: `model[1].p = 0.1` between calls replayed the
    old dropout rate.  (Its tensors are not settings: weight_norm's hook rebinds one at every
    call.)"""
    return [(name, v) for name, v in module.__dict__.items()
            if name != "training" and _is_setting(v)]


def _runs_library_code(module) -> bool:
    """Whether the library's code reads `module`'s attributes in its call: a library layer, or
    a script's subclass of one (its forward's `super().forward(x)` reads self.negative_slope
    in the library's code, which _environment does not follow)."""
    from .nn.modules.module import Module
    return not _is_followed_function(getattr(type(module), "forward", None)) or any(
        k is not Module and (k.__module__ or "").startswith("tapegrad")
        for k in type(module).__mro__[1:-1])


def _is_setting(v) -> bool:
    if isinstance(v, tuple):
        return all(_is_setting(item) for item in v)
    return v is None or isinstance(v, (int, float, complex, str, bytes, np.number, _core.dtype))


_env_holds = _core._env_holds     # (the C call path checks it at every replay)


class _PythonState:
    """What a replay cannot do again: change Python state.  A function that appends to a list
    it reads from outside (`losses.append(loss.item())`), counts its calls in a dict or an
    attribute (`self.calls += 1`), stores a tensor on self (`self.last_attention = attn`) or
    prints did so once, at capture, and never again when replayed.  The capture takes a shallow
    snapshot of every object the function reads (globals, closure cells, attributes, arguments
    held by identity, the Modules under them) and watches print(); `changes()` names what the
    call changed, if anything."""

    def __init__(self, reached):
        from .nn.modules.module import Module
        objects, seen = [], set()
        for obj in reached:
            for o in (obj.modules() if isinstance(obj, Module)
                      else (obj, *obj.param_groups) if _is_optimizer(obj) else (obj,)):
                # (an optimizer's param groups too: `group["lr"] = 0.01` inside the function
                # is a write a replay would skip, and the step phase reads lr from there)
                if id(o) not in seen and (_is_watched(o) or isinstance(o, Module)):
                    seen.add(id(o))
                    objects.append(o)
        self.objects = objects
        self.snapshots = [_shallow_state(o) for o in objects]
        self.printed = False
        self.modes = _autograd_modes()
        self.changed = ""       # what the function's own code changed before a phase

    def before_phase(self):
        """A phase of a whole step (_step_phases.note) is about to run: what changed so far is
        the function's own doing."""
        self.changed = self.changed or self._changed_objects()

    def after_phase(self):
        """What the phase changed is its own work (a replay runs it again): compare from here."""
        self.snapshots = [_shallow_state(o) for o in self.objects]

    @contextlib.contextmanager
    def watching_prints(self):
        original = builtins.print

        def noting_print(*args, **kwargs):
            self.printed = True
            return original(*args, **kwargs)

        builtins.print = noting_print
        try:
            yield
        finally:
            builtins.print = original

    def changes(self) -> str:
        """'' when the call changed nothing watched, else what it did ("prints", ...)."""
        if self.printed:
            return "prints"
        if _autograd_modes() != self.modes:
            # torch.set_grad_enabled(False) called as a function (not a with block): eager
            # leaves the mode switched after the call, a replay would not
            return "switches grad or inference mode for the code after it"
        return self.changed or self._changed_objects()

    def _changed_objects(self) -> str:
        for obj, before in zip(self.objects, self.snapshots):
            if not _same_state(before, _shallow_state(obj)):
                if isinstance(obj, dict) and obj.get("__builtins__") is not None:
                    return f"rebinds a global of {obj.get('__name__', 'its module')}"
                if isinstance(obj, types.ModuleType):
                    return f"rebinds a global of {obj.__name__}"
                if isinstance(obj, type):
                    return f"sets attributes of the class {obj.__name__}"
                what = type(obj).__name__
                return (f"changes a {what} it reads from outside" if isinstance(obj, (list, dict, set))
                        else f"sets attributes of a {what} object it reads")
        return ""


def _autograd_modes() -> tuple:
    """The grad and inference modes a call begins (and, unless it switches them, ends) in."""
    return is_grad_enabled(), _core.is_inference_mode_enabled()


def _is_watched(obj) -> bool:
    if isinstance(obj, (list, dict, set, bytearray)):
        return True
    # a script's module or class (`cfg.last = y` on an imported config module, `Config.step =
    # n`): an attribute assigned there is a global rebound, which a replay would not do
    if isinstance(obj, types.ModuleType):
        return not _is_library_module(obj)
    if isinstance(obj, type):
        return _is_settings_class(obj)
    if isinstance(obj, (Tensor, types.FunctionType, types.MethodType,
                        types.BuiltinFunctionType, np.ndarray)) or _is_guarded_value(obj):
        return False
    # a user's object (not a library's: a threading.Event, a tapegrad Generator or layer keep
    # state of their own that their methods change, which is theirs to replay or not)
    module = sys.modules.get(type(obj).__module__ or "")
    return (isinstance(getattr(obj, "__dict__", None), dict) and module is not None
            and not _is_library_module(module))


def _is_optimizer(obj) -> bool:
    optim = sys.modules.get("tapegrad.optim.optimizer")
    return optim is not None and isinstance(obj, optim.Optimizer)


def _shallow_state(obj):
    """The items of a container or an object's attributes, held (so identities stay valid).
    A Module's parameters, buffers and children too (register_buffer inside the function), and
    of a library layer only its settings (_layer_settings: `dropout.p = 0.3`,
    `bn.momentum = 0.01`, `layer.training = False`; its other attributes are its own caches)."""
    from .nn.modules.module import Module
    if isinstance(obj, Module):
        own = tuple(obj.__dict__.items()) if _is_watched(obj) else (
            ("training", obj.__dict__.get("training")), *_layer_settings(obj))
        return own + tuple(((store, name), v) for store in ("_parameters", "_buffers", "_modules")
                           for name, v in (obj.__dict__.get(store) or {}).items())
    if isinstance(obj, (list, bytearray)):
        return tuple(obj)
    if isinstance(obj, dict):
        return tuple(obj.items())
    if isinstance(obj, set):
        return tuple(obj)
    return tuple(obj.__dict__.items())


def _same_state(before, after) -> bool:
    if len(before) != len(after):
        return False
    for a, b in zip(before, after):
        if isinstance(a, tuple):                    # (key, value) pairs
            if a[0] is not b[0] and a[0] != b[0] or a[1] is not b[1] and not _same(a[1], b[1]):
                return False
        elif a is not b and not _same(a, b):
            return False
    return True


class _ForeignRandomness:
    """The random states a function may draw from outside tapegrad: Python's random module,
    numpy's global RandomState, and every random.Random, numpy Generator, RandomState or
    BitGenerator its environment holds (a global, a closure cell, an attribute of self).  A
    draw from one (mixup's `lam = np.random.beta(a, a)`, `if random.random() < p`) is a number
    the capture bakes in or a branch it takes once, and nothing at replay draws it again: the
    capture compares the states before and after the call, and a function that drew runs
    eagerly at every call (tapegrad's own generator is not foreign: its ops draw at replay)."""

    def __init__(self, env):
        own = _global_rng()
        candidates = [random._inst, np.random.mtrand._rand]
        candidates += [value for _, _, value in env if isinstance(value, _RANDOM_STATES)]
        seen = set()
        self.generators = []
        for g in candidates:
            if g is not own and id(g) not in seen:
                seen.add(id(g))
                self.generators.append(g)
        self.states = [_random_state(g) for g in self.generators]

    def drew(self) -> bool:
        return any(_random_state(g) != state for g, state in zip(self.generators, self.states))


def _random_state(generator) -> bytes:
    if isinstance(generator, random.Random):
        return pickle.dumps(generator.getstate())
    return pickle.dumps(generator)              # numpy's: the bit generator's state with it


# -- building a plan from a capture --------------------------------------------------------------

def _saved_outputs(outputs, externals):
    """Indexes of the outputs whose storage a record of the captured call saved for its backward
    (exp's and sigmoid's output, ...): eager raises PyTorch's "modified by an inplace operation"
    when one is written in place before backward, so the replay checks their versions too."""
    stop = {id(t.grad_fn) for t in externals if t.grad_fn is not None}
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    seen, saved = {}, []
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen or id(fn) in stop:
            continue
        seen[id(fn)] = fn                   # held, so ids stay unique during the walk
        read = getattr(fn, "_slot_value", None)     # (Python-level nodes save no arrays here)
        for j in range(3 if read is not None else 0):   # a record's saved values (MAX_SAVED)
            try:
                value = read(j)
            except RuntimeError:            # freed or overwritten: nothing to protect
                break
            if isinstance(value, np.ndarray):
                saved.append(value)
        stack.extend(node for node, _ in getattr(fn, "next_functions", ()))
    return [i for i, t in enumerate(outputs)
            if any(np.shares_memory(t._array, value) for value in saved)]


def _check_effects(targets, ext, outputs, flat):
    """The replay performs the call's in-place writes into tensors it did not make (module
    buffers) after its forward, which equals eager only if nothing else in the call reads or
    returns what they write: no step reads a target (it is no external), none is returned,
    and none shares memory with a tensor the steps read.  A target must be reached other than
    through the call's arguments (the replay writes into the tensor of the capture)."""
    for t in targets.values():
        if any(t is a for a in flat):
            raise _Unsupported("it writes in place into one of its arguments")
        a = t._array
        if any(t is o for o in outputs) or any(t is e for e in ext) or any(
                np.may_share_memory(a, e._array) for e in ext) or any(
                np.may_share_memory(a, o._array) for o in outputs):
            raise _Unsupported("it writes in place into a tensor it also reads or returns "
                               "(a replay performs such writes after its forward)")


def _output_spec(value, outputs, index):
    """The spec of a return value (src/tapegrad/replay.pxi, rebuild_output), its distinct
    tensors appended to `outputs` (`index`: id -> their position) in the order met.  Containers:
    tuple, list, namedtuple, torch.return_types, dict and OrderedDict (HuggingFace-style
    forwards), nested; leaves: tensors and None."""
    if value is None:
        return None
    if isinstance(value, Tensor):
        i = index.get(id(value))
        if i is None:
            i = index[id(value)] = len(outputs)
            outputs.append(value)
        return i
    kind = type(value)
    if kind in (tuple, list) or isinstance(value, _core._ReturnType):
        make, keys = kind, None
    elif isinstance(value, tuple) and hasattr(kind, "_make") and hasattr(kind, "_fields"):
        make, keys = kind._make, None               # a namedtuple
    elif kind in (dict, collections.OrderedDict):
        make, keys = kind, tuple(value)
    else:
        raise _Unsupported("it returns something other than tensors in tuples, lists, named "
                           f"tuples or dicts (a {kind.__name__})")
    items = value.values() if keys is not None else value
    return make, keys, tuple(_output_spec(item, outputs, index) for item in items)


def _check_output_aliasing(outputs, output_map):
    """Two returned tensors the call made over one storage (`h, h.view(-1)`, `h, h.detach()`)
    are one storage in eager: a write through one shows in the other, and an in-place op on
    the base rebases the view's history.  The Program hands out each output on its own buffer,
    so such a call stays eager (an output that is a view of an external is a view of the
    caller's tensor in the replay too: the re-run view op runs on it)."""
    made = [t._array for t, k in zip(outputs, output_map) if k >= 0]
    for i, a in enumerate(made):
        if any(_share_memory(a, b) for b in made[i + 1:]):
            raise _Unsupported("it returns tensors that share memory (a view or a detach() of "
                               "another returned tensor), which a replay returns apart")


def _share_memory(a, b) -> bool:
    """Whether arrays a and b overlap (disjoint views of one base, `h.chunk(2, -1)`, do not);
    an overlap too costly to decide counts as one."""
    if not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=10_000))
    except np.exceptions.TooHardError:
        return True


def _build_plan(capture, flat, result, effects=(), phases=(), reached=()):
    """`flat`: the call's flattened arguments (_core._call_key); `effects`: the in-place writes
    into tensors it did not make that the replay performs again (_capture_inplace_call);
    `phases`: its backward() and optimizer calls (tapegrad/_step_phases.py), run again after
    the replayed forward."""
    try:
        if not phases and not getattr(phases, "refusals", None):
            return _plan_from(capture, flat, result, effects)
        value, roots = _step_phases.plan_value(capture, result, phases, effects, reached)
        plan = _plan_from(capture, flat, value, effects)
        _step_phases.check_externals(phases, [t for t in plan.sources if isinstance(t, Tensor)])
        plan.phases = _step_phases.StepPhases(phases, roots)
        return plan
    except (_Unsupported, _step_phases.Unphased) as e:
        return _Plan(reason=str(e))


def _nograd_view(t):
    """Whether t, made by the call, is a leaf that requires grad (a view taken under no_grad)."""
    try:
        return t.requires_grad and t.is_leaf
    except RuntimeError:
        # such a view whose base the call has since written in grad mode: PyTorch refuses to
        # answer is_leaf, and the call itself ran (its eager run must decide what to raise)
        return True


def _plan_from(capture, flat, result, effects=()):
    # Every reason the call cannot replay, each once, in the order met: the ops left eager.
    reasons = list(dict.fromkeys(capture.unsupported))
    # The tensors whose autograd state can be read without side effects: a view made stale by
    # an in-place write in the call (a reason already) would regenerate its history when read,
    # earlier than the eager program does, and the backward would add adjoints in another
    # order (_core._is_stale_view)
    created = [t for t in capture.created if not _core._is_stale_view(t)]
    # A replay returns its results from one node: the gradient a retained intermediate would
    # receive from inside the call never reaches a tensor the caller holds.
    if any(t.retains_grad for t in created):
        reasons.append("it calls retain_grad() on a tensor it makes (a replay cannot fill that "
                       "tensor's .grad)")
    # A view taken under no_grad of a tensor that requires grad requires grad too, as a leaf
    # whose gradient goes nowhere (PyTorch's rule): a replay's steps pass every gradient on.
    if any(_nograd_view(t) for t in created):
        reasons.append("it takes a view under no_grad of a tensor that requires grad (a leaf "
                       "the replay cannot stop the gradient at)")
    claimed = capture.claimed
    # every tensor an op made must be a step's result (a claimed one was created by wrap)
    if len(claimed) != len(capture.created):
        readable = {id(t) for t in created}
        for t in capture.created:
            if id(t) not in claimed:
                grad_fn = t.grad_fn if id(t) in readable else None
                reasons.append("it runs an op the replay does not see (reached other than by "
                               "its public name)"
                               + (f" ({grad_fn.name()})" if grad_fn is not None else
                                  " (a tensor creation, conversion or view)"))
        reasons = list(dict.fromkeys(reasons))
    if reasons:
        raise _Unsupported("; ".join(reasons))
    plan = _Plan()

    # outputs: the distinct tensors of the return value (a tensor, or containers of tensors)
    outputs = []
    if isinstance(result, Tensor):
        outputs.append(result)
    else:
        plan.structure = _output_spec(result, outputs, {})

    guard_reads = []
    for t, kind, value in capture.reads:
        if kind == "numpy":
            raise _Unsupported("it reads a tensor's values with .numpy() (a guard cannot re-check "
                               "what Python does with them)")
        guard_reads.append((t, kind, value))
    # An in-place write's operands (other than its target) are read after the forward: roots
    targets = {id(e[4]): e[4] for e in effects}
    effect_reads = [t for e in effects for t in e[3] if id(t) not in targets]
    roots = outputs + [t for t, _, _ in guard_reads] + effect_reads
    if not _pure_calls_set:
        _core._set_pure_calls(_pure_calls())
        _pure_calls_set.append(True)
    (ext, shapes, grad, program_steps, root_slot, saved_ext, dtypes, grad_dtypes,
     typenums) = _core._plan_steps(capture.steps, claimed, roots, is_grad_enabled())
    if _FUSE:
        kept = {root_slot[id(t)] for t in roots}
        program_steps = _core._fuse_relu_kernels(program_steps, grad, len(ext), kept)
        program_steps = _core._fuse_kernel_inputs(program_steps, grad, len(ext), kept)
    # The C steps compute in one float dtype; re-run ops may mix any (their adjoints, computed by
    # their own VJPs, keep their slots' dtypes).
    if len(dtypes) > 1 or not dtypes <= _FLOAT_TYPENUMS.keys():
        raise _Unsupported("its C-replayed ops mix dtypes or compute in a dtype other than "
                           "float32 or float64")
    if any(_typenum_dtype(k).kind not in "fc"
           for k in grad_dtypes):
        raise _Unsupported("a gradient flows through a tensor that is not floating point")
    dtype = (_FLOAT_TYPENUMS[dtypes.pop()] if dtypes else
             next((_FLOAT_TYPENUMS[k] for k in grad_dtypes if k in _FLOAT_TYPENUMS),
                  np.dtype(np.float32)))
    arg_index = {}
    for i, a in enumerate(flat):
        if isinstance(a, Tensor):
            arg_index.setdefault(id(a), i)
    for t in ext:
        a = t._array
        if not a.flags.c_contiguous:
            raise _Unsupported("it reads a non-contiguous tensor")
        if id(t) in arg_index:
            plan.sources.append(arg_index[id(t)])
            plan.ext_meta.append(None)
        else:
            plan.sources.append(t)
            plan.ext_meta.append((a.shape, a.dtype.num, t.requires_grad))
    output_slots = []
    for t in outputs:
        k = root_slot[id(t)]
        if k < len(ext):
            plan.output_map.append(~k)
        else:
            plan.output_map.append(len(output_slots))
            output_slots.append(k)
    _check_output_aliasing(outputs, plan.output_map)
    plan.direct = plan.output_map == list(range(len(plan.output_map)))
    plan.guards = [(root_slot[id(t)], kind, value) for t, kind, value in guard_reads]
    plan.saved_ext = saved_ext
    saved_out = [i for i in _saved_outputs(outputs, ext) if plan.output_map[i] >= 0]
    plan.saved_out = tuple(plan.output_map[i] for i in saved_out)
    # the node eager's error names for an in-place write into a saved output (the op that made it)
    plan.saved_out_nodes = tuple(type(outputs[i].grad_fn).__name__ for i in saved_out)
    if effects:
        _check_effects(targets, ext, outputs, flat)
    effect_slots = {id(t): root_slot[id(t)] for t in effect_reads}
    plan.program = _core.Program(dtype, shapes, grad, len(ext), program_steps,
                                 output_slots, typenums,
                                 [slot for slot, _, _ in plan.guards]
                                 + [k for k in effect_slots.values() if k >= len(ext)],
                                 _FUSE, *(() if _RECOMPUTE_BYTES is None else (_RECOMPUTE_BYTES,)))
    for fn, args, kwargs, _, _ in effects:
        plan.program.add_effect(fn, args, kwargs, effect_slots)
    plan.program.outputs_checked(plan.saved_out)
    return plan
