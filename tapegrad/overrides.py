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
from ._torch_names import TorchNamedClass
from .tensor import Tensor

__all__ = ["BaseTorchFunctionMode", "TorchFunctionMode", "handle_torch_function",
           "has_torch_function", "has_torch_function_unary", "resolve_name",
           "has_torch_function_variadic", "is_tensor_like", "get_overridable_functions",
           "get_ignored_functions", "get_testing_overrides", "is_tensor_method_or_property",
           "wrap_torch_function"]

def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """The __torch_function__ of a class that opts out of the protocol (nn.Parameter's): func
    run with the subclass dispatch off, as PyTorch's C one runs it (a subclass handing a call on
    to it -- UninitializedParameter's -- would otherwise receive it again)."""
    with _DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


class _DisableTorchFunctionSubclass(metaclass=TorchNamedClass):
    """While active (in this thread), has_torch_function answers False and calls do not dispatch
    to Tensor subclasses: the function runs its plain path."""

    _c_type_name = "torch._C.DisableTorchFunctionSubclass"

    def __enter__(self):
        self.previous = _core._subclass_dispatch_set_off(True)
        return self

    def __exit__(self, *exc):
        _core._subclass_dispatch_set_off(self.previous)
        return False


class _DisableTorchFunction(metaclass=TorchNamedClass):
    """While active (in this thread), neither Tensor subclasses nor torch function modes see
    calls (PyTorch's torch._C.DisableTorchFunction): the modes are set aside and put back."""

    _c_type_name = "torch._C.DisableTorchFunction"

    def __enter__(self):
        self.previous = _core._subclass_dispatch_set_off(True)
        stack = _mode_stack()
        self.modes = stack[:]
        if self.modes:
            stack.clear()
            _depth_changed(-len(self.modes))
        return self

    def __exit__(self, *exc):
        if self.modes:
            _mode_stack().extend(self.modes)
            _depth_changed(len(self.modes))
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
    return _call_overrides(public_api, relevant_args, args, kwargs)


def _call_overrides(public_api, relevant_args, args, kwargs):
    """The overriding __torch_function__s of `relevant_args`' types, `kwargs` handed over as
    given: None for a call without keywords of what PyTorch writes in C (its functions and most
    Tensor methods), a dict for handle_torch_function and PyTorch's Python-level methods."""
    overloaded = _overloaded_args(relevant_args)
    types = tuple(type(arg) for arg in overloaded)
    for arg in overloaded:
        result = arg.__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    _raise_unimplemented(public_api, types)


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
    _raise_unimplemented(entry, types)


def _raise_unimplemented(entry, types):
    """The TypeError PyTorch raises when every __torch_function__ of `types` declined a call of
    `entry`: handle_torch_function's words for a Python-level function (the library's or the
    user's), its C dispatcher's for the rest (functions, Tensor methods, property reads)."""
    qualified = resolve_name(entry)
    if qualified is None or _python_level_function(entry):
        name = qualified or f"{getattr(entry, '__module__', None)}.{entry.__name__}"
        raise TypeError(f"no implementation found for '{name}' on types that implement "
                        f"__torch_function__: {list(types)}")
    namespace, _, name = qualified.rpartition(".")
    if namespace in ("torch.linalg", "torch.special", "torch.fft"):
        # (PyTorch's builtin there is named with its namespace: torch.linalg.linalg_norm)
        qualified = f"{namespace}.{namespace[6:]}_{name}"
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
    "__array_priority__", "__pyx_vtable__", "__qualname__", "as_subclass",
    "__str__"))     # (str() reads type(self).__repr__, which dispatches: PyTorch's has no __str__)

# Properties whose reads Tensor's default __torch_function__ returns as they are (PyTorch's
# get_default_nowrap_functions): a subclass's .grad is the plain tensor backward made.
_NOWRAP_PROPERTIES = ("grad", "_base", "_grad")


def _wraps_result(func) -> bool:
    """Whether Tensor's default __torch_function__ returns `func`'s tensors as the subclass: all
    but the reads of _NOWRAP_PROPERTIES (whose getter arrives as a descriptor's __get__)."""
    owner = getattr(func, "__self__", None)
    if owner is None or getattr(func, "__name__", None) != "__get__":
        return True
    return not any(owner is vars(klass).get(name) or owner is _mode_attributes.replaced(name)
                   or owner is _mode_replacements.get(name)
                   for name in _NOWRAP_PROPERTIES for klass in (_core.TensorBase, Tensor))

