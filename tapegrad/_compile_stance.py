"""torch.compiler.set_stance: how compiled functions behave, changed without compiling again.

Stances (PyTorch's): "default"; "force_eager" (every compiled function runs its Python code, as
if never compiled); "eager_then_compile" (a function's first call runs eagerly, later calls
compile); "eager_on_recompile" (a call that would need a new compilation runs eagerly instead);
"fail_on_recompile" (such a call raises PyTorch's RuntimeError).

"Would need a new compilation" is PyTorch's notion, not tapegrad's: tapegrad.compile captures
once per exact signature, while torch.compile compiles once, then again with a dimension made
dynamic the first time its size changes (any later size >= 2 then reuses that compilation).
Each compiled function keeps a model of the compilations PyTorch would hold (_CacheModel, updated
when tapegrad captures), so that the two stances that depend on it raise, or run eagerly, for the
same calls as PyTorch, naming the same guard failures.

While a stance other than "default" holds, the compiled call path sends each call here
(src/tapegrad/replay.pxi, _set_compile_stance_active); under "default" a call costs nothing more.
"""
from __future__ import annotations as _annotations

import functools
import inspect
import itertools

from . import _core

__all__ = ["set_stance"]

_STANCES = ("default", "force_eager", "eager_then_compile", "aot_eager_then_compile",
            "eager_on_recompile", "fail_on_recompile")


class _Stance:
    def __init__(self, stance="default", skip_guard_eval_unsafe=False, backend=None):
        self.stance = stance
        self.skip_guard_eval_unsafe = skip_guard_eval_unsafe
        self.backend = backend

    def __repr__(self):
        return (f"DynamoStance(stance={self.stance!r}, skip_guard_eval_unsafe="
                f"{self.skip_guard_eval_unsafe}, backend={self.backend!r})")


_current = [_Stance()]


def _install(stance: _Stance) -> None:
    _current[0] = stance
    _core._set_compile_stance_active(stance.stance != "default")


def _refuse_inside_capture(what) -> None:
    """A stance cannot change inside compiled code: PyTorch's tracer refuses the call, naming
    the user code's line that made it."""
    from .replay import current_capture
    if current_capture() is not None:
        raise AssertionError(f"Attempt to trace forbidden callable {what}\n\nfrom user code:\n"
                             f"{_user_call_site()}\nSet TORCHDYNAMO_VERBOSE=1 for the internal "
                             "stack trace (please do this especially if you're reporting a bug to "
                             "PyTorch). For even more developer context, set TORCH_LOGS=\"+dynamo\"\n")


