"""tapegrad.jit: the torch.jit entry points scripts call, running the same Python computation.

No TorchScript IR is built: `script` and `trace` return callables / modules that run the original
Python code (tapegrad records its tape at run time, so there is nothing to compile).  Asking for
the IR (`.graph`, `.code`, `.inlined_graph`, `.graph_for`) raises NotImplementedError rather
than returning something that is not TorchScript.

As in torch, `script(module)` / `trace(module, ...)` return a new `RecursiveScriptModule` /
`TopLevelTracedModule` (an nn.Module, not an instance of the scripted class) sharing the
original's parameters, buffers and submodules; its forward and other methods are the original
class's, bound to it.  `save` / `load` store such a module with tapegrad.save (pickle): unlike a
TorchScript archive, loading needs the module's class to be importable; `load` returns a
`RecursiveScriptModule` whatever was saved, as torch does.

Such a module prints as torch's does (each module of the tree shows only
`original_name=<class>`).  Its submodules, though, are the original modules, not compiled ones:
`type(scripted.child)` is the child's class (torch: RecursiveScriptModule / TracedModule) and has
no `original_name`.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import contextlib
import typing
import warnings

from .._torch_names import TorchNamedClass as _TorchNamedClass

from ..nn import Module
from ..nn.modules.module import _addindent

__all__ = ["script", "trace", "trace_module", "ScriptModule", "ScriptFunction",
           "RecursiveScriptModule", "TopLevelTracedModule", "ignore", "unused", "export",
           "is_scripting", "is_tracing", "annotate", "Final", "save", "load", "fork", "wait",
           "Future", "freeze", "optimize_for_inference", "script_method", "isinstance",
           "Error", "Attribute", "interface", "set_fusion_strategy", "enable_onednn_fusion",
           "onednn_fusion_enabled", "strict_fusion"]

Final = typing.Final



_NO_IR = ("tapegrad.jit builds no TorchScript IR: {what} is not available (the scripted object "
          "runs the original Python code)")
_tracing = False


class _NoIR:
    """The IR accessors of a scripted object: each raises a clear NotImplementedError."""

    @property
    def graph(self):
        """TorchScript graph: not built by tapegrad (NotImplementedError)."""
        raise NotImplementedError(_NO_IR.format(what=".graph"))

    @property
    def inlined_graph(self):
        """TorchScript inlined graph: not built by tapegrad (NotImplementedError)."""
        raise NotImplementedError(_NO_IR.format(what=".inlined_graph"))

    @property
    def code(self):
        """TorchScript source: not built by tapegrad (NotImplementedError)."""
        raise NotImplementedError(_NO_IR.format(what=".code"))

    def graph_for(self, *args, **kwargs):
        """TorchScript specialised graph: not built by tapegrad (NotImplementedError)."""
        raise NotImplementedError(_NO_IR.format(what=".graph_for()"))


class ScriptFunction(_NoIR):
    """A scripted or traced function: calling it calls the original function."""

    def __init__(self, function):
        self._function = function
        self.name = getattr(function, "__name__", type(function).__name__)
        self.__name__ = self.name
        self.__doc__ = getattr(function, "__doc__", None)

    def __call__(self, *args, **kwargs):
        return self._function(*args, **kwargs)

    def save(self, f, **kwargs):
        """Saving a scripted function needs TorchScript serialization (NotImplementedError)."""
        raise NotImplementedError(_NO_IR.format(what="ScriptFunction.save"))

    def __repr__(self):
        return f"<tapegrad.jit.ScriptFunction object wrapping {self.name}>"


class ScriptModule(_NoIR, Module):
    """Base class of scripted and traced modules (isinstance checks as torch.jit.ScriptModule)."""

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)     # parameters, buffers, submodules
        except AttributeError:
            pass
        original_class = self.__dict__.get("_original_class")
        attribute = getattr(original_class, name, None) if original_class is not None else None
        if attribute is None:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        return attribute.__get__(self, type(self)) if hasattr(attribute, "__get__") else attribute

    def forward(self, *args, **kwargs):
        """The scripted module's original ``forward``, bound to this module."""
        return self._original_class.forward(self, *args, **kwargs)

    def save(self, f, **kwargs):
        """Store the module with :func:`tapegrad.jit.save`."""
        save(self, f, **kwargs)

    def _original(self):
        """A plain instance of the original class sharing this module's state (for pickling)."""
        plain = object.__new__(self._original_class)
        state = dict(self.__dict__)
        del state["_original_class"]
        plain.__dict__.update(state)
        return plain

    @property
    def original_name(self) -> str:
        """The name of the class the module was scripted or traced from (as torch shows it)."""
        return self._original_class.__name__

    def extra_repr(self):
        # TorchScript keeps no Python extra_repr: torch shows only the original class's name.
        return f"original_name={self.original_name}"

    def _get_name(self):
        return self._original_class.__name__

    def __repr__(self):
        return _compiled_repr(self, self._shown_name)


