"""embedding(sparse=True): the weight's gradient as a sparse COO tensor, as PyTorch gives it.

The compiled sweep moves dense adjoints only, and a dense (num_embeddings, dim) gradient is what
sparse=True exists to avoid.  So where the weight's gradient is recorded, the embedding's output
is a copy of a hidden dense leaf holding the looked-up rows (``W[idx]``).  Backward gives that
leaf a gradient the size of the output; a post-accumulate-grad hook on it takes the gradient
away (the leaf's .grad stays None) and turns it into PyTorch's sparse gradient of the weight:
the looked-up indices (flattened, in call order, padding_idx entries left out) and the incoming
gradient rows, size = weight.shape.

PyTorch adds the gradients of several lookups reaching the weight in one backward into one
sparse tensor, then accumulates it into weight.grad: appended to a sparse .grad (the same
object, uncoalesced), added in place into a dense one, and summed with a dense gradient into a
new dense .grad.  So each hook only notes its lookup's entries (in the pass's ``_PassNotes``);
when the backward pass ends (the core's ``_queue_backward_callback``) they are joined in call
order and accumulated once, after the weight's tensor hooks ran on them and before its
post-accumulate-grad hooks, as PyTorch's AccumulateGrad node does.  (PyTorch joins two lookups'
entries by concatenation or by a sorted merge, depending on its gradients' memory layout;
tapegrad always concatenates: the same coalesced gradient, docs/differences.md.)

``autograd.grad(..., weight)`` asks for the hidden leaves' gradients instead and assembles the
weight's the same way (``grad_through_lookups``).  A ``tapegrad.compile``'d call runs eagerly:
a replay could not make the hidden leaf.
"""
from __future__ import annotations as _annotations

import itertools
import weakref

import numpy as np

from . import _core
from ._sparse_coo import SparseTensor, _sparse_coo_tensor
from .grad_mode import no_grad

_SCALE_GRAD_ERROR = "embedding_backward: scale_grad_by_freq not supported with sparse gradients"

# Call order of the lookups (the key that orders one pass's entries).
_CALLS = itertools.count()

# The lookups recorded on each weight, for autograd.grad: id(weight) -> list of weak references
# to its _Lookup objects (dead ones pruned at each new lookup; the list dropped with the weight).
_LOOKUPS: dict[int, list] = {}


class _PassNotes:
    """The entries one backward pass gave each weight: {id(weight): (weight, [entries])}.  It is
    the pass's queued callback, so it lives and dies with the pass (a pass that raises drops
    it: no entry reaches a later pass); called when the pass ends, it accumulates them."""

    __slots__ = ("by_weight",)

    def __init__(self):
        self.by_weight = {}

    def __call__(self) -> None:
        for weight, entries in self.by_weight.values():
            _accumulate(weight, _sparse_from(weight, entries))


class _Lookup:
    """One recorded lookup: its hidden leaf, the weight, the kept entries and the call number.
    Its ``note_gradient`` is the hidden leaf's post-accumulate-grad hook, and so what keeps the
    leaf alive while the graph does (the tape holds leaves weakly; the hook with its record)."""

    __slots__ = ("hidden", "weight", "indices", "keep", "call", "scale_grad_by_freq",
                 "__weakref__")

    def __init__(self, hidden, weight, indices, keep, scale_grad_by_freq):
        self.hidden = hidden
        self.weight = weight
        self.indices = indices                  # int64, padding entries removed
        self.keep = keep                        # mask of the kept entries, or None for all
        self.call = next(_CALLS)
        self.scale_grad_by_freq = scale_grad_by_freq

    def entries(self, grad):
        """(call, indices, values) of this lookup's gradient `grad` (the output's shape)."""
        if self.scale_grad_by_freq:
            raise RuntimeError(_SCALE_GRAD_ERROR)
        rows = np.ascontiguousarray(grad._array).reshape(-1, grad._array.shape[-1])
        if self.keep is not None:
            rows = rows[self.keep]
        return self.call, self.indices, rows

    def note_gradient(self, hidden) -> None:
        """The hidden leaf's gradient becomes entries of the weight's sparse gradient,
        accumulated when the backward pass ends; the leaf keeps no .grad."""
        grad = hidden.grad
        hidden.grad = None
        if grad is None:
            return
        entries = self.entries(grad)
        # (the running pass is the list of its queued callbacks)
        notes = next((cb for cb in _core._backward_pass() if type(cb) is _PassNotes), None)
        if notes is None:
            notes = _PassNotes()
            _core._queue_backward_callback(notes)
        notes.by_weight.setdefault(id(self.weight), (self.weight, []))[1].append(entries)


