"""torch._dynamo: the names of PyTorch's compiler front end that scripts reach for directly.

PyTorch makes ``torch._dynamo`` an attribute of ``torch`` on first use, and scripts written for
``torch.compile`` use a few of its names without importing it: ``@torch._dynamo.disable`` on a
function that must stay eager, ``torch._dynamo.reset()`` between experiments, settings in
``torch._dynamo.config`` (``suppress_errors``, ``cache_size_limit``).  tapegrad's compiler is
tapegrad.replay; these are the same controls over it, as in torch.compiler (tapegrad/compiler.py).
"""
from __future__ import annotations as _annotations

from .. import compiler as _compiler
from . import config

__all__ = ["config", "disable", "reset", "is_compiling", "allow_in_graph",
           "assume_constant_result", "list_backends", "mark_dynamic", "maybe_mark_dynamic",
           "mark_static", "graph_break"]

disable = _compiler.disable
reset = _compiler.reset
is_compiling = _compiler.is_compiling
allow_in_graph = _compiler.allow_in_graph
assume_constant_result = _compiler.assume_constant_result
list_backends = _compiler.list_backends


def mark_dynamic(t, index, *, hint_override=None, min=None, max=None, specialize_on=None) -> None:
    """Nothing to record: a tapegrad capture is keyed on the shapes it sees (tapegrad.replay), and
    a new size of dimension ``index`` of ``t`` gets its own capture."""
    return None


def maybe_mark_dynamic(t, index) -> None:
    """As mark_dynamic: nothing to record."""
    return None


def mark_static(t, index=None) -> None:
    """Nothing to record: every capture is specialised to the shapes it saw."""
    return None


def graph_break() -> None:
    """Nothing to split: tapegrad's capture has no graph to break; the call is a no-op eagerly."""
    return None