# The operators PyTorch reports to __torch_function__ as the method they compute.
_OPERATOR_METHODS = {
    "__add__": "add", "__radd__": "add", "__sub__": "sub", "__mul__": "mul", "__rmul__": "mul",
    "__truediv__": "div", "__neg__": "neg", "__pow__": "pow", "__matmul__": "matmul",
    "__abs__": "abs", "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge",
    "__ne__": "ne", "__mod__": "remainder", "__pos__": "positive", "__iadd__": "add_",
    "__isub__": "sub_", "__imul__": "mul_",
    "__itruediv__": "div_"}


def _dispatch_subclass_call(entry, args, kwargs):
    """A public function's or Tensor method's call holding a dispatching subclass's instance
    (out_arg_call.h): to the overriding __torch_function__s, `entry` as the function.  A call
    whose only such argument is torch.bfloat16 itself (dtype=torch.bfloat16) goes to
    tapegrad/_bfloat16.py."""
    relevant = _relevant(args, kwargs)
    if not _overloaded_args(relevant):
        return _dispatching_dtype_handler(args, kwargs)(entry, args, kwargs)
    if _mode_stack():
        return handle_torch_function(entry, relevant, *args, **(kwargs or {}))
    if resolve_name(entry) in _UNSEEN_BY_MODES:      # (PyTorch's overrides ignore them too)
        return entry.__wrapped__(*args, **(kwargs or {}))
    return _call_overrides(entry, relevant, args, kwargs or _kwargs_of(entry))


def _dispatching_dtype_handler(args, kwargs):
    """The dtype_call of the module whose dtype the call names: a float8 dtype's
    (tapegrad/_float8.py), else bfloat16's (the only other dispatching dtype)."""
    from . import _core
    for v in list(args) + list((kwargs or {}).values()):
        if isinstance(v, _core.dtype) and v in _core.FLOAT8_DTYPES:
            from ._float8 import dtype_call
            return dtype_call
    from ._bfloat16 import dtype_call
    return dtype_call


def _kwargs_of(func):
    """What a subclass's __torch_function__ gets as `kwargs` for a call of `func` made without
    keywords: PyTorch's Python-level functions and Tensor methods pass {}, its C ones None."""
    if type(func) is type(Tensor.add):
        python_level = func.__name__ in _PYTHON_TENSOR_METHODS
    else:
        python_level = _python_level_function(func)
    return {} if python_level else None


def _python_level_function(entry) -> bool:
    """Whether public function `entry` is Python code in PyTorch (torch/functional.py's, most of
    nn.functional, nn.init): it hands __torch_function__ a dict of keywords and its tensors'
    types, where PyTorch's C functions hand None and only the overriding types."""
    from ._public_calls import _python_level
    if id(entry) in _python_level:
        return True
    name = resolve_name(entry)
    return name is not None and name.startswith(("torch.functional.", "torch.nn.init."))


def _dispatching_method(func, plain, python_level=False, name=None):
    """The subclass's version of a Tensor attribute `plain` (called as plain(self, ...)):
    dispatches as `func` unless the dispatch is off; `python_level`: an attribute PyTorch writes
    in Python, whose override gets {} for no keywords (None: a C one's).  `name`: Tensor's
    attribute whose replacement a mode is handed instead of `func` (_as_modes_see)."""
    python_level_kwargs = {} if python_level else None

    def method(self, *args, **kwargs):
        if _core._subclass_dispatch_set_off(None):
            return plain(self, *args, **kwargs)
        relevant = _relevant((self, *args), kwargs)
        if _mode_stack():
            return handle_torch_function(_as_modes_see(func, name), relevant, self, *args,
                                         **kwargs)
        if not _overloaded_args(relevant):
            # (an instance of an opting-out class, a ManifoldParameter, reaching an attribute
            # its dispatching base holds in Tensor's place: the call runs plain, as in PyTorch)
            return plain(self, *args, **kwargs)
        return _call_overrides(func, relevant, (self, *args), kwargs or python_level_kwargs)
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


def _dispatching_property(descriptor, name=None):
    getter = descriptor.__get__
    return _property_read_by(descriptor, _dispatching_method(getter, getter, name=name),
                             _DispatchingProperty)


