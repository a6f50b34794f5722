"""torch.overrides: PyTorch's __torch_function__ protocol.

Tensor subclasses: a subclass of Tensor that keeps the protocol (nn.Parameter and its subclasses
opt out) is registered when its class is made (Tensor.__init_subclass__ -> _register_subclass).
From then on a public function's or Tensor method's call with one of its instances among the
arguments goes to the subclass's __torch_function__ (out_arg_call.h finds them, for the C entries
of public functions and methods; the class's other attributes -- operators, Python-level methods,
tensor-valued properties -- are replaced on the subclass by dispatching ones, so a plain Tensor
pays nothing), and Tensor's default __torch_function__ runs the call with the dispatch off and
returns its tensors as the subclass: results keep their type, as in PyTorch.

Tensor-like objects: a public function (tapegrad.*, nn.functional, linalg, ...) called with an
object that is no Tensor but whose type defines __torch_function__ (a ScalarTensor, a wrapper)
dispatches to it as PyTorch's builtins do (dispatch_refused_call).  The public entry finds those
only when the call refused its arguments with a TypeError (_public_calls.binding_error), so the
ordinary call pays nothing.

Also here: telling tensors from other objects (is_tensor_like), and the protocol as user code
drives it (has_torch_function, handle_torch_function)."""
from __future__ import annotations as _annotations

import functools
from collections.abc import Sequence

from . import _core
from .tensor import Tensor

__all__ = ["BaseTorchFunctionMode", "TorchFunctionMode", "handle_torch_function",
           "has_torch_function", "has_torch_function_unary", "resolve_name",
           "has_torch_function_variadic", "is_tensor_like"]

def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """The __torch_function__ of a class that opts out of the protocol (nn.Parameter's)."""
    return func(*args, **(kwargs or {}))


class _DisableTorchFunctionSubclass:
    """While active (in this thread), has_torch_function answers False and calls do not dispatch
    to Tensor subclasses: the function runs its plain path."""

    def __enter__(self):
        self.previous = _core._subclass_dispatch_set_off(True)
        return self

    def __exit__(self, *exc):
        _core._subclass_dispatch_set_off(self.previous)
        return False


@functools.lru_cache(maxsize=None)
def _plain_own_class(cls) -> bool:
    """Whether `cls` is one of tapegrad's own Tensor classes that keeps Tensor's behaviour: all but
    those that define a __torch_function__ of their own or take one from a mixin (nn.utils'
    ExpandedWeight, which makes the layer functions record per-sample gradients, as PyTorch's
    does; the lazy modules' placeholders, which refuse ops).  Cached per class:
    has_torch_function asks it of every Parameter argument."""
    return cls.__module__.startswith("tapegrad") and not any(
        "__torch_function__" in vars(klass) for klass in cls.__mro__
        if klass is not Tensor and klass.__module__.startswith("tapegrad"))


def _overloads(arg) -> bool:
    cls = type(arg)
    if cls is Tensor or (isinstance(arg, _core.TensorBase) and _plain_own_class(cls)):
        return False        # (tapegrad's own tensor classes, meta tensors' included, are plain)
    method = getattr(cls, "__torch_function__", None)
    if method is None or getattr(method, "__func__", method) is _disabled_torch_function_impl:
        return False
    return not _core._subclass_dispatch_set_off(None)


def has_torch_function(relevant_args) -> bool:
    """Whether any of `relevant_args` (a sequence) defines a __torch_function__ override: a
    non-Tensor object with one, or an instance of a Tensor subclass (plain Tensors and Parameters
    do not count); always while a torch function mode is active."""
    if not isinstance(relevant_args, Sequence):
        raise TypeError("expected a sequence")
    return bool(_mode_stack()) or any(_overloads(arg) for arg in relevant_args)


def has_torch_function_unary(obj) -> bool:
    """has_torch_function((obj,))."""
    return bool(_mode_stack()) or _overloads(obj)


