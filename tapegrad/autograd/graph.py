"""tapegrad.autograd.graph: PyTorch's hooks on the autograd graph.

- saved_tensors_hooks(pack_hook, unpack_hook)   every value saved for backward goes through
                                                 pack when saved, its result through unpack when
                                                 backward (or grad_fn._saved_*) reads it
- save_on_cpu(pin_memory=False)                  those hooks, moving saved values to the CPU
                                                 (tapegrad's one device: a round trip)
- disable_saved_tensors_hooks(error_message)     refuse saved-tensor hooks inside the block
- Node                                           the type of grad_fn objects (isinstance checks)
- GradientEdge, get_gradient_edge(tensor)        (node, output_nr): where a tensor's gradient goes
- increment_version(tensor)                      bump a tensor's version counter
- register_multi_grad_hook(tensors, fn, mode)    one hook over the gradients of several tensors
- allow_mutation_on_saved_tensors()              values saved inside survive later in-place writes

How the saved-value hooks reach the compiled records, and when pack runs, is
src/tapegrad/saved_hooks.pxi; what differs from PyTorch is in docs/differences.md.
"""
from __future__ import annotations as _annotations

import abc
import contextlib
import threading
import warnings
from typing import Any, Callable, NamedTuple

from .. import _core
from .._torch_names import object_repr as _object_repr

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "register_multi_grad_hook", "Node", "GradientEdge", "get_gradient_edge",
           "increment_version", "allow_mutation_on_saved_tensors"]