def _as_modes_see(func, name):
    """What a mode is handed for a subclass's call of Tensor's attribute `name` (None: `func`
    itself): while modes run, Tensor holds a dispatching replacement of it, which is what
    PyTorch hands a mode (the attribute itself: `func is torch.Tensor.__getitem__` holds) and
    which, called in the mode's handler, goes on to the subclass's override (a bfloat16 x[0]
    stays bfloat16); the plain attribute would compute on the storage as float32."""
    replacement = _mode_replacements.get(name) if name is not None else None
    if replacement is None:
        return func
    return replacement.__get__ if isinstance(replacement, property) else replacement


def _unrouted(value):
    """A Tensor attribute as it is outside a tapegrad.compile capture, which routes Tensor's
    methods through its recorder while it runs (replay.py's _routed): a subclass registered
    then (a first use of torch.bfloat16 inside a compiled function) must not keep the route."""
    while getattr(value, "_capture_route", False):
        value = value.__wrapped__
    return value


def _tensor_attribute(name: str):
    return _unrouted(getattr(Tensor, name))


def _dispatched_attributes(is_property):
    """Tensor's attributes a dispatch replaces, as (name, value, whether a property): its public
    properties `is_property(name, value)` picks and its Python-level methods and operators; not
    the object protocol (_KEPT) nor tapegrad's C method entries, which dispatch by themselves."""
    method_type = type(Tensor.add)
    for klass in (_core.TensorBase, Tensor):
        for name, value in vars(klass).items():
            value = _unrouted(value)
            if name in _KEPT or name.startswith("_") and not (
                    name.startswith("__") and name.endswith("__")):
                continue
            if klass is not Tensor and name in vars(Tensor):
                continue        # (Tensor's own stands in for it: an entry for detach)
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
        _undo_inherited_dispatch(cls)
        return
    if not _SUBCLASS_TYPES:
        _core._set_subclass_dispatch(_SUBCLASS_TYPES, _dispatch_subclass_call)
        # (a compiled function's replay would skip an instance's __torch_function__: from now
        # on its calls look at their arguments first, in C, and one that holds an instance goes
        # to tapegrad/replay.py's _context_call)
        _core._set_replay_dispatching_subclasses(_SUBCLASS_TYPES)
    own = set()                     # what the subclass (or a user class between) defines itself
    for klass in cls.__mro__:
        if klass is Tensor:
            break
        own.update(name for name, value in vars(klass).items()
                   if not (getattr(value, "_dispatches", False)
                           or isinstance(value, _DispatchingProperty)))
    _SUBCLASS_TYPES.add(cls)
    for name, value, is_property in _dispatched_attributes(
            lambda name, value: _is_property(value)):
        if name in own:
            continue
        if is_property:
            setattr(cls, name, _dispatching_property(value, name))
        elif name in _PYTHON_TENSOR_METHODS:
            # (an operator PyTorch writes in Python, __pow__, is reported as itself)
            plain = _tensor_attribute(name)
            setattr(cls, name, _dispatching_method(plain, plain, python_level=True, name=name))
        else:
            func = _tensor_attribute(_OPERATOR_METHODS.get(name, name))
            plain = _tensor_attribute(name)
            setattr(cls, name, _dispatching_method(func, plain,
                                                   name=name if func is plain else None))
    for name, forward in _REFLECTED_OPERATORS.items():
        if name not in own and hasattr(cls, name):
            setattr(cls, name, _reflected_method(getattr(cls, name), forward))


def _undo_inherited_dispatch(cls) -> None:
    """An opting-out class (`cls`) derived from a dispatching one -- geoopt's
    ManifoldParameter(ManifoldTensor, nn.Parameter) -- inherits the dispatching attributes
    _register_subclass set on that one; they stand in for Tensor's, so a class between them and
    Tensor in `cls`'s MRO (Parameter: its __repr__) must win over them, as in PyTorch, where
    Tensor's attributes live in C and none is copied onto the subclass."""
    dispatching = [klass for klass in cls.__mro__ if klass in _SUBCLASS_TYPES]
    names = {name for klass in dispatching for name, value in vars(klass).items()
             if _is_dispatching(value)}
    for name in names:
        owners = [klass for klass in cls.__mro__ if name in vars(klass)]
        if not _is_dispatching(vars(owners[0])[name]):
            continue
        for klass in owners:
            if klass in Tensor.__mro__:
                break       # (Tensor's own: the dispatching stand-in is right)
            if not _is_dispatching(vars(klass)[name]):
                setattr(cls, name, vars(klass)[name])
                break