def has_torch_function_variadic(*args) -> bool:
    """has_torch_function(args)."""
    return bool(_mode_stack()) or any(_overloads(arg) for arg in args)


def _overloaded_args(relevant_args):
    """One argument per overloading type, in order of appearance except that a subclass comes
    before its superclasses (whose __torch_function__ it may extend)."""
    found, seen = [], set()
    for arg in relevant_args:
        cls = type(arg)
        if cls in seen or not _overloads(arg):
            continue
        seen.add(cls)
        at = len(found)
        for i, other in enumerate(found):
            if issubclass(cls, type(other)):
                at = i
                break
        found.insert(at, arg)
    return found


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call the __torch_function__ overrides of `relevant_args`' types, subclasses first, with
    (public_api, types, args, kwargs); the first result other than NotImplemented is returned.
    An active torch function mode comes first."""
    if _mode_stack():
        return _call_through_modes(public_api, list(relevant_args), args, kwargs, _USER_LEVEL)
    overloaded = _overloaded_args(relevant_args)
    types = tuple(type(arg) for arg in overloaded)
    for arg in overloaded:
        result = arg.__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = f"{public_api.__module__}.{public_api.__name__}"
    raise TypeError(f"no implementation found for '{name}' on types that implement "
                    f"__torch_function__: {[type(arg) for arg in overloaded]}")


def _convert(result, cls):
    """`result`'s tensors as instances of `cls` (views, as as_subclass makes)."""
    if cls is Tensor:
        return result
    if isinstance(result, _core.TensorBase) and not isinstance(result, cls):
        return result.as_subclass(cls)
    if isinstance(result, (tuple, list)):
        return type(result)(_convert(r, cls) for r in result)
    return result


def is_tensor_like(inp) -> bool:
    """True for a Tensor (or a subclass instance), for the Tensor class and its subclasses, and
    for any object defining __torch_function__ (PyTorch's duck-typed tensors)."""
    return type(inp) is Tensor or isinstance(inp, Tensor) or hasattr(inp, "__torch_function__") \
        or (isinstance(inp, type) and issubclass(inp, Tensor))


def _relevant(args, kwargs) -> list:
    relevant = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, (list, tuple)):
            relevant.extend(value)
        else:
            relevant.append(value)
    return relevant


def dispatch_refused_call(entry, args, kwargs):
    """(result,) of a public function's call that refused its arguments, when some of them are
    Tensor-like objects (not Tensors: tapegrad's ops do not dispatch to subclasses) to dispatch to,
    as PyTorch's builtins do (None otherwise)."""
    overloaded = [a for a in _overloaded_args(_relevant(args, kwargs)) if not isinstance(a, Tensor)]
    if not overloaded:
        return None
    types = tuple(type(a) for a in overloaded)
    for arg in overloaded:
        result = arg.__torch_function__(entry, types, args, kwargs)
        if result is not NotImplemented:
            return (result,)
    name = getattr(entry, "__name__", repr(entry))
    module = getattr(entry, "__module__", "") or ""
    qualified = "torch." + name if module in ("tapegrad", "torch") else name
    listed = "".join(f"  - tensor subclass {t!r}\n" for t in types)
    raise TypeError(f"Multiple dispatch failed for '{qualified}'; all __torch_function__ handlers "
                    f"returned NotImplemented:\n\n{listed}\nFor more information, try re-running "
                    "with TORCH_LOGS=not_implemented")


# -- Tensor subclasses ------------------------------------------------------------------------------

_SUBCLASS_TYPES: set = set()    # the subclasses that dispatch (out_arg_call.h reads this set)

# Tensor's attributes a subclass keeps as they are: object protocol, construction, copying and
# pickling (their own code handles subclasses), and the protocol itself.
_KEPT = frozenset((
    "__new__", "__init__", "__init_subclass__", "__torch_function__", "__class__", "__dict__",
    "__doc__", "__module__", "__getattribute__", "__getattr__", "__setattr__", "__delattr__",
    "__dir__", "__sizeof__", "__reduce__", "__reduce_ex__", "__setstate__", "__getstate__",
    "__deepcopy__", "__copy__", "__hash__", "__subclasshook__", "__weakref__", "__class_getitem__",
    "__array_priority__", "__pyx_vtable__", "__qualname__", "as_subclass"))