def _user_call_site() -> str:
    """The innermost call outside tapegrad on the stack, as a traceback entry with its call
    underlined (PyTorch's "from user code" part)."""
    import linecache
    import sys
    frame = sys._getframe(1)
    package = __name__.rsplit(".", 1)[0]
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == package:
        frame = frame.f_back
    if frame is None:
        return ""
    code = frame.f_code
    line = linecache.getline(code.co_filename, frame.f_lineno).rstrip("\n")
    stripped = line.lstrip()
    entry = f'   File "{code.co_filename}", line {frame.f_lineno}, in {code.co_name}\n    {stripped}\n'
    positions = list(code.co_positions())[frame.f_lasti // 2]
    if positions[0] == positions[1] == frame.f_lineno and None not in positions[2:]:
        indent = len(line) - len(stripped)
        entry += "    " + " " * (positions[2] - indent) + "^" * (positions[3] - positions[2]) + "\n"
    return entry


class set_stance:
    """Set the compiler's stance (see the module docs): as a function call (it holds until set
    again), a context manager (restored on exit) or a decorator (held during each call)."""

    def __init__(self, stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
        _refuse_inside_capture(_public_set_stance())
        if force_backend is not None and stance != "default":
            raise RuntimeError("non-default stance cannot have force_backend set")
        self.stance = _Stance(stance, skip_guard_eval_unsafe, force_backend)
        self.prev = _current[0]
        _install(self.stance)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _install(self.prev)
        return False

    def __call__(self, fn):
        _install(self.prev)          # decorating sets nothing: each call does

        @functools.wraps(fn)
        def with_stance(*args, **kwargs):
            _refuse_inside_capture(fn)
            prev = _current[0]
            _install(self.stance)
            try:
                return fn(*args, **kwargs)
            finally:
                _install(prev)
        return with_stance


def _public_set_stance():
    """(What PyTorch names as the forbidden callable: torch.compiler.set_stance.)"""
    from .compiler import set_stance as public
    return public


def call_with_stance(compiled, args: tuple, kwargs: dict):
    """A compiled function's call while a stance other than "default" holds."""
    stance = _current[0]
    name = stance.stance
    if name not in _STANCES:
        raise RuntimeError(f"invalid torch.compile stance '{stance!r}'")
    if name == "force_eager":
        return compiled.fn(*args, **kwargs)
    model = compiled._torch_cache
    if name in ("eager_then_compile", "aot_eager_then_compile") and not model.invoked:
        model.invoked = True
        return compiled.fn(*args, **kwargs)
    if name in ("eager_on_recompile", "fail_on_recompile"):
        failures = model.failures(args, kwargs)
        if failures is not None:
            if name == "eager_on_recompile":
                return compiled.fn(*args, **kwargs)
            raise RuntimeError(model.recompile_message(failures))
    return compiled._default_call(args, kwargs)


# -- PyTorch's compilations of one function, as guards -----------------------------------------------

_frame_ids = itertools.count()


class _TensorGuard:
    """What a compilation checks of a tensor argument: dtype, requires_grad, rank, strides (of a
    static one) and each dimension's size (None: dynamic, any size but 0 and 1)."""

    def __init__(self, t, dynamic_dims):
        self.dtype = t.dtype
        self.requires_grad = t.requires_grad
        self.sizes = tuple(None if d in dynamic_dims else n for d, n in enumerate(t.shape))
        self.strides = tuple(t.stride()) if not dynamic_dims else None

    def failure(self, name, t):
        from ._extra_ops import _scalar_type_name
        if not isinstance(t, _core.TensorBase):
            return f"isinstance({name}, torch.Tensor)"
        if t.dtype != self.dtype:
            return (f"tensor '{name}' dtype mismatch. expected {_scalar_type_name(self.dtype)}, "
                    f"actual {_scalar_type_name(t.dtype)}")
        if t.requires_grad != self.requires_grad:
            return f"tensor '{name}' requires_grad mismatch. expected requires_grad={int(self.requires_grad)}"
        if t.dim() != len(self.sizes):
            return f"tensor '{name}' rank mismatch. expected {len(self.sizes)}, actual {t.dim()}"
        for i, (want, got) in enumerate(zip(self.sizes, t.shape)):
            if want is not None and want != got:
                return f"tensor '{name}' size mismatch at index {i}. expected {want}, actual {got}"
        if self.strides is not None:
            for i, (want, got) in enumerate(zip(self.strides, t.stride())):
                if want != got:
                    return f"tensor '{name}' stride mismatch at index {i}. expected {want}, actual {got}"
        for i, (want, got) in enumerate(zip(self.sizes, t.shape)):
            if want is None and got < 2:          # PyTorch specialises sizes 0 and 1
                return f"2 <= {name}.size()[{i}]"
        return None


class _ValueGuard:
    """What a compilation checks of another argument: its value (a specialised int, bool, str or
    None: PyTorch's EQUALS_MATCH, which checks the type too), or only its type (a float, which
    PyTorch compiles as a dynamic value, and an int made dynamic by a changed value)."""

    def __init__(self, value, dynamic):
        self.type = type(value)
        self.dynamic = dynamic
        self.value = value

    def failure(self, name, value):
        if self.dynamic:
            if type(value) is self.type:
                return None
            return f"___check_type_id({name}, {id(self.type)}), type={self.type!r}"
        if type(value) is self.type and value == self.value:
            return None
        return f"{name} == {self.value!r}"


class _CacheModel:
    """The compilations torch.compile would hold for one function: a list of guard sets (one per
    compilation), and the automatic-dynamic state (the sizes seen first; a dimension or int whose
    value changed is dynamic in later compilations)."""

    def __init__(self, fn):
        self.fn = fn
        self.entries = []              # newest last: (compile_id, [[name, guard, failures]])
        self.first_seen = {}           # name -> sizes (a tensor) or value
        self.dynamic = {}              # name -> set of dynamic dims (a tensor) or True (an int)
        self.frame_id = None
        self.invoked = False

    def _signature_target(self):
        fn = self.fn
        from .nn.modules.module import Module
        return fn.forward if isinstance(fn, Module) else fn

    def _arguments(self, args, kwargs):
        """(name, value) of each argument, named as PyTorch's guards name them (a compiled
        Module's call goes through a wrapper taking *args, **kwargs)."""
        from .nn.modules.module import Module
        if isinstance(self.fn, Module):
            return [(f"args[{i}]", a) for i, a in enumerate(args)] + [
                (f"kwargs[{k!r}]", v) for k, v in kwargs.items()]
        try:
            bound = inspect.signature(self._signature_target()).bind(*args, **kwargs)
        except (TypeError, ValueError):
            return [(f"args[{i}]", a) for i, a in enumerate(args)] + list(kwargs.items())
        named = []
        for name, value in bound.arguments.items():
            kind = bound.signature.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                named.extend((f"{name}[{i}]", v) for i, v in enumerate(value))
            elif kind is inspect.Parameter.VAR_KEYWORD:
                named.extend((f"{name}[{k!r}]", v) for k, v in value.items())
            else:
                named.append((name, value))
        return named

    @staticmethod
    def _guarded(value) -> bool:
        return isinstance(value, (_core.TensorBase, bool, int, float, str)) or value is None

    def failures(self, args, kwargs):
        """None when a compilation covers the call; else each compilation's first failing guard,
        newest first, as [(compile_id, text)] (empty: nothing compiled yet).

        A compilation checks its arguments' guards in argument order, except that (as PyTorch's
        guard manager does, to fail fast) a guard that failed moves ahead of those that failed
        less often: which failure is named depends on the calls before."""
        values = dict(a for a in self._arguments(args, kwargs) if self._guarded(a[1]))
        found = []
        for compile_id, guards in reversed(self.entries):
            text = None
            for i, checked in enumerate(guards):
                name, guard = checked[0], checked[1]
                if name in values:
                    text = guard.failure(name, values[name])
                    if text is not None:
                        checked[2] += 1
                        if i:
                            guards.sort(key=lambda c: -c[2])     # (stable)
                        break
            if text is None:
                return None
            found.append((compile_id, text))
        return found

    def note_compile(self, args, kwargs) -> None:
        """A capture ran for this call: record the compilation PyTorch would make, if it would
        make one (no compilation covers the call)."""
        self.invoked = True
        failures = self.failures(args, kwargs) if self.entries else []
        if failures is None:
            return
        if self.frame_id is None:
            self.frame_id = next(_frame_ids)
        guards = []                 # [name, guard, failures so far]
        for name, value in self._arguments(args, kwargs):
            if not self._guarded(value):
                continue
            if isinstance(value, _core.TensorBase):
                sizes = tuple(value.shape)
                seen = self.first_seen.setdefault(name, sizes)
                dyn = self.dynamic.setdefault(name, set())
                if isinstance(seen, tuple) and len(seen) == len(sizes):
                    dyn.update(d for d, (a, b) in enumerate(zip(seen, sizes)) if a != b)
                guards.append([name, _TensorGuard(value, dyn), 0])
            else:
                # a float is dynamic from the start; an int once its value changed
                seen = self.first_seen.setdefault(name, value)
                if type(value) is int and type(seen) is int and seen != value:
                    self.dynamic[name] = True
                dynamic = type(value) is float or (type(value) is int and self.dynamic.get(name) is True)
                guards.append([name, _ValueGuard(value, dynamic), 0])
        compile_id = f"{self.frame_id}/{len(self.entries)}"
        self.entries.append((compile_id, guards))
        if failures:
            from . import _logging
            _logging._log_recompile(compile_id, self._where("Recompiling function {name} in {file}:{line}")
                                    + self._triggered_by(failures))

    def _where(self, form: str) -> str:
        code = getattr(self._signature_target(), "__code__", None)
        if code is None:
            return ""
        return form.format(name=code.co_name, file=code.co_filename, line=code.co_firstlineno)

    @staticmethod
    def _triggered_by(failures) -> str:
        return "\n    triggered by the following guard failure(s):" + "".join(
            f"\n    - {compile_id}: {text}" for compile_id, text in failures)

    def recompile_message(self, failures) -> str:
        where = self._where("filename: '{file}', function name: '{name}', line number: {line}")
        message = f"Detected recompile when torch.compile stance is 'fail_on_recompile'. {where}"
        return message + (self._triggered_by(failures) if failures else "")

    def reset(self) -> None:
        self.entries.clear()
        self.first_seen.clear()
        self.dynamic.clear()