def _is_dispatching(value) -> bool:
    """Whether `value` is one of the dispatching attributes _register_subclass sets."""
    return getattr(value, "_dispatches", False) or isinstance(value, _DispatchingProperty)


# A subclass's reflected operators are Python attributes (above), so Python asks the subclass
# first in `t * s` (t a plain tensor, s the subclass's), where PyTorch's C slots run
# t.__mul__(s): mul(t, s), t first.  The order matters to __torch_function__'s args and to
# values (a 0-d first operand is cast to the common dtype, a second one is not).  The plain
# tensor's operator does not dispatch by itself: the public function does.
_REFLECTED_OPERATORS = {
    "__radd__": "add", "__rsub__": "sub", "__rmul__": "mul", "__rtruediv__": "div",
    "__rdiv__": "div", "__rpow__": "pow", "__rfloordiv__": "floor_divide",
    "__rmod__": "remainder", "__rmatmul__": "matmul", "__rand__": "bitwise_and",
    "__ror__": "bitwise_or", "__rxor__": "bitwise_xor", "__rlshift__": "bitwise_left_shift",
    "__rrshift__": "bitwise_right_shift"}


def _reflected_method(method, forward: str):
    """`method` (the subclass's reflected operator), but with a tensor of another class on the
    left, the forward operation with that tensor first (_REFLECTED_OPERATORS)."""
    def reflected(self, other):
        if isinstance(other, _core.TensorBase) and not isinstance(other, type(self)):
            import tapegrad
            return getattr(tapegrad, forward)(other, self)
        return method(self, other)
    reflected.__name__ = reflected.__qualname__ = getattr(method, "__name__", "reflected")
    reflected.__doc__ = getattr(method, "__doc__", None)
    reflected._dispatches = True
    return reflected


def _holds_dispatching_instance(args, kwargs) -> bool:
    """Whether a call's arguments (or the lists and tuples among them) hold an instance of a
    Tensor subclass that dispatches to its __torch_function__."""
    if not _SUBCLASS_TYPES:
        return False
    for value in (*args, *kwargs.values()):
        items = value if isinstance(value, (list, tuple)) else (value,)
        if any(type(item) in _SUBCLASS_TYPES for item in items):
            return True
    return False


# -- torch function modes -----------------------------------------------------------------------
# A TorchFunctionMode entered in a thread sees every public function's and Tensor method's call
# made in that thread, before any Tensor subclass does: PyTorch's mode stack.  The C entries of
# functions and methods check this thread's depth (out_arg_call.h, one NULL compare until a
# program's first mode); Tensor's other attributes (operators, Python-level methods, properties)
# are replaced on the Tensor class by dispatching ones while any thread has a mode, and put back
# when the last mode exits, so a program without modes pays nothing.  The top mode is popped
# while its __torch_function__ runs (calls it makes go to the modes below, or run plainly).

import contextlib as _contextlib
import sys as _sys
# (threading.local and threading.Lock are _thread's: taken from there, `import tapegrad` does not
# load the threading module)
from _thread import _local as _thread_local, allocate_lock as _allocate_lock

from ._class_attributes import TemporaryAttributes

_modes = _thread_local()
_modes_lock = _allocate_lock()
_modes_in_all_threads = 0           # the sum of every thread's depth
_mode_attributes = TemporaryAttributes(Tensor)     # Tensor's attributes while modes run


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
            _core._note_replay_skipping_context(1)     # (compiled calls: see _push_mode)
        elif before > 0 and _modes_in_all_threads == 0:
            _remove_mode_attributes()
            _core._note_replay_skipping_context(-1)


def _push_mode(mode) -> None:
    _mode_stack().append(mode)
    _depth_changed(1)
    # A compiled function (tapegrad/replay.py) must not run the ops a mode should see past it:
    # while any thread has a mode, its calls leave the replay path (src/tapegrad/replay.pxi), and
    # a mode entered while the function captures ends that capture's routing.  (Only when the
    # compiled functions' module is loaded: nothing can be capturing otherwise.)
    replay = _sys.modules.get("tapegrad.replay")
    if replay is not None:
        replay._replay_skipping_context_entered("a torch function mode")


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


