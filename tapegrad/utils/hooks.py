"""torch.utils.hooks: RemovableHandle, the handle every Module.register_*hook returns."""
from __future__ import annotations as _annotations

import weakref
from collections import OrderedDict
from typing import Any

from .. import _core
from .._torch_names import object_repr as _object_repr


# Bumped whenever a hook is registered or removed (every register_*hook makes a handle): a
# tapegrad.compile capture ran the hooks registered then, and guards this count, so a hook added
# or removed later sends the call back to capture (a replay runs no hook itself).
_HOOK_TABLES_VERSION = {"version": 0}


class _HandleType(type):
    """RemovableHandle's metaclass: the compiled core's handle (what Tensor.register_hook,
    register_post_accumulate_grad_hook and grad_fn's hooks return, a C type for speed) counts as
    a RemovableHandle too, as every hook handle is one in PyTorch."""

    def __instancecheck__(cls, obj) -> bool:
        return super().__instancecheck__(obj) or (
            cls is RemovableHandle and isinstance(obj, _core.RemovableHandle))

    def __subclasscheck__(cls, sub) -> bool:
        return super().__subclasscheck__(sub) or (
            cls is RemovableHandle and isinstance(sub, type) and
            issubclass(sub, _core.RemovableHandle))


class RemovableHandle(metaclass=_HandleType):
    """A handle whose .remove() deletes its hook (key `id`) from `hooks_dict` and from
    `extra_dict` (a dict or a list of dicts: side tables such as the with_kwargs one).  The
    dicts are held weakly, as in PyTorch: a handle does not keep a dead module's hooks alive."""

    id: int
    next_id: int = 0
    __repr__ = _object_repr

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        _HOOK_TABLES_VERSION["version"] += 1
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        extras = [extra_dict] if isinstance(extra_dict, dict) else (extra_dict or [])
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self) -> None:
        _HOOK_TABLES_VERSION["version"] += 1
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state) -> None:
        # a dead dict stays dead: a weak reference to a fresh dict nobody holds
        self.hooks_dict_ref = weakref.ref(OrderedDict() if state[0] is None else state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in (state[2] if len(state) > 2 and
                                                             state[2] is not None else ()))

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()
