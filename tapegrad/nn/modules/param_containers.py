"""ParameterList and ParameterDict: parameters held in a list or a dict, registered on the module
so that parameters(), named_parameters(), state_dict() and the optimizers find them.

As in PyTorch, an item is stored as an attribute of the container (named by its index, or by its
key): a tensor becomes a Parameter (so it is registered), any other object is kept as a plain
attribute (and printed as "Object of type: ...").
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
from collections import OrderedDict
from collections.abc import Mapping

from ...tensor import Tensor
from ..parameter import Parameter
from .module import Module


def _as_parameter(value):
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _describe(value, type_name: str) -> str:
    """One entry of the repr: 'Parameter containing: [<type> of size 2x3]'."""
    if not isinstance(value, Tensor):
        return f"Object of type: {type(value).__name__}"
    size = "x".join(str(n) for n in value.shape)
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    return f"{kind} containing: [{type_name} of size {size}]"


class ParameterList(Module):
    """A list of parameters (tensors are wrapped in Parameter), registered as '0', '1', ..."""

    def __init__(self, values=None) -> None:
        super().__init__()
        object.__setattr__(self, "_size", 0)
        if values is not None:
            self += values

    def _index(self, idx: int) -> str:
        idx = int(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return str(idx % len(self))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)([self[i] for i in range(len(self))[idx]])
        return getattr(self, self._index(idx))

    def __setitem__(self, idx: int, param) -> None:
        setattr(self, self._index(idx), _as_parameter(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, parameters) -> "ParameterList":
        return self.extend(parameters)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value) -> "ParameterList":
        """Add value at the end (a tensor becomes a Parameter)."""
        index = len(self)
        object.__setattr__(self, "_size", index + 1)
        setattr(self, str(index), _as_parameter(value))
        return self

    def extend(self, values) -> "ParameterList":
        """Append each of an iterable of values."""
        # a tensor iterates over its rows, but is one value, never a list of them
        if isinstance(values, (str, bytes, Tensor)) or not hasattr(values, "__iter__"):
            raise TypeError(f"ParameterList.extend should be called with an iterable, but got "
                            f"{_type_name(values)}")
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({i}): {_describe(p, str(p.dtype) if isinstance(p, Tensor) else '')}"
                         for i, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters (tensors are wrapped in Parameter), registered under their
    keys.  A plain dict given to the constructor or update() is added in sorted key order, an
    OrderedDict or ParameterDict in its own order (PyTorch's rule)."""

    def __init__(self, parameters=None) -> None:
        super().__init__()
        object.__setattr__(self, "_keys", {})
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _key(key) -> str:
        if not isinstance(key, str):
            raise TypeError(f"Index given to ParameterDict cannot be used as a key as it is not a "
                            f"string (type is '{_type_name(key)}'). Open an issue on github if "
                            f"you need non-string keys.")
        return key

    def __getitem__(self, key: str):
        return getattr(self, self._key(key))

    def __setitem__(self, key: str, value) -> None:
        self._keys[self._key(key)] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(list(self._keys))

    def __contains__(self, key) -> bool:
        return key in self._keys

    def keys(self):
        """The keys, in order."""
        return self._keys.keys()

    def items(self):
        """(key, parameter) pairs, in order."""
        return ((k, self[k]) for k in self._keys)

    def values(self):
        """The parameters, in key order."""
        return (self[k] for k in self._keys)

    def get(self, key: str, default=None):
        """self[key], or default when key is absent."""
        return self[key] if key in self else default

    def pop(self, key: str):
        """Remove key and return its parameter."""
        value = self[key]
        del self[key]
        return value

    def popitem(self):
        """Remove and return the last (key, parameter) pair."""
        if not self._keys:
            raise KeyError("popitem(): dictionary is empty")
        key = list(self._keys)[-1]
        return key, self.pop(key)

    def setdefault(self, key: str, default=None):
        """self[key], set to default first when key is absent."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        """Remove every entry."""
        for key in list(self._keys):
            del self[key]

    def copy(self) -> "ParameterDict":
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def fromkeys(self, keys, default=None) -> "ParameterDict":
        """A new ParameterDict with `keys`, each holding default."""
        return ParameterDict((k, default) for k in keys)

    def update(self, parameters) -> None:
        """Add the (key, value) pairs of a mapping or an iterable of pairs."""
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        elif hasattr(parameters, "__iter__") and not isinstance(parameters, (str, bytes, Tensor)):
            pairs = []
            for j, pair in enumerate(parameters):
                if not hasattr(pair, "__iter__") or isinstance(pair, (str, bytes)):
                    raise TypeError(f"ParameterDict update sequence element #{j} should be "
                                    f"Iterable; is {type(pair).__name__}")
                pair = list(pair)
                if len(pair) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} has length "
                                     f"{len(pair)}; 2 is required")
                pairs.append(pair)
        else:
            raise TypeError(f"ParametersDict.update should be called with an iterable of "
                            f"key/value pairs, but got {_type_name(parameters)}")
        for key, value in pairs:
            self[key] = value

    def __or__(self, other) -> "ParameterDict":
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other) -> "ParameterDict":
        merged = other.copy() if isinstance(other, ParameterDict) else ParameterDict(other)
        merged.update(self)
        return merged

    def __ior__(self, other) -> "ParameterDict":
        self.update(other)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_describe(p, p.type() if isinstance(p, Tensor) else '')}"
                         for k, p in self.items())

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called.")