def _call_through_modes(public_api, relevant_args, args, kwargs, level, plain=None):
    """handle_torch_function with this thread's modes first: the top mode's result unless it
    returns NotImplemented, then the subclasses' overrides, then (for a Tensor attribute that is
    Python code in PyTorch) Tensor's default: `plain`, where `public_api` would ask the modes
    again."""
    if level == _C_LEVEL and getattr(public_api, "__name__", None) in _SELF_TYPED_METHODS \
            and not isinstance(public_api, _core.WithOut):      # (torch.exp is parsed)
        level = _PROPERTY       # (the instance's type, as a property's read has)
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
        return (plain or public_api)(*args, **(kwargs or {}))
    name = resolve_name(public_api) or getattr(public_api, "__name__", repr(public_api))
    listed = "".join(f"  - tensor subclass {type(arg)!r}\n" for arg in overloaded)
    raise TypeError(f"Multiple dispatch failed for '{name}'; all __torch_function__ handlers "
                    f"returned NotImplemented:\n\n  - mode object {mode!r}\n{listed}\n"
                    "For more information, try re-running with TORCH_LOGS=not_implemented")


# Public functions of the torch namespace that are Python code in PyTorch's torch/functional.py:
# resolve_name spells them torch.functional.*, and a mode sees them as Python-level calls.
_TORCH_FUNCTIONAL = frozenset((
    "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
    "broadcast_tensors", "cartesian_prod", "cdist", "chain_matmul", "einsum", "istft", "lu",
    "meshgrid", "norm", "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot", "unique",
    "unique_consecutive", "unravel_index"))

# Public functions of the torch namespace neither a mode nor a subclass's override sees in
# PyTorch (plain Python helpers there that answer questions, not ops): tapegrad's entries run
# them as they are.
_UNSEEN_BY_MODES = frozenset((
    "torch.is_tensor", "torch.is_storage", "torch.get_default_dtype",
    "torch.functional.broadcast_shapes", "torch.get_num_threads", "torch.set_num_threads",
    "torch.get_num_interop_threads", "torch.set_num_interop_threads",
    "torch.is_autocast_enabled", "torch.are_deterministic_algorithms_enabled",
    "torch.use_deterministic_algorithms", "torch.get_float32_matmul_precision",
    "torch.set_float32_matmul_precision", "torch.is_warn_always_enabled",
    "torch.set_warn_always", "torch.from_numpy",
    # (PyTorch's F.tanh and F.sigmoid call the Tensor method, which the mode sees)
    "torch.nn.functional.tanh", "torch.nn.functional.sigmoid"))


def _dispatch_mode_call(entry, args, kwargs):
    """A public function's or Tensor method's call while a mode is active (out_arg_call.h)."""
    if type(entry) is type(Tensor.add):
        if entry.__name__ in _PYTHON_TENSOR_METHODS:
            return _call_through_modes(entry, _relevant(args, kwargs), args, kwargs,
                                       _PYTHON_LEVEL)
    else:
        if resolve_name(entry) in _UNSEEN_BY_MODES:
            return entry.__wrapped__(*args, **kwargs)
        if _python_level_function(entry):
            return _call_through_modes(entry, _relevant(args, kwargs), args, kwargs,
                                       _PYTHON_LEVEL)
    return _call_through_modes(entry, _relevant(args, kwargs), args, kwargs or None, _C_LEVEL)


def _overridden_outside_modes(func, self, args, kwargs, plain):
    """Tensor's attribute `plain` called, as `func`, with no mode on this thread's stack: by the
    overrides of the dispatching subclasses among its arguments (PyTorch's Tensor attributes
    dispatch on every argument, so a mode's handler calling func(*args) on a bfloat16 tensor
    reaches its handler), else plainly."""
    if _SUBCLASS_TYPES and not _core._subclass_dispatch_set_off(None):
        relevant = _relevant((self, *args), kwargs or {})
        if _overloaded_args(relevant):
            return _call_overrides(func, relevant, (self, *args), kwargs)
    return plain(self, *args, **(kwargs or {}))


def _mode_dispatching_method(func, plain, level):
    """Tensor's attribute `plain` while modes are active: through this thread's modes as `func`
    when it has any, else through the subclasses' overrides (_overridden_outside_modes).  A
    `func` that is `plain` is shown as this replacement, Tensor's attribute while it is
    installed, which dispatches again when the handler calls it."""
    def method(self, *args, **kwargs):
        call_kwargs = kwargs if level == _PYTHON_LEVEL else kwargs or None
        if not _mode_stack():
            return _overridden_outside_modes(shown, self, args, call_kwargs, plain)
        return _call_through_modes(shown, _relevant((self, *args), kwargs), (self, *args),
                                   call_kwargs, level, plain=plain)
    shown = method if func is plain else func
    method.__name__ = method.__qualname__ = getattr(plain, "__name__", "method")
    method.__doc__ = getattr(plain, "__doc__", None)
    method._mode_dispatches = True
    return method


