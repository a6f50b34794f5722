"""torch.overrides: the part of PyTorch's __torch_function__ protocol that tapegrad has.

A public function (tapegrad.*, nn.functional, linalg, ...) called with an object that is no
Tensor but whose type defines __torch_function__ (PyTorch's "Tensor-like" types: a ScalarTensor,
a wrapper) dispatches to it as PyTorch's builtins do (dispatch_refused_call).  The public entry
finds those only when the call refused its arguments with a TypeError
(_public_calls.binding_error), so the ordinary call pays nothing.

Otherwise tapegrad's own ops do not dispatch to __torch_function__ overrides (Tensor subclasses'
included).  Also here: telling tensors from other objects (is_tensor_like), and the protocol as
user code drives it -- a function that checks has_torch_function(...) and hands its arguments to handle_torch_function(...) reaches the
__torch_function__ of a duck-typed tensor or of a Tensor subclass, and Tensor's default
__torch_function__ (which a subclass's override calls through super()) runs the function with
subclass dispatch off and returns its tensors as the subclass."""
from __future__ import annotations

import threading
from collections.abc import Sequence

from . import _core
from .tensor import Tensor

__all__ = ["handle_torch_function", "has_torch_function", "has_torch_function_unary",
           "has_torch_function_variadic", "is_tensor_like"]

_STATE = threading.local()      # .subclass_disabled: inside Tensor.__torch_function__'s call


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """The __torch_function__ of a class that opts out of the protocol (nn.Parameter's)."""
    return func(*args, **(kwargs or {}))


class _DisableTorchFunctionSubclass:
    """While active, has_torch_function answers False: the function runs its plain path."""

    def __enter__(self):
        self.previous = getattr(_STATE, "subclass_disabled", False)
        _STATE.subclass_disabled = True
        return self

    def __exit__(self, *exc):
        _STATE.subclass_disabled = self.previous
        return False


def _overloads(arg) -> bool:
    cls = type(arg)
    if cls is Tensor or (isinstance(arg, _core.TensorBase) and cls.__module__.startswith("tapegrad")):
        return False        # (tapegrad's own tensor classes, meta tensors' included, are plain)
    method = getattr(cls, "__torch_function__", None)
    if method is None or getattr(method, "__func__", method) is _disabled_torch_function_impl:
        return False
    return not getattr(_STATE, "subclass_disabled", False)


def has_torch_function(relevant_args) -> bool:
    """Whether any of `relevant_args` (a sequence) defines a __torch_function__ override: a
    non-Tensor object with one, or an instance of a Tensor subclass (plain Tensors and Parameters
    do not count)."""
    if not isinstance(relevant_args, Sequence):
        raise TypeError("expected a sequence")
    return any(_overloads(arg) for arg in relevant_args)


def has_torch_function_unary(obj) -> bool:
    """has_torch_function((obj,))."""
    return _overloads(obj)


def has_torch_function_variadic(*args) -> bool:
    """has_torch_function(args)."""
    return any(_overloads(arg) for arg in args)


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
    (public_api, types, args, kwargs); the first result other than NotImplemented is returned."""
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
