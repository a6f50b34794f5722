"""torch.cond and torch.while_loop, PyTorch's structured control-flow operators, in eager mode.

PyTorch runs them through its compiler, which traces both branches (or the loop body) with
fake tensors and rejects what it cannot capture: branches whose outputs differ in number, shape
or dtype, outputs aliasing an input, mutation of an input.  tapegrad has no tracer: the taken
branch (each loop iteration) runs eagerly and records its ops on the tape as usual, so
gradients flow through it; the same contracts are checked on the real values.
"""
from __future__ import annotations as _annotations

import numpy as np

from . import grad_mode
from .tensor import Tensor

__all__ = ["cond", "while_loop"]


def _leaves(tree) -> list:
    """The leaves of a nested dict/list/tuple, in PyTorch's pytree order."""
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in _leaves(item)]
    if isinstance(tree, dict):
        return [leaf for key in tree for leaf in _leaves(tree[key])]
    return [tree]


def _array(t: Tensor):
    return t.detach().numpy()


def _check_no_alias(outputs, inputs, op: str) -> None:
    ins = [_array(t) for t in inputs if isinstance(t, Tensor)]
    for out in outputs:
        if isinstance(out, Tensor) and any(np.may_share_memory(_array(out), a) for a in ins):
            raise RuntimeError(
                "Encountered aliasing during higher order op tracing: Higher order ops do not "
                f"support aliasing ({op}). Replace `return input` with `return input.clone()` "
                "to avoid aliasing.")


def _check_no_mutation(inputs, versions, op: str) -> None:
    if any(t._version != v for t, v in zip(inputs, versions)):
        raise RuntimeError(
            "Encountered input mutation during higher order op tracing: Higher order ops do not "
            f"support input mutation ({op}). Clone the input before mutating it.")


def _same_metadata(a, b, what: str, op: str) -> None:
    a_leaves, b_leaves = _leaves(a), _leaves(b)
    if len(a_leaves) != len(b_leaves):
        raise RuntimeError(f"{op}: {what}: expected to return same number of outputs but got "
                           f"{len(a_leaves)} and {len(b_leaves)}")
    for i, (x, y) in enumerate(zip(a_leaves, b_leaves)):
        if isinstance(x, Tensor) != isinstance(y, Tensor):
            raise RuntimeError(f"{op}: {what}: pair[{i}] differ in type: {type(x).__name__} "
                               f"vs {type(y).__name__}")
        if isinstance(x, Tensor):
            if x.dim() != y.dim():
                raise RuntimeError(f"{op}: {what}: expected same dim but got {x.dim()} and "
                                   f"{y.dim()}")
            if x.dtype != y.dtype:
                raise RuntimeError(f"{op}: {what}: expected same dtype but got {x.dtype} and "
                                   f"{y.dtype}")
            if tuple(x.shape) != tuple(y.shape):
                raise RuntimeError(f"{op}: {what}: pair[{i}] differ in 'shape: "
                                   f"{tuple(x.shape)} vs {tuple(y.shape)}'")


def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``.

    A Python bool/int/float ``pred`` just picks the branch.  A tensor ``pred`` must have one
    element; ``operands`` must then be a tuple or list whose (nested dict/list/tuple) leaves
    are tensors, the branches must return the same number of outputs with the same dtypes and
    shapes, and neither may return an operand or mutate one (RuntimeError, as PyTorch).  The
    taken branch's ops are recorded, so gradients flow through it.
    """
    if isinstance(pred, (bool, int, float)):
        return true_fn(*operands) if pred else false_fn(*operands)
    if not isinstance(pred, Tensor):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)) or not all(
            isinstance(t, Tensor) for t in _leaves(operands)):
        raise RuntimeError("Expect operands to be a tuple of possibly nested dict/list/tuple "
                           f"that only consists of tensor leaves, but got {operands}.")
    inputs = _leaves(operands)
    versions = [t._version for t in inputs]
    taken, other = (true_fn, false_fn) if bool(pred.item()) else (false_fn, true_fn)
    out = taken(*operands)
    if grad_mode.is_grad_enabled():
        _check_no_mutation(inputs, versions, "torch.cond")
    _check_no_alias(_leaves(out), inputs, "torch.cond")
    # PyTorch traces both branches; the other one runs here on detached copies, without
    # recording, for its output metadata.  A data-dependent failure there (a factorisation of
    # a matrix the predicate ruled out) is no contract violation, so it is not reported.
    with grad_mode.no_grad():
        copies = _rebuild(operands, iter([t.detach().clone() for t in inputs]))
        try:
            other_out = other(*copies)
        except Exception:
            other_out = None
    if other_out is not None:
        _same_metadata(out, other_out, "When merging two branches' output in torch.cond",
                       "torch.cond")
    return out


def _rebuild(tree, leaves):
    if isinstance(tree, (list, tuple)):
        return type(tree)(_rebuild(item, leaves) for item in tree)
    if isinstance(tree, dict):
        return {key: _rebuild(tree[key], leaves) for key in tree}
    return next(leaves)


def while_loop(cond_fn, body_fn, carried_inputs):
    """``val = carried_inputs; while cond_fn(*val): val = body_fn(*val); return val``.

    ``carried_inputs`` is a tuple or list whose (nested dict/list/tuple) leaves are tensors or
    ints; ``cond_fn`` returns a bool or a 0-dim bool tensor; ``body_fn`` returns as many values
    as it takes, with the same shapes and dtypes, none of them an input (RuntimeError, as
    PyTorch).  With no iteration the result is a tuple of copies of the carried inputs.  Each
    iteration's ops are recorded, so gradients flow through the loop body.
    """
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"carried_inputs must be a tuple or list but got "
                           f"{type(carried_inputs)}")
    leaves = _leaves(carried_inputs)
    bad = [type(v) for v in leaves if not isinstance(v, (Tensor, int)) or isinstance(v, bool)]
    if bad:
        raise AssertionError(
            f"{list(leaves)} can only be of (<class 'torch.Tensor'>, <class 'int'>, "
            f"<class 'torch.SymInt'>) but got {tuple(type(v) for v in leaves)}")

    def keep_going(vals) -> bool:
        flag = cond_fn(*vals)
        if isinstance(flag, bool):
            return flag
        if isinstance(flag, Tensor) and flag.dim() == 0 and str(flag.dtype) == "torch.bool":
            return bool(flag.item())
        shape = tuple(flag.shape) if isinstance(flag, Tensor) else type(flag).__name__
        raise RuntimeError("torch.while_loop: unsupported cond_fn return type: expected cond_fn "
                           f"to return a scalar tensor or a bool but got {shape}")

    vals = carried_inputs
    if not keep_going(vals):
        return tuple(v.clone() if isinstance(v, Tensor) else v for v in carried_inputs)
    while True:
        inputs = _leaves(vals)
        tensors = [t for t in inputs if isinstance(t, Tensor)]
        versions = [t._version for t in tensors]
        out = body_fn(*vals)
        if grad_mode.is_grad_enabled():
            _check_no_mutation(tensors, versions, "torch.while_loop")
        _check_no_alias(_leaves(out), tensors, "torch.while_loop")
        _same_metadata(out, leaves, "Expected body_fn_output and carried_inputs to have "
                       "same metadata but found", "torch.while_loop")
        vals = out if isinstance(out, (tuple, list)) else (out,)
        if not keep_going(vals):
            return out