# Properties whose value is a tensor of the instance's kind (PyTorch converts them; .grad and
# ._base it does not: get_default_nowrap_functions).
_TENSOR_PROPERTIES = ("T", "mT", "H", "mH", "real", "imag", "data")

# The operators PyTorch reports to __torch_function__ as the method they compute.
_OPERATOR_METHODS = {
    "__add__": "add", "__radd__": "add", "__sub__": "sub", "__mul__": "mul", "__rmul__": "mul",
    "__truediv__": "div", "__neg__": "neg", "__pow__": "pow", "__matmul__": "matmul",
    "__abs__": "abs", "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge",
    "__ne__": "ne", "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_",
    "__itruediv__": "div_"}


def _dispatch_subclass_call(entry, args, kwargs):
    """A public function's or Tensor method's call holding a dispatching subclass's instance
    (out_arg_call.h): to the overriding __torch_function__s, `entry` as the function.  A call
    whose only such argument is torch.bfloat16 itself (dtype=torch.bfloat16) goes to
    tapegrad/_bfloat16.py."""
    relevant = _relevant(args, kwargs)
    if not _overloaded_args(relevant):
        from ._bfloat16 import dtype_call
        return dtype_call(entry, args, kwargs)
    return handle_torch_function(entry, relevant, *args, **kwargs)


def _dispatching_method(func, plain):
    """The subclass's version of a Tensor attribute `plain` (called as plain(self, ...)):
    dispatches as `func` unless the dispatch is off."""
    def method(self, *args, **kwargs):
        if _core._subclass_dispatch_set_off(None):
            return plain(self, *args, **kwargs)
        return handle_torch_function(func, _relevant((self, *args), kwargs), self, *args,
                                     **kwargs)
    method.__name__ = method.__qualname__ = getattr(plain, "__name__", "method")
    method.__doc__ = getattr(plain, "__doc__", None)
    method._dispatches = True
    return method


class _DispatchingProperty(property):
    """A tensor-valued property of a subclass, dispatching its reads."""


def _property_read_by(descriptor, read, kind=property):
    """A property of `kind` over Tensor's `descriptor` whose reads go to `read` (writes, where
    the descriptor takes them, to the descriptor)."""
    writable = getattr(descriptor, "fset", None) is not None or (
        not isinstance(descriptor, property) and hasattr(descriptor, "__set__"))

    def write(self, value):
        descriptor.__set__(self, value)
    return kind(read, write if writable else None, doc=descriptor.__doc__)


def _dispatching_property(descriptor):
    getter = descriptor.__get__
    return _property_read_by(descriptor, _dispatching_method(getter, getter),
                             _DispatchingProperty)


def _dispatched_attributes(is_property):
    """Tensor's attributes a dispatch replaces, as (name, value, whether a property): its public
    properties `is_property(name, value)` picks and its Python-level methods and operators; not
    the object protocol (_KEPT) nor tapegrad's C method entries, which dispatch by themselves."""
    method_type = type(Tensor.add)
    for klass in (_core.TensorBase, Tensor):
        for name, value in vars(klass).items():
            if name in _KEPT or name.startswith("_") and not (
                    name.startswith("__") and name.endswith("__")):
                continue
            if is_property(name, value):
                yield name, value, True
            elif callable(value) and not isinstance(
                    value, (method_type, staticmethod, classmethod, type)):
                yield name, value, False