def sparse_embedding(weight, idx: np.ndarray, index_shape: tuple, padding_idx: int,
                     scale_grad_by_freq: bool):
    """The output of embedding(sparse=True) for a weight whose gradient is recorded (the
    arguments already checked by the core's embedding)."""
    from .creation import tensor
    _core._capture_unsupported("it calls embedding(sparse=True), whose sparse weight gradient "
                               "a replay cannot make", True)
    rows = weight._array[idx].reshape(tuple(index_shape) + (weight._array.shape[1],))
    hidden = tensor(rows, requires_grad=True)
    keep = None
    kept = idx
    if padding_idx >= 0:
        mask = idx != padding_idx
        if not mask.all():
            keep, kept = mask, idx[mask]
    lookup = _Lookup(hidden, weight, kept, keep, scale_grad_by_freq)
    hidden.register_post_accumulate_grad_hook(lookup.note_gradient)
    refs = _LOOKUPS.get(id(weight))
    if refs is None:
        refs = _LOOKUPS[id(weight)] = []
        weakref.finalize(weight, _LOOKUPS.pop, id(weight), None)
    refs[:] = [r for r in refs if r() is not None]
    refs.append(weakref.ref(lookup))
    out = hidden.clone()
    return _core._name_grad_fn(out, "EmbeddingBackward0")


def _sparse_from(weight, entries: list):
    """One sparse gradient of `weight` from (call, indices, values) entries, in call order."""
    from .creation import tensor
    entries = sorted(entries, key=lambda e: e[0])
    indices = np.concatenate([e[1] for e in entries]) if entries else np.zeros(0, np.int64)
    dim = weight._array.shape[1]
    values = (np.concatenate([e[2] for e in entries]) if entries
              else np.zeros((0, dim), weight._array.dtype))
    return _sparse_coo_tensor(tensor(indices.reshape(1, -1)),
                              tensor(values.astype(weight._array.dtype, copy=False)),
                              tuple(weight._array.shape))


def _accumulate(weight, grad) -> None:
    """weight.grad += grad (sparse) as PyTorch's AccumulateGrad, with the weight's hooks."""
    hooks, post_hooks = _core._leaf_grad_hooks(weight)
    for hook in hooks:
        replaced = hook(grad)
        if replaced is not None:
            grad = replaced
    old = weight.grad
    if old is None:
        weight.grad = grad
    elif isinstance(old, SparseTensor):
        old._append(grad)                       # the same object, entries appended
    else:
        with no_grad():
            old.add_(grad)                      # a dense .grad: added in place
    for hook in post_hooks:
        _core.check_post_accumulate_result(hook(weight), weight)


def lookups_of(weight) -> list:
    """The live recorded lookups of `weight` (for autograd.grad)."""
    refs = _LOOKUPS.get(id(weight))
    if not refs:
        return []
    lookups = [r() for r in refs]
    return [lk for lk in lookups if lk is not None and lk.weight is weight]


def grad_through_lookups(outputs, inputs, grad_outputs, retain_graph, create_graph,
                         allow_unused, materialize_grads):
    """autograd.grad where an input was looked up with sparse=True, or None where none was.

    The core is asked for the gradients of the inputs and of their lookups' hidden leaves
    (every one allowed unused); an input's result is its sparse gradient (the lookups' entries
    in call order), plus its dense gradient where it also has one (a dense sum, as PyTorch's),
    and PyTorch's error or None where neither reached it."""
    if isinstance(inputs, dict):
        return None
    seq = [inputs] if isinstance(inputs, _core.TensorBase) else list(inputs)
    lookups = [lookups_of(x) if isinstance(x, _core.TensorBase) else [] for x in seq]
    if not any(lookups):
        return None
    if materialize_grads and allow_unused is False:
        return None                             # the core raises PyTorch's ValueError
    allow = materialize_grads if allow_unused is None else bool(allow_unused)
    hidden = [lk.hidden for group in lookups for lk in group]
    grads = _core._grad(outputs, tuple(seq) + tuple(hidden), grad_outputs, retain_graph,
                        create_graph, True, False)
    hidden_grads = iter(grads[len(seq):])
    result = []
    for j, (x, group) in enumerate(zip(seq, lookups)):
        dense = grads[j]
        entries = [lk.entries(g) for lk, g in zip(group, hidden_grads) if g is not None]
        grad = dense
        if entries:
            sparse = _sparse_from(x, entries)
            grad = sparse if dense is None else dense + sparse
        if grad is None:
            if not allow:
                raise RuntimeError(f"The differentiated Tensor at index {j} appears to not have "
                                   "been used in the graph. Set allow_unused=True if this is "
                                   "the desired behavior.")
            if materialize_grads:
                grad = x.new_zeros(x.shape)
        result.append(grad)
    return tuple(result)


def _lookup_leaves(inputs: tuple) -> tuple:
    """The hidden leaves of the live lookups of `inputs` (backward(inputs=...) targets them)."""
    return tuple(lk.hidden for x in inputs if isinstance(x, _core.TensorBase)
                 for lk in lookups_of(x))


_core._set_sparse_embedding(sparse_embedding)
_core._set_sparse_lookup_leaves(_lookup_leaves)