class saved_tensors_hooks:
    """Context manager: pack_hook(tensor) -> anything is called on each tensor an operation saves
    for backward, and unpack_hook(that) -> tensor when backward needs the value back (it must
    have the saved tensor's shape and content).  Hooks nest (the innermost applies) and are per
    thread.  Inside, pack runs with grad mode off and must not modify its input in place."""
    __repr__ = _object_repr  # Python's default repr, under PyTorch's module path

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _core._saved_hooks_push(self.pack_hook, self.unpack_hook)

    def __exit__(self, *args):
        _core._saved_hooks_pop()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU and moved back to their device for backward (PyTorch's
    activation offloading).  tapegrad computes on the CPU only, so each value makes the round trip
    to itself; with pin_memory=True it is a copy (PyTorch copies into pinned memory)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack_to_cpu(tensor):
            if not pin_memory:
                return tensor.device, tensor.cpu()
            packed = tensor.detach().clone()
            return tensor.device, packed

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Inside, entering saved_tensors_hooks raises RuntimeError(error_message) (as does entering
    this while hooks are active).  Usable as a decorator."""
    previous = None
    try:
        previous = _core._saved_hooks_disable(error_message)
        yield
    finally:
        _core._saved_hooks_disable(previous) if previous is not None else _reenable()


def _reenable():
    _core._saved_hooks_disable(None)


class Node(abc.ABC):
    """The type of autograd graph nodes (tensor.grad_fn): name(), next_functions.  A built-in
    op's node and a custom Function's node are both instances (isinstance(y.grad_fn, Node))."""

    @abc.abstractmethod
    def name(self) -> str:
        ...

    @property
    @abc.abstractmethod
    def next_functions(self):
        ...

    @classmethod
    def __subclasshook__(cls, C):
        if cls is Node:
            from .function import BackwardCFunction
            if issubclass(C, (_core.GradFn, _core.EdgeNode, BackwardCFunction)):
                return True
        return NotImplemented


class GradientEdge(NamedTuple):
    """An edge of the autograd graph: the node a gradient flows to and that node's output
    number (ownership_token: PyTorch's, kept for compatibility; always None)."""
    node: Node
    output_nr: int
    ownership_token: Any = None


def get_gradient_edge(tensor) -> GradientEdge:
    """The edge `tensor`'s gradient flows into: (its grad_fn, output_nr), or, for a leaf that
    requires grad, (its AccumulateGrad node, 0)."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    grad_fn = tensor.grad_fn
    if grad_fn is None:
        grad_fn = _core._grad_accumulator(tensor)
    return GradientEdge(grad_fn, tensor.output_nr)


def increment_version(tensor) -> None:
    """Bump the version counter of `tensor` (or of each tensor of an iterable), as an in-place
    write does: for code that writes a tensor's memory behind autograd's back, so that a saved
    value it overwrote is refused by backward."""
    from ..tensor import Tensor
    tensors = (tensor,) if isinstance(tensor, Tensor) else tuple(tensor)
    for t in tensors:
        _core._mark_written(t)


# Whether an allow_mutation_on_saved_tensors block is open (PyTorch's module flag: one at a time).
_allow_mutation_on_saved_tensors_enabled: bool = False


class _Handle:
    """What the block's pack hook returns for a saved value: the key of its copy."""

    __repr__ = _object_repr


class _AllowMutationOnSavedContext:
    """What allow_mutation_on_saved_tensors yields: the copies of the values saved inside the
    block (``cloned``, by handle); the block clears them when it exits."""

    __repr__ = _object_repr

    def __init__(self) -> None:
        import weakref
        self.cloned = weakref.WeakKeyDictionary()

    def clear(self) -> None:
        self.cloned.clear()


class _swap_with_cloned(saved_tensors_hooks):
    """The block's saved-value hooks.  PyTorch keeps each saved value and copies it just before
    an in-place write reaches it (a dispatch mode sees every write); tapegrad has no such mode,
    and copies each value when it is packed (before any later write: saved_hooks.pxi packs
    pending values ahead of each in-place write), which gives backward the same values at the
    cost of one copy per saved value."""

    def __init__(self, ctx: _AllowMutationOnSavedContext) -> None:
        def pack_hook(tensor):
            handle = _Handle()
            ctx.cloned[handle] = tensor.detach().clone()
            return handle

        def unpack_hook(handle):
            if not _allow_mutation_on_saved_tensors_enabled or handle not in ctx.cloned:
                raise AssertionError("Trying to backward outside of the "
                                     "'allow_mutation_on_saved_tensors' context in which the "
                                     "graph was originally recorded.")
            return ctx.cloned[handle]

        super().__init__(pack_hook, unpack_hook)


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Context manager inside which tensors saved for backward may be modified in place: the
    backward (run inside the same block) uses their values as saved, where it would otherwise
    raise the "modified by an inplace operation" error.  Yields the block's state, cleared on
    exit.  Blocks do not nest."""
    global _allow_mutation_on_saved_tensors_enabled
    ctx = _AllowMutationOnSavedContext()
    with _swap_with_cloned(ctx):
        try:
            if _allow_mutation_on_saved_tensors_enabled:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
            _allow_mutation_on_saved_tensors_enabled = True
            yield ctx
        finally:
            ctx.clear()
            _allow_mutation_on_saved_tensors_enabled = False


class _MultiHandle:
    """What register_multi_grad_hook returns: remove() removes the hook from every tensor."""

    __repr__ = _object_repr      # <torch.autograd.graph._MultiHandle object at 0x...>

    def __init__(self, handles):
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()

    def __enter__(self):
        return self

    def __exit__(self, *args) -> None:
        self.remove()


def register_multi_grad_hook(tensors, fn, *, mode: str = "all"):
    """One hook over the gradients of several tensors, once per backward.

    mode="all": fn(grads) with one entry per tensor (None for those this backward did not
    reach), once their gradients are computed; tapegrad calls it when the backward ends, where
    PyTorch calls it as soon as the last of them is computed.  mode="any": fn(grad) with the
    first of their gradients computed in this backward.  Returns a handle with remove()."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    lock = threading.Lock()
    state = {"pass": None, "grads": None}

    if mode == "any":
        def any_hook(grad):
            with lock:
                current = _core._backward_pass()
                if state["pass"] is current:
                    return None
                state["pass"] = current
            fn(grad)
            return None
        return _MultiHandle([t.register_hook(any_hook) for t in tensors])

    def finish():
        with lock:
            grads, state["grads"], state["pass"] = state["grads"], None, None
        fn(grads)

    def make_hook(index):
        def hook(grad):
            if len(tensors) == 1 and _core._is_sole_backward_root(tensors[0]):
                # PyTorch's engine does not count the node a backward starts from alone among
                # those it will execute: a hook over that one tensor never fires
                return None
            with lock:
                current = _core._backward_pass()
                if state["pass"] is not current:
                    state["pass"], state["grads"] = current, [None] * len(tensors)
                    _core._queue_backward_callback(finish)
                state["grads"][index] = grad
            return None
        return hook

    return _MultiHandle([t.register_hook(make_hook(i)) for i, t in enumerate(tensors)])


def _warn_create_graph_cycle() -> None:
    """backward(create_graph=True)'s warning, from this one line: PyTorch warns from one line of
    its own graph.py, so under the default filter a script sees it once, whichever of its lines
    called backward (src/tapegrad/graph_vjp.pxi calls this)."""
    warnings.warn(
        "Using backward() with create_graph=True will create a reference cycle between the "
        "parameter and its gradient which can cause a memory leak. We recommend using "
        "autograd.grad when creating the graph to avoid this. If you have to use this "
        "function, make sure to reset the .grad fields of your parameters to None after use to "
        "break the cycle and avoid the leak.", UserWarning, stacklevel=1)