def _register_subclass(cls) -> None:
    """Tensor.__init_subclass__: make `cls` dispatch to its __torch_function__ unless it opts
    out (_disabled_torch_function_impl, as nn.Parameter) or is one of tapegrad's own plain ones."""
    if _plain_own_class(cls):
        return
    method = getattr(cls, "__torch_function__", None)
    if method is None or getattr(method, "__func__", method) is _disabled_torch_function_impl:
        return
    if not _SUBCLASS_TYPES:
        _core._set_subclass_dispatch(_SUBCLASS_TYPES, _dispatch_subclass_call)
    own = set()                     # what the subclass (or a user class between) defines itself
    for klass in cls.__mro__:
        if klass is Tensor:
            break
        own.update(name for name, value in vars(klass).items()
                   if not (getattr(value, "_dispatches", False)
                           or isinstance(value, _DispatchingProperty)))
    _SUBCLASS_TYPES.add(cls)
    for name, value, is_property in _dispatched_attributes(
            lambda name, value: name in _TENSOR_PROPERTIES):
        if name in own:
            continue
        if is_property:
            setattr(cls, name, _dispatching_property(value))
        else:
            func = getattr(Tensor, _OPERATOR_METHODS.get(name, name))
            setattr(cls, name, _dispatching_method(func, getattr(Tensor, name)))


# -- torch function modes -----------------------------------------------------------------------
# A TorchFunctionMode entered in a thread sees every public function's and Tensor method's call
# made in that thread, before any Tensor subclass does: PyTorch's mode stack.  The C entries of
# functions and methods check this thread's depth (out_arg_call.h, one NULL compare until a
# program's first mode); Tensor's other attributes (operators, Python-level methods, properties)
# are replaced on the Tensor class by dispatching ones while any thread has a mode, and put back
# when the last mode exits, so a program without modes pays nothing.  The top mode is popped
# while its __torch_function__ runs (calls it makes go to the modes below, or run plainly).

import contextlib as _contextlib
import threading as _threading

_modes = _threading.local()
_modes_lock = _threading.Lock()
_modes_in_all_threads = 0           # the sum of every thread's depth
_ABSENT = object()
_mode_attributes: dict = {}         # name -> Tensor's own value before (or _ABSENT) while installed


def _mode_stack() -> list:
    stack = getattr(_modes, "stack", None)
    if stack is None:
        stack = _modes.stack = []
    return stack


def _depth_changed(change: int) -> None:
    """This thread's stack grew or shrank by `change`: tell the C entries, and install or remove
    Tensor's dispatching attributes as the first mode in any thread starts or the last ends."""
    global _modes_in_all_threads
    _core._set_function_modes(_dispatch_mode_call, len(_mode_stack()))
    with _modes_lock:
        before = _modes_in_all_threads
        _modes_in_all_threads += change
        if before == 0 and _modes_in_all_threads > 0:
            _install_mode_attributes()
        elif before > 0 and _modes_in_all_threads == 0:
            _remove_mode_attributes()


def _push_mode(mode) -> None:
    _mode_stack().append(mode)
    _depth_changed(1)


def _pop_mode():
    stack = _mode_stack()
    if not stack:
        raise RuntimeError("Trying to pop from an empty mode stack")
    mode = stack.pop()
    _depth_changed(-1)
    return mode


@_contextlib.contextmanager
def _pop_mode_temporarily():
    """The top mode, off the stack for the duration (what runs its __torch_function__)."""
    mode = _pop_mode()
    try:
        yield mode
    finally:
        _push_mode(mode)


def _get_current_function_mode():
    stack = _mode_stack()
    return stack[-1] if stack else None


def _get_current_function_mode_stack() -> list:
    return list(_mode_stack())


def _is_torch_function_mode_enabled() -> bool:
    return bool(_mode_stack())


def _len_torch_function_stack() -> int:
    return len(_mode_stack())


class TorchFunctionMode:
    """A context manager that intercepts the calls of public functions and Tensor methods (and
    reads of Tensor's properties) made while it is active: each goes to its
    ``__torch_function__(func, types, args, kwargs)``, during which the mode itself is inactive
    (so calling ``func`` there runs it).  Returning ``NotImplemented`` passes the call on."""

    def __init__(self):
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _pop_mode()

    @classmethod
    def push(cls, *args, **kwargs):
        import warnings
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just "
                      "`with Mode()`", stacklevel=2)
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode that runs every call as it is (a base for modes overriding a few functions)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        return func(*args, **kwargs)