class RecursiveScriptModule(ScriptModule):
    """What :func:`script` returns for a Module (and :func:`load` for any saved module)."""

    @staticmethod
    def _shown_name(class_name: str) -> str:
        return "RecursiveScriptModule"      # torch's script modules all print under this name

    def _get_name(self):
        return "RecursiveScriptModule"


class TopLevelTracedModule(ScriptModule):
    """What :func:`trace` returns for a Module."""

    @staticmethod
    def _shown_name(class_name: str) -> str:
        return class_name                   # torch's traced modules print their class's name


def _original_class_of(module) -> type:
    return module._original_class if isinstance(module, ScriptModule) else type(module)


def _compiled_repr(module, shown_name) -> str:
    """The repr torch prints for a scripted or traced module tree: every module, the submodules
    included, shows only ``original_name=<its class>`` (a compiled module has no Python
    extra_repr), under the name ``shown_name(class name)`` gives for that kind of wrapper (a
    submodule scripted on its own keeps its own kind's name inside a trace, as in torch).
    The layout is nn.Module's: one line for a leaf, one indented line per child otherwise."""
    if isinstance(module, ScriptModule):
        shown_name = module._shown_name
    class_name = _original_class_of(module).__name__
    extra = f"original_name={class_name}"
    child_lines = [f"({name}): " + _addindent(_compiled_repr(child, shown_name), 2)
                   for name, child in module._modules.items() if child is not None]
    if not child_lines:
        return f"{shown_name(class_name)}({extra})"
    return f"{shown_name(class_name)}(\n  " + "\n  ".join([extra] + child_lines) + "\n)"


def _wrap_module(module, cls):
    wrapped = object.__new__(cls)
    wrapped.__dict__.update(module.__dict__)
    # Own containers (shared tensors and submodules): registering on one does not touch the other.
    for key in ("_parameters", "_buffers", "_modules"):
        wrapped.__dict__[key] = dict(module.__dict__[key])
    wrapped.__dict__["_original_class"] = type(module)
    return wrapped


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Return ``obj`` as a scripted object that runs the same computation (no IR is compiled).

    A Module becomes a :class:`RecursiveScriptModule` sharing its parameters; a function becomes a
    :class:`ScriptFunction`; an already scripted object is returned as is."""
    if isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    if isinstance(obj, Module):
        return _wrap_module(obj, RecursiveScriptModule)
    if isinstance(obj, type):       # a class TorchScript would compile: usable as it is
        return obj
    if callable(obj):
        return ScriptFunction(obj)
    raise RuntimeError(f"Unsupported type {type(obj).__name__} for tapegrad.jit.script: expected "
                       "a Module, a function or a class")


@contextlib.contextmanager
def _tracing_block():
    global _tracing
    previous, _tracing = _tracing, True
    try:
        yield
    finally:
        _tracing = previous


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True):
    """Run ``func`` once on ``example_inputs`` (a tensor or a tuple; ``is_tracing()`` is True
    meanwhile) and return an object that runs the same Python computation on any input: a
    :class:`TopLevelTracedModule` for a Module, a :class:`ScriptFunction` otherwise.  Unlike a
    TorchScript trace, data-dependent control flow is NOT frozen to the example's path."""
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("example_kwarg_inputs or example_inputs should be provided")
    args = example_inputs if isinstance(example_inputs, tuple) else \
        (() if example_inputs is None else (example_inputs,))
    with _tracing_block():
        func(*args, **(example_kwarg_inputs or {}))
    if isinstance(func, Module):
        return _wrap_module(func, TopLevelTracedModule)
    return ScriptFunction(func)


