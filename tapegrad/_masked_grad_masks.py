"""Which entries of a MaskedTensor's gradient are specified.

In PyTorch the gradients flowing back through MaskedTensor ops are MaskedTensors themselves, so
a leaf's .grad carries the mask its gradient arrived with: ``torch.where(cond, x, y)`` hands
``x`` a gradient masked out where ``cond`` is False, a reduction hands its input a gradient
specified where the input is.  tapegrad's tape carries the gradient values (of the data); the
masks travel here.  Each MaskedTensor made by a differentiable op records a rule -- its
MaskedTensor inputs and a function from the mask of its gradient to theirs -- and a backward
from MaskedTensor outputs walks those rules in reverse creation order (creation order is a
topological order, as on the tape: no recursion, no graph search), OR-ing the masks a node
receives from several uses.

A rule holds its inputs, as PyTorch's graph does, and only results that require grad get one.
Plain tensors that require grad and enter a MaskedTensor op directly (``mt * b``, the data of
``as_masked_tensor``) are inputs too: autograd.grad hands them a MaskedTensor gradient, as
PyTorch does.  (Plain ops between a plain leaf and a MaskedTensor are not followed: that leaf's
gradient stays a plain tensor.)
"""
from __future__ import annotations

import heapq
import itertools

_creation_order = itertools.count()


def _tg():
    import tapegrad
    return tapegrad


def next_order() -> int:
    return next(_creation_order)


# -- the rules -------------------------------------------------------------------------------------

def _fit(mask, shape):
    """mask (broadcast from an operand of ``shape``) reduced back to that shape: an entry is
    specified when any entry it was broadcast to is."""
    if tuple(mask.shape) == tuple(shape):
        return mask
    return mask.to(_tg().int64).sum_to_size(tuple(shape)) > 0


def same_mask(*parents):
    """Elementwise ops, casts, softmax: each input's gradient has the output gradient's mask
    (reduced to the input's shape where it was broadcast)."""
    return parents, lambda gm: tuple(_fit(gm, p.shape) for p in parents)


def reduction(parent, dims, keepdim):
    """A reduction over ``dims`` (None: all): the input's gradient is specified where the
    input is, within the slices whose result's gradient is specified."""
    def rule(gm):
        if dims is not None and not keepdim:
            for d in sorted(d % max(parent.dim(), 1) for d in dims):
                gm = gm.unsqueeze(d)
        return (gm.expand(tuple(parent.shape)) & parent._masked_mask,)
    return (parent,), rule


def selection(condition, parents):
    """torch.where(condition, x, y): x's gradient is masked out where y was taken, and y's
    where x was (PyTorch's where backward)."""
    x, y = parents

    def rule(gm):
        tg = _tg()
        off = tg.zeros((), dtype=tg.bool)
        return (_fit(tg.where(condition, gm, off), x.shape) if x is not None else None,
                _fit(tg.where(condition, off, gm), y.shape) if y is not None else None)
    return (x, y), rule


def linear(fn, parents, masked_positions, args):
    """Views, indexing, joins: an input entry is specified when it feeds a specified output
    entry -- the op's own vector-Jacobian product of the gradient mask, on all-ones inputs.
    ``masked_positions`` lists where the MaskedTensors sit in ``args`` (after flattening
    lists), ``fn(*args)`` runs the op."""
    def rule(gm):
        tg = _tg()
        with tg.enable_grad():
            ones = [tg.ones(tuple(p.shape), dtype=tg.float64, requires_grad=True)
                    for p in parents]
            out = fn(*_substituted(args, masked_positions, ones))
            grads = tg.autograd.grad(out, ones, gm.to(tg.float64), allow_unused=True)
        return tuple(None if g is None else g != 0 for g in grads)
    return tuple(parents), rule


def _substituted(args, positions, values):
    it = iter(values)
    chosen = set(positions)
    flat_index = itertools.count()

    def replace(a):
        if isinstance(a, (list, tuple)):
            return type(a)(replace(x) for x in a)
        return next(it) if next(flat_index) in chosen else a
    return [replace(a) for a in args]


# -- the walk ----------------------------------------------------------------------------------------

def propagate(starts):
    """{id(node): (node, mask)} for the nodes without a rule (the leaves) that the gradient
    masks of ``starts`` -- (MaskedTensor, mask) pairs -- reach."""
    pending: dict = {}
    heap: list = []

    def receive(node, mask):
        key = id(node)
        if key in pending:
            pending[key] = (node, pending[key][1] | mask)
        else:
            pending[key] = (node, mask)
            # (a plain tensor has no order and no rule: it is reached last, as a leaf)
            heapq.heappush(heap, (-getattr(node, "_order", -1), key))

    for node, mask in starts:
        receive(node, mask)
    leaves = {}
    while heap:
        _, key = heapq.heappop(heap)
        node, mask = pending.pop(key)
        rule = getattr(node, "_grad_rule", None)
        if rule is None:
            leaves[key] = (node, mask)
            continue
        parents, fn = rule
        for parent, parent_mask in zip(parents, fn(mask)):
            if parent is not None and parent_mask is not None:
                receive(parent, parent_mask)
    return leaves