_C_LEVEL, _PROPERTY, _PYTHON_LEVEL, _USER_LEVEL = range(4)


def _mode_types(relevant_args, level) -> tuple:
    """The `types` PyTorch hands a mode: for a C-level function, method or operator and for
    handle_torch_function called by library or user code, the overriding types; for a property
    the instance's type; for a Python-level Tensor method the tensor types that keep the
    protocol (plain Tensor too, not Parameter)."""
    def shown(cls):     # (tapegrad's bfloat16 class stands for a dtype: PyTorch shows Tensor)
        return Tensor if getattr(cls, "_dtype_class", False) else cls
    if level in (_C_LEVEL, _USER_LEVEL):
        return tuple(type(arg) for arg in _overloaded_args(relevant_args)
                     if not getattr(type(arg), "_dtype_class", False))
    tensors = [a for a in relevant_args if isinstance(a, _core.TensorBase)]
    if level == _PROPERTY:
        return (shown(type(tensors[0])),) if tensors else ()
    return tuple(dict.fromkeys(
        shown(type(a)) for a in tensors
        if getattr(getattr(type(a), "__torch_function__", None), "__func__", None)
        is not _disabled_torch_function_impl))


def _call_through_modes(public_api, relevant_args, args, kwargs, level):
    """handle_torch_function with this thread's modes first: the top mode's result unless it
    returns NotImplemented, then the subclasses' overrides, then (for a Tensor attribute that is
    Python code in PyTorch) Tensor's default."""
    types = _mode_types(relevant_args, level)
    with _pop_mode_temporarily() as mode:
        result = mode.__torch_function__(public_api, types, args, kwargs)
    if result is not NotImplemented:
        return result
    overloaded = _overloaded_args(relevant_args)
    for arg in overloaded:
        result = arg.__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    if level in (_PROPERTY, _PYTHON_LEVEL):
        return public_api(*args, **(kwargs or {}))
    name = resolve_name(public_api) or getattr(public_api, "__name__", repr(public_api))
    listed = "".join(f"  - tensor subclass {type(arg)!r}\n" for arg in overloaded)
    raise TypeError(f"Multiple dispatch failed for '{name}'; all __torch_function__ handlers "
                    f"returned NotImplemented:\n\n  - mode object {mode!r}\n{listed}\n"
                    "For more information, try re-running with TORCH_LOGS=not_implemented")


def _dispatch_mode_call(entry, args, kwargs):
    """A public function's or Tensor method's call while a mode is active (out_arg_call.h)."""
    if type(entry) is type(Tensor.add) and entry.__name__ in _PYTHON_TENSOR_METHODS:
        return _call_through_modes(entry, _relevant(args, kwargs), args, kwargs,
                                   _PYTHON_LEVEL)
    return _call_through_modes(entry, _relevant(args, kwargs), args, kwargs or None, _C_LEVEL)


def _mode_dispatching_method(func, plain, level):
    """Tensor's attribute `plain` while modes are active: through this thread's modes as `func`
    when it has any, else as it was."""
    def method(self, *args, **kwargs):
        if not _mode_stack():
            return plain(self, *args, **kwargs)
        return _call_through_modes(func, _relevant((self, *args), kwargs), (self, *args),
                                   kwargs if level == _PYTHON_LEVEL else kwargs or None, level)
    method.__name__ = method.__qualname__ = getattr(plain, "__name__", "method")
    method.__doc__ = getattr(plain, "__doc__", None)
    method._mode_dispatches = True
    return method


def _mode_dispatching_property(descriptor):
    getter = descriptor.__get__
    return _property_read_by(descriptor, _mode_dispatching_method(getter, getter, _PROPERTY))