def trace_module(mod, inputs, **kwargs):
    """Trace the methods named in ``inputs`` (a dict name -> example inputs) of ``mod``."""
    with _tracing_block():
        for name, example in inputs.items():
            getattr(mod, name)(*(example if isinstance(example, tuple) else (example,)))
    return _wrap_module(mod, TopLevelTracedModule)


def _flag(marker):
    def decorator(fn=None, **options):
        if fn is None:              # used as @jit.ignore(drop=True)
            return lambda f: decorator(f, **options)
        setattr(fn, "_tapegrad_jit", marker)
        return fn
    return decorator


ignore = _flag("ignore")
ignore.__doc__ = "Mark a method to be left to Python (always the case here): returns it unchanged."
unused = _flag("unused")
unused.__doc__ = "Mark a method the compiler would skip: returns it unchanged."
export = _flag("export")
export.__doc__ = "Mark a method as a compiled entry point: returns it unchanged."


def _check_overload_body(fn) -> None:
    """An overload declaration's body must be only `pass` or `...` (PyTorch parses the source;
    unreadable source is a warning, not an error)."""
    import ast
    import inspect
    import textwrap
    import warnings
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        warnings.warn(f"Unable to retrieve source for @torch.jit._overload function: {fn}.",
                      stacklevel=3)
        return
    body = ast.parse(textwrap.dedent(source)).body[0].body
    only = body[0] if len(body) == 1 else None
    if not (isinstance(only, ast.Pass) or (isinstance(only, ast.Expr)
                                           and isinstance(only.value, ast.Constant)
                                           and only.value.value is Ellipsis)):
        raise RuntimeError("Only `pass` statement or `...` can be the body of overload "
                           "declaration:\n" + "\n".join(source.split("\n")[:3])
                           + " <- Expecting `pass` or `...` here!")


def _overload(fn):
    """Declare a TorchScript overload of a function (torchvision's models use it): the compiler
    is never run here, so the declaration is checked and returned; the implementation defined
    after it under the same name is the one Python calls."""
    _check_overload_body(fn)
    return fn


def _overload_method(fn):
    """`_overload` for a method (torchvision's DenseNet declares `forward` for a Tensor and for a
    List[Tensor] this way, then defines it)."""
    _check_overload_body(fn)
    return fn


def script_method(fn):
    """The method decorator of a ``ScriptModule`` subclass (the legacy scripting API): here the
    method stays the Python it is and is returned unchanged (with PyTorch's deprecation
    warning)."""
    import warnings
    warnings.warn("`torch.jit.script_method` is deprecated. Please switch to `torch.compile` or "
                  "`torch.export`.", DeprecationWarning)
    # (stacklevel 1, as PyTorch's: attributed to this module, the default filters hide it)
    return fn


def is_scripting() -> bool:
    """False: tapegrad never compiles, code always runs as Python."""
    return False


def is_tracing() -> bool:
    """True only while :func:`trace` runs its example inputs."""
    return _tracing


def annotate(the_type, the_value):
    """A type hint for the TorchScript compiler: returns ``the_value`` unchanged."""
    return the_value


class Error(Exception, metaclass=_TorchNamedClass):
    """The exception TorchScript's `raise` statements and runtime checks raise (torch.jit.Error,
    an Exception, not a RuntimeError); scripts catch it around scripted calls."""


