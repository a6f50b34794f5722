"""The leaves autodiff transforms make for themselves (torch.func's fresh inputs and dummy
cotangents, forward_ad's dual tensors of primals that do not require grad), and whether a
result's graph reaches any other leaf that requires grad: a tensor of the caller's, through which
the result must stay differentiable (PyTorch's transforms compose with autograd)."""
from __future__ import annotations as _annotations

import weakref

# id -> weak reference (tensors compare elementwise, so no WeakSet)
_leaves: dict = {}


def mark(tensor):
    """Record ``tensor`` (a leaf a transform made) and return it."""
    key = id(tensor)
    _leaves[key] = weakref.ref(tensor, lambda _, key=key: _leaves.pop(key, None))
    return tensor


def is_internal(tensor) -> bool:
    ref = _leaves.get(id(tensor))
    return ref is not None and ref() is tensor


def reaches_outer_leaf(tensor) -> bool:
    """Whether ``tensor``'s graph reaches a leaf that requires grad and that no transform
    made (an input of the caller's that requires grad, or one the function closes over)."""
    if tensor.grad_fn is None:
        return tensor.requires_grad and not is_internal(tensor)
    seen, stack = {}, [tensor.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node          # (held, so that ids are not reused during the walk)
        if type(node).__name__ == "AccumulateGrad":
            # (a leaf already freed is an inner transform's own, gone with it: jacrev's fresh
            # input inside grad; a tensor of the caller's is alive while the caller runs)
            variable = node.variable
            if variable is not None and not is_internal(variable):
                return True
            continue
        stack.extend(f for f, _ in node.next_functions)
    return False