def _is_property(value) -> bool:
    import types
    return isinstance(value, (property, types.GetSetDescriptorType))


# The Tensor methods PyTorch writes in Python (torch/_tensor.py; __neg__ and __abs__ there are
# the C neg and abs): a mode sees them with the tensor types in `types` and their keyword
# arguments as a dict (PyTorch's spell out their defaults, tapegrad's only what was passed); the
# rest are C code.
_PYTHON_TENSOR_METHODS = frozenset((
    "__array__", "__array_wrap__", "__contains__", "__dir__", "__dlpack__",
    "__dlpack_device__", "__floordiv__", "__format__", "__ipow__", "__iter__", "__len__",
    "__pos__", "__pow__", "__rdiv__", "__repr__", "__reversed__", "__rfloordiv__",
    "__rlshift__", "__rmatmul__", "__rmod__", "__rpow__", "__rrshift__", "__rsub__",
    "__rtruediv__", "backward", "dim_order", "is_shared", "istft", "lu",
    "module_load", "norm", "register_hook", "register_post_accumulate_grad_hook", "resize",
    "resize_as", "share_memory_", "split", "stft", "storage", "storage_type", "to_sparse_coo",
    "unflatten", "unique", "unique_consecutive"))


def _install_mode_attributes() -> None:
    replaced = {}
    for name, value, is_property in _dispatched_attributes(
            lambda name, value: _is_property(value)):
        if is_property:
            replaced[name] = _mode_dispatching_property(value)
            continue
        plain = getattr(Tensor, name)
        level = _PYTHON_LEVEL if name in _PYTHON_TENSOR_METHODS else _C_LEVEL
        # (an operator PyTorch writes in Python, __pow__, is reported as itself)
        func = plain if level == _PYTHON_LEVEL else getattr(
            Tensor, _OPERATOR_METHODS.get(name, name))
        replaced[name] = _mode_dispatching_method(func, plain, level)
    for name, value in replaced.items():
        _mode_attributes[name] = vars(Tensor).get(name, _ABSENT)
        setattr(Tensor, name, value)


def _remove_mode_attributes() -> None:
    for name, before in _mode_attributes.items():
        if before is _ABSENT:
            delattr(Tensor, name)
        else:
            setattr(Tensor, name, before)
    _mode_attributes.clear()


# -- names of the overridable functions ----------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _public_names() -> dict:
    """id(function) -> its qualified name as PyTorch spells it (torch.*, torch.nn.functional.*,
    torch.linalg.*, torch.fft.*, torch.special.*, torch.Tensor.*), with the objects kept alive."""
    import tapegrad
    from .nn import functional, init
    names = {}
    namespaces = [("torch", tapegrad), ("torch.nn.functional", functional),
                  ("torch.nn.init", init)]
    for sub in ("linalg", "fft", "special"):
        namespaces.append((f"torch.{sub}", getattr(tapegrad, sub)))
    for prefix, namespace in namespaces:
        for name in dir(namespace):
            if name.startswith("_"):
                continue
            value = getattr(namespace, name, None)
            if callable(value) and not isinstance(value, type):
                names.setdefault(id(value), (f"{prefix}.{name}", value))
    for klass in (_core.TensorBase, Tensor):
        for name, value in vars(klass).items():
            if _is_property(value):
                names.setdefault(id(value), (f"torch.Tensor.{name}", value))
            elif callable(value):
                names.setdefault(id(value), (f"torch.Tensor.{name}", value))
    return names


def resolve_name(f):
    """The qualified name of an overridable function (``torch.Tensor.add``,
    ``torch.nn.functional.linear``, ``torch.Tensor.shape.__get__``), or None."""
    if type(f).__name__ == "method-wrapper" and getattr(f, "__name__", "") == "__get__":
        found = _public_names().get(id(f.__self__))
        return None if found is None else f"{found[0]}.__get__"
    found = _public_names().get(id(f))
    return None if found is None else found[0]
