"""torch.overrides: the part of PyTorch's __torch_function__ protocol that tapegrad has.

A public function (tapegrad.*, nn.functional, linalg, ...) called with an object that is no
Tensor but whose type defines __torch_function__ (PyTorch's "Tensor-like" types: a ScalarTensor,
a wrapper) dispatches to it as PyTorch does (handle_torch_function).  The public entry finds
those only when the call refused its arguments with a TypeError (_public_calls.binding_error), so
the ordinary call pays nothing.  Tensor subclasses' __torch_function__ is not dispatched."""
from __future__ import annotations

from .tensor import Tensor

__all__ = ["is_tensor_like", "has_torch_function", "handle_torch_function"]


def is_tensor_like(inp) -> bool:
    """True for a Tensor (or a subclass instance), for the Tensor class and its subclasses, and
    for any object defining __torch_function__ (PyTorch's duck-typed tensors)."""
    return type(inp) is Tensor or isinstance(inp, Tensor) or hasattr(inp, "__torch_function__") \
        or (isinstance(inp, type) and issubclass(inp, Tensor))


def _overridable(value) -> bool:
    return not isinstance(value, Tensor) and \
        getattr(type(value), "__torch_function__", None) is not None


def _overloaded_args(relevant_args) -> list:
    """The arguments whose types take part in the dispatch, one per type, a subclass before its
    base class (then in the order given), as PyTorch orders them."""
    found = []
    for arg in relevant_args:
        if not _overridable(arg) or any(type(arg) is type(f) for f in found):
            continue
        index = len(found)
        for i, f in enumerate(found):
            if issubclass(type(arg), type(f)):
                index = i
                break
        found.insert(index, arg)
    return found


def _relevant(args, kwargs) -> list:
    relevant = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, (list, tuple)):
            relevant.extend(value)
        else:
            relevant.append(value)
    return relevant


def has_torch_function(relevant_args) -> bool:
    """Whether any of `relevant_args` is a non-Tensor object whose type defines
    __torch_function__ (a Tensor, of any class, is not dispatched by tapegrad)."""
    return any(_overridable(a) for a in relevant_args)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call the __torch_function__ of the overloaded types among `relevant_args` for
    ``public_api(*args, **kwargs)`` until one returns something else than NotImplemented."""
    overloaded = _overloaded_args(relevant_args)
    types = tuple(type(a) for a in overloaded)
    for arg in overloaded:
        result = type(arg).__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = getattr(public_api, "__name__", repr(public_api))
    module = getattr(public_api, "__module__", "") or ""
    qualified = "torch." + name if module in ("tapegrad", "torch") else name
    listed = "".join(f"  - tensor subclass {t!r}\n" for t in types)
    raise TypeError(f"Multiple dispatch failed for '{qualified}'; all __torch_function__ handlers "
                    f"returned NotImplemented:\n\n{listed}\nFor more information, try re-running "
                    "with TORCH_LOGS=not_implemented")


def dispatch_refused_call(entry, args, kwargs):
    """(result,) of a public function's call that refused its arguments, when some of them are
    Tensor-like objects to dispatch to (None otherwise)."""
    relevant = _relevant(args, kwargs)
    if not has_torch_function(relevant):
        return None
    return (handle_torch_function(entry, relevant, *args, **kwargs),)
