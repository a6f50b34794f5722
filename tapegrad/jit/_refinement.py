"""torch.jit.isinstance in eager mode: isinstance with TorchScript's container types.

PyTorch's eager torch.jit.isinstance checks the elements of a container against its parameters
(List[int] holds ints, Dict[str, Tensor] str keys and tensor values, Tuple[int, str] exactly two
elements of those types, Optional[T] None or a T), recursing into nested containers; an empty
container cannot show its element type, so it matches with a warning.  Bare container types
(list, List, Dict, Optional) are refused, as the compiler refuses them.  Two of PyTorch's ways
are kept as they are because scripts see them: a Union's first parametrised member decides
alone, and a bool is an int (Python's isinstance)."""
from __future__ import annotations as _annotations

import collections.abc
import types
import typing
import warnings

# the unparametrised container types, as PyTorch's message names them and what it asks for
_BARE = {list: ("list", "a contained type", "list[int]"),
         typing.List: ("List", "a contained type", "List[int]"),  # noqa: UP006
         dict: ("dict", "contained types", "dict[int, int]"),
         typing.Dict: ("Dict", "contained types", "Dict[int, int]"),  # noqa: UP006
         tuple: ("tuple", "a contained type", "tuple[int]"),
         typing.Tuple: ("Tuple", "a contained type", "Tuple[int]"),  # noqa: UP006
         typing.Optional: ("Optional", "a contained type", "Optional[int]")}


def _refuse_bare(target_type) -> None:
    try:
        bare = _BARE.get(target_type)
    except TypeError:           # (an unhashable target)
        return
    if bare is not None:
        name, what, example = bare
        verb = "add contained type" if what == "contained types" else "add a contained type"
        raise RuntimeError(f"Attempted to use {name} without {what}. Please {verb}, e.g. "
                           f"{example}")


def _warn_if_empty(obj) -> None:
    if obj == [] or obj == {} or obj == ():
        warnings.warn("The inner type of a container is lost when calling torch.jit.isinstance "
                      "in eager mode. For example, List[int] would become list and therefore "
                      "falsely return True for List[float] or List[str].", stacklevel=4)


def _holds(obj, target_type) -> bool:
    """Whether obj is a `target_type` (a parametrised type: target_type has an origin)."""
    origin = typing.get_origin(target_type)
    _refuse_bare(target_type)
    parameters = typing.get_args(target_type)
    if origin is list:
        _warn_if_empty(obj)
        return isinstance(obj, list) and all(_element_is(e, parameters[0]) for e in obj)
    if origin is dict:
        _warn_if_empty(obj)
        return isinstance(obj, dict) and all(
            isinstance(k, parameters[0]) and _element_is(v, parameters[1])
            for k, v in obj.items())
    if origin is tuple:
        _warn_if_empty(obj)
        return isinstance(obj, tuple) and len(obj) == len(parameters) and all(
            _element_is(e, p) for e, p in zip(obj, parameters))
    if origin is typing.Union or origin is types.UnionType:     # (Optional[T] too)
        if obj is None:
            return True
        for member in parameters:
            if typing.get_origin(member) is not None:
                return _holds(obj, member)      # (PyTorch's: the first container decides)
            if isinstance(obj, member):
                return True
    return False


def _element_is(obj, target_type) -> bool:
    if typing.get_origin(target_type) is not None:
        return _holds(obj, target_type)
    return isinstance(obj, target_type)


def jit_isinstance(obj, target_type) -> bool:
    """Whether `obj` is a `target_type`, which may be a parametrised container type
    (List[int], Dict[str, List[Tensor]], Tuple[int, str], Optional[T]) or a tuple of types."""
    if isinstance(target_type, collections.abc.Container):
        if not isinstance(target_type, tuple):
            raise RuntimeError("The second argument to `torch.jit.isinstance` must be a type or "
                               "a tuple of types")
        return any(jit_isinstance(obj, t) for t in target_type)
    if typing.get_origin(target_type) is not None:
        return _holds(obj, target_type)
    _refuse_bare(target_type)
    return isinstance(obj, target_type)


jit_isinstance.__name__ = jit_isinstance.__qualname__ = "isinstance"
