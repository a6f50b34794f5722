"""Make public functions picklable by name (issue 15: ``torch.save(model)`` of a layer holding
``F.relu`` as its activation, as nn.TransformerEncoderLayer does).

pickle stores a function as (``__module__``, ``__qualname__``) and refuses it when that path
names a different object.  Several compiled functions are re-exported under a name whose
declared module holds another object of that name (the compiled ``relu`` a Tensor method binds,
say), so the path is wrong for the public one.  For those, the namespace that exports the
function becomes its declared module, which is where a user's code got it from.
"""
from __future__ import annotations as _annotations

import sys


def _resolves_to(obj) -> bool:
    target = sys.modules.get(getattr(obj, "__module__", None) or "")
    for part in (getattr(obj, "__qualname__", None) or "").split("."):
        if target is None:
            return False
        target = getattr(target, part, None)
    return target is obj


def repoint(namespace: dict, module_name: str) -> None:
    """Declare `module_name` as the module of each public function in `namespace` whose
    declared (module, qualname) does not lead back to it, when its name is its qualname."""
    for name, obj in list(namespace.items()):
        if name.startswith("_") or isinstance(obj, type) or not callable(obj):
            continue
        if getattr(obj, "__qualname__", None) != name or _resolves_to(obj):
            continue
        try:
            obj.__module__ = module_name
        except (AttributeError, TypeError):     # a builtin or other read-only callable
            pass
