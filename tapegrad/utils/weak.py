"""tapegrad.utils.weak: weak references and a dictionary keyed by tensors' identity.

A Tensor's `==` is elementwise and its hash is its id, so `weakref.WeakKeyDictionary` cannot look a
tensor up by equality without comparing values.  These containers key on object identity instead:
an entry lives as long as its key object and disappears when the key is garbage collected.
"""
from __future__ import annotations as _annotations

import copy as _copy
import weakref
from collections.abc import Mapping, MutableMapping

__all__ = ["TensorWeakRef", "WeakIdRef", "WeakIdKeyDictionary", "WeakTensorKeyDictionary"]

WeakRef = weakref.ref


class WeakIdRef(weakref.ref):
    """A weak reference that hashes and compares by the identity of its referent.

    The hash is taken at creation, so it stays valid after the referent dies; two references are
    equal while their referents are alive and the same object, and a dead one equals only itself.
    """

    __slots__ = ("_id",)

    def __new__(cls, key, callback=None):
        self = super().__new__(cls, key, callback)
        self._id = id(key)
        return self

    def __init__(self, key, callback=None):
        super().__init__(key, callback)

    def __call__(self):
        return super().__call__()

    def __hash__(self):
        return self._id

    def __eq__(self, other):
        if not isinstance(other, WeakIdRef):
            return NotImplemented
        a, b = self(), other()
        if a is not None and b is not None:
            return a is b
        return self is other

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq


class TensorWeakRef:
    """A weak reference to a tensor: calling it returns the tensor, or None once it is freed."""

    __slots__ = ("ref",)

    def __init__(self, tensor):
        from .._core import TensorBase
        if not isinstance(tensor, TensorBase):
            raise AssertionError(f"TensorWeakRef takes a Tensor, got {type(tensor).__name__}")
        self.ref = weakref.ref(tensor)

    def __call__(self):
        return self.ref()


class WeakIdKeyDictionary(MutableMapping):
    """A mapping whose keys are held weakly and matched by identity (`is`), never by `==`."""

    def __init__(self, dict=None, ref_type=WeakIdRef):  # noqa: A002 (PyTorch's parameter name)
        self.data = {}
        self.ref_type = ref_type
        self_ref = weakref.ref(self)

        def remove(key_ref, self_ref=self_ref):
            owner = self_ref()
            if owner is not None:
                owner.data.pop(key_ref, None)

        self._remove = remove
        if dict is not None:
            self.update(dict)

    def _ref(self, key):
        return self.ref_type(key, self._remove)

    def __getitem__(self, key):
        return self.data[self.ref_type(key)]

    def __setitem__(self, key, value):
        self.data[self._ref(key)] = value

    def __delitem__(self, key):
        del self.data[self.ref_type(key)]

    def __contains__(self, key):
        try:
            ref = self.ref_type(key)
        except TypeError:
            return False
        return ref in self.data

    def __len__(self):
        return sum(1 for ref in list(self.data) if ref() is not None)

    def __iter__(self):
        # Over a snapshot: a key collected while the caller iterates is skipped, not an error.
        for ref in list(self.data):
            key = ref()
            if key is not None:
                yield key

    def items(self):
        return [(k, v) for k, v in ((r(), v) for r, v in list(self.data.items())) if k is not None]

    def values(self):
        return [v for _, v in self.items()]

    def keys(self):
        return list(self)

    def get(self, key, default=None):
        try:
            return self.data.get(self.ref_type(key), default)
        except TypeError:
            return default

    def __repr__(self):
        return f"<{type(self).__name__} at {id(self):#x}>"

    def copy(self):
        new = type(self)(ref_type=self.ref_type)
        for key, value in self.items():
            new[key] = value
        return new

    __copy__ = copy

    def __deepcopy__(self, memo):
        new = type(self)(ref_type=self.ref_type)
        for key, value in self.items():
            new[key] = _copy.deepcopy(value, memo)
        return new

    def __eq__(self, other):
        if not isinstance(other, Mapping):
            return NotImplemented
        return ({id(k): v for k, v in self.items()}
                == {id(k): v for k, v in other.items()})

    __hash__ = None

    def __or__(self, other):
        if not isinstance(other, Mapping):
            return NotImplemented
        new = self.copy()
        new.update(other)
        return new

    def __ror__(self, other):
        if not isinstance(other, Mapping):
            return NotImplemented
        new = type(self)(ref_type=self.ref_type)
        new.update(other)
        new.update(self.items())
        return new

    def __ior__(self, other):
        self.update(other)
        return self


# PyTorch's name for the same dictionary, used by its tensor-keyed caches.
WeakTensorKeyDictionary = WeakIdKeyDictionary