def _mode_dispatching_property(descriptor):
    """Tensor's property `descriptor` while modes are active.  A mode sees the read as this
    property's __get__ (not the plain descriptor's): calling it in the mode's handler reads
    through the modes below, as PyTorch's getter does."""
    getter = descriptor.__get__

    def read(self):
        # (tapegrad's own Python code reading a property -- Function.apply's requires_grad,
        # an optimizer's .grad -- is C code in PyTorch, which no mode sees)
        if not _mode_stack():
            return _overridden_outside_modes(replacement.__get__, self, (), None,
                                             lambda self: getter(self))
        if _sys._getframe(1).f_globals.get("__name__", "").startswith("tapegrad."):
            return getter(self)
        return _call_through_modes(replacement.__get__, [self], (self,), None, _PROPERTY,
                                   plain=getter)
    read.__name__ = read.__qualname__ = getattr(descriptor, "__name__", "read")
    replacement = _property_read_by(descriptor, read)
    return replacement


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
    "__pow__", "__rdiv__", "__repr__", "__reversed__", "__rfloordiv__",
    "__rlshift__", "__rmatmul__", "__rmod__", "__rpow__", "__rrshift__", "__rsub__",
    "__rtruediv__", "backward", "dim_order", "is_shared", "istft", "lu",
    "module_load", "norm", "register_hook", "register_post_accumulate_grad_hook", "resize",
    "resize_as", "share_memory_", "split", "stft", "storage", "storage_type", "to_sparse_coo",
    "unflatten", "unique", "unique_consecutive"))


_mode_replacements: dict = {}       # name -> Tensor's attribute while modes are active (made once)


def _mode_replacement_attributes() -> dict:
    """Tensor's dispatching attributes for the modes, made on first use (while Tensor holds its
    own) and kept: the same objects each time modes start, so resolve_name knows them."""
    if _mode_replacements:
        return _mode_replacements
    for name, value, is_property in _dispatched_attributes(
            lambda name, value: _is_property(value)):
        if is_property:
            _mode_replacements[name] = _mode_dispatching_property(value)
            continue
        plain = _tensor_attribute(name)
        level = _PYTHON_LEVEL if name in _PYTHON_TENSOR_METHODS else _C_LEVEL
        # (an operator PyTorch writes in Python, __pow__, is reported as itself)
        func = plain if level == _PYTHON_LEVEL else _tensor_attribute(
            _OPERATOR_METHODS.get(name, name))
        _mode_replacements[name] = _mode_dispatching_method(func, plain, level)
    return _mode_replacements


# The Tensor methods PyTorch binds without its argument parser (those taking no argument but
# self, in every overload; and the number conversions): a mode sees them with the instance's type
# in `types`, where a parsed method's call has only the overriding types.  Read from torch 2.13.
_SELF_TYPED_METHODS = frozenset("""
__bool__ __complex__ __float__ __index__ __int__ __invert__ abs abs_ absolute absolute_ acos
acos_ acosh acosh_ adjoint angle arccos arccos_ arccosh arccosh_ arcsin arcsin_ arcsinh arcsinh_
arctan arctan_ arctanh arctanh_ argwhere asin asin_ asinh asinh_ atan atan_ atanh atanh_
bitwise_not bitwise_not_ ceil ceil_ conj conj_physical conj_physical_ const_data_ptr corrcoef
cos cos_ cosh cosh_ data_ptr deg2rad deg2rad_ dense_dim dequantize det detach detach_ digamma
digamma_ dim element_size erf erf_ erfc erfc_ erfinv erfinv_ exp exp2 exp2_ exp_ expm1 expm1_
fix fix_ fliplr flipud floor floor_ frac frac_ frexp geqrf get_device i0 i0_ is_complex is_conj
is_distributed is_floating_point is_inference is_neg is_nonzero is_signed isfinite isinf isnan
isneginf isposinf isreal item lgamma lgamma_ log log10 log10_ log1p log1p_ log2 log2_ log_
logdet logical_not logical_not_ matrix_exp msort neg neg_ negative negative_ new new_tensor
numel positive rad2deg rad2deg_ ravel reciprocal reciprocal_ relu relu_ resolve_conj resolve_neg
rsqrt rsqrt_ sgn sgn_ sigmoid sigmoid_ sign sign_ signbit sin sin_ sinc sinc_ sinh sinh_ slogdet
sparse_dim sqrt sqrt_ square square_ storage_offset t t_ tan tan_ tanh tanh_ tolist trace trunc
trunc_ untyped_storage zero_
""".split())