from ._script import Attribute, interface  # noqa: E402


def __getattr__(name):
    # torch.jit.isinstance (tapegrad/jit/_refinement.py), reached here so that the module's
    # own code keeps the builtin isinstance
    if name == "isinstance":
        from ._refinement import jit_isinstance
        return jit_isinstance
    raise AttributeError(f"module 'torch.jit' has no attribute '{name}'")


from ._fuser import (fuser, set_fusion_strategy, enable_onednn_fusion,  # noqa: E402
                     onednn_fusion_enabled)


class strict_fusion:
    """Asks TorchScript to fail unless the block is fused: only meaningful in a scripted
    function, which tapegrad runs as Python (PyTorch warns likewise outside one)."""

    def __init__(self):
        warnings.warn("Only works in script mode", stacklevel=2)

    def __enter__(self):
        pass

    def __exit__(self, exc_type, exc_value, tb):
        pass


# torch.jit.fork's futures are torch.futures' and its calls torch.fork's (one implementation),
# with TorchScript's deprecation warning (stacklevel 1, as PyTorch's).
from .. import _fork  # noqa: E402
from ..futures import Future  # noqa: E402


def fork(func, *args, **kwargs):
    """Run ``func(*args, **kwargs)`` (eagerly, in this thread) and return a completed
    :class:`Future`; an exception it raises propagates here, as PyTorch's eager fork's does."""
    import warnings
    warnings.warn("`torch.jit.fork` is deprecated. Please use `torch.compile` instead.",
                  DeprecationWarning)
    return _fork.fork(func, *args, **kwargs)


def wait(future):
    """The result of a :func:`fork` (waits for a Future completed elsewhere)."""
    import warnings
    warnings.warn("`torch.jit.wait` is deprecated. Please use `torch.compile` instead.",
                  DeprecationWarning)
    return _fork.wait(future)


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """Module freezing is an IR optimisation: returns ``mod`` unchanged (it must be scripted and
    in eval mode, as torch requires)."""
    if not isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use torch.jit.script "
                           "or torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    return mod


def optimize_for_inference(mod, other_methods=None):
    """An IR optimisation pass: returns the scripted module in eval mode, computation unchanged."""
    return script(mod).eval()


def save(m, f, _extra_files=None):
    """Store a scripted/traced module (or a plain Module) with tapegrad.save.  Unlike a
    TorchScript archive the file holds a pickle: :func:`load` needs the class importable."""
    from ..serialization import save as save_object
    if isinstance(m, ScriptFunction):
        m.save(f)
    if not isinstance(m, Module):
        raise TypeError(f"tapegrad.jit.save expects a Module, got {_type_name(m)}")
    kind = type(m) if isinstance(m, ScriptModule) else RecursiveScriptModule
    plain = m._original() if isinstance(m, ScriptModule) else m
    save_object({"tapegrad.jit": kind.__name__, "module": plain}, f)


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """Load what :func:`save` stored, as a scripted module.  A TorchScript archive written by
    PyTorch cannot be read (RuntimeError)."""
    from ..serialization import load as load_object
    try:
        stored = load_object(f, map_location=map_location, weights_only=False)
    except Exception as error:  # noqa: BLE001 - any unreadable file gets the same explanation
        raise RuntimeError("tapegrad.jit.load reads modules written by tapegrad.jit.save; "
                           f"TorchScript archives are not supported ({error})") from error
    if not (isinstance(stored, dict) and "tapegrad.jit" in stored):
        raise RuntimeError("tapegrad.jit.load reads modules written by tapegrad.jit.save; "
                           "this file is not one")
    # A loaded archive is a compiled module whatever made it (torch returns a
    # RecursiveScriptModule for a saved trace too).
    return _wrap_module(stored["module"], RecursiveScriptModule)


# torch.jit.annotations is an attribute after a bare `import torch` (torch.jit imports it).
from . import annotations  # noqa: E402,F401