def _install_mode_attributes() -> None:
    for name, value in _mode_replacement_attributes().items():
        _mode_attributes.set(name, value)


def _remove_mode_attributes() -> None:
    _mode_attributes.restore()


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
                home = "torch.functional" if prefix == "torch" and name in _TORCH_FUNCTIONAL \
                    else prefix
                names.setdefault(id(value), (f"{home}.{name}", value))
    # Tensor's own attributes (those a mode's dispatch holds aside while installed, too) and
    # the modes' dispatching replacements, which a mode is handed (a property's __get__)
    own = [(name, value) for klass in (_core.TensorBase, Tensor)
           for name, value in vars(klass).items()]
    own += _mode_attributes.replaced_items()
    own += list(_mode_replacement_attributes().items())
    for name, value in own:
        if callable(value) or _is_property(value):
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


# -- the tables of overridable functions ---------------------------------------------------------

def _is_ignored_name(name: str) -> bool:
    """Whether the public function PyTorch calls `name` is one its overrides ignore: the query
    helpers, and the factories (which take no tensor to dispatch on; a mode still sees them)."""
    from ._meta import _FACTORIES
    return name in _UNSEEN_BY_MODES or name.startswith("torch.") and name.count(".") == 1 \
        and name[6:] in {factory for names in _FACTORIES.values() for factory in names}


@functools.lru_cache(maxsize=1)
def _ignored() -> frozenset:
    return frozenset(id(value) for name, value in _public_names().values()
                     if _is_ignored_name(name))


def get_ignored_functions() -> set:
    """The public functions __torch_function__ overrides never see (PyTorch's list, for the
    functions tapegrad has): query helpers such as torch.is_tensor, and the factories."""
    return {value for name, value in _public_names().values() if _is_ignored_name(name)}


def get_overridable_functions() -> dict:
    """{namespace: [functions]}: the public functions and Tensor methods a __torch_function__
    override can see, keyed by torch, torch.Tensor, torch.nn.functional, torch.linalg, ..."""
    import collections
    import tapegrad
    from .nn import functional, init
    modules = {"torch": tapegrad, "torch.functional": tapegrad, "torch.Tensor": Tensor,
               "torch.nn.functional": functional, "torch.nn.init": init,
               "torch.linalg": tapegrad.linalg, "torch.fft": tapegrad.fft,
               "torch.special": tapegrad.special}
    ignored = _ignored()
    table = collections.defaultdict(list)
    for name, value in _public_names().values():
        namespace = name.rpartition(".")[0]
        if namespace in modules and id(value) not in ignored and callable(value):
            table[modules[namespace]].append(value)
    return table


def is_tensor_method_or_property(func) -> bool:
    """Whether `func` is a Tensor method or a property's getter (whose first argument is the
    tensor), as opposed to a function of a namespace."""
    found = _public_names().get(id(func))
    return (found is not None and found[0].startswith("torch.Tensor.")) or \
        getattr(func, "__name__", None) == "__get__"


@functools.lru_cache(maxsize=1)
def _testing_overrides() -> dict:
    import inspect
    overrides = {}
    for functions in get_overridable_functions().values():
        for func in functions:
            def dummy(*args, **kwargs):
                return -1
            try:
                dummy.__signature__ = inspect.signature(func)
            except (TypeError, ValueError):
                pass
            dummy.__name__ = getattr(func, "__name__", "dummy")
            overrides[func] = dummy
    return overrides


def get_testing_overrides() -> dict:
    """{function: a dummy override with its signature, returning -1} for every overridable
    function (what PyTorch's tests of the protocol build tensor-likes from)."""
    return dict(_testing_overrides())


def wrap_torch_function(dispatcher):
    """A decorator making a user function overridable: `dispatcher(*args, **kwargs)` names the
    arguments whose __torch_function__ (or an active mode) may take the call."""
    def decorator(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant_args = dispatcher(*args, **kwargs)
            if has_torch_function(relevant_args):
                return handle_torch_function(wrapped, relevant_args, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return decorator
