"""torch.nn.utils._per_sample_grad.call_for_per_sample_grads: a module's forward whose backward
fills each trainable parameter's ``grad_sample`` (one gradient per sample of the batch) instead
of its ``grad``.  The parameters are passed to the module as ExpandedWeights (see
_expanded_weights), which the layer functions handle."""
from __future__ import annotations as _annotations

import functools

from ...tensor import Tensor
from ...utils import _pytree
from ..modules.module import Module
from ._expanded_weights import ExpandedWeight

__all__ = ["call_for_per_sample_grads"]


def call_for_per_sample_grads(module, *, batch_size=None, loss_reduction="sum",
                              batch_first=True):
    """``module``'s forward as a function that, on backward, sets ``p.grad_sample`` (shape
    (batch, *p.shape)) for every parameter p that requires grad, leaving ``p.grad`` alone.

    batch_size: the batch size; None takes it from the tensor arguments, which must agree (their
    first dim, the second when ``batch_first`` is False).  loss_reduction: "sum", or "mean" when
    the loss averages over the batch (the per-sample gradients are then scaled by the batch
    size).  Only Linear, Conv1d/2d/3d, Embedding, LayerNorm, GroupNorm and InstanceNorm layers
    are supported; another function given a parameter raises."""
    if loss_reduction not in ("sum", "mean"):
        raise RuntimeError(f"Expected loss_reduction argument to be sum or mean, got "
                           f"{loss_reduction}")
    if not isinstance(module, Module):
        raise RuntimeError(f"Module passed must be nn.Module, got {type(module).__name__}")
    if not (batch_size is None or isinstance(batch_size, int)):
        raise RuntimeError(f"Batch size passed must be None or an integer, got "
                           f"{type(batch_size).__name__}")
    if batch_size is not None and batch_size < 1:
        raise RuntimeError(f"Batch size must be positive, got {batch_size}")
    for weight in module.parameters():
        if getattr(weight, "grad_sample", None) is not None:
            raise RuntimeError(
                "Current Expanded Weights accumulates the gradients, which will be incorrect for "
                f"multiple calls without clearing gradients. Please clear out the grad_sample "
                f"parameter of {weight} or post an issue to pytorch/pytorch to prioritize "
                "correct behavior")

    def inferred_batch_size(args, kwargs) -> int:
        found = None
        for leaf in _pytree.tree_leaves((args, kwargs)):
            if not isinstance(leaf, Tensor):
                continue
            size = leaf.shape[0] if batch_first else leaf.shape[1]
            if found is not None and found != size:
                raise RuntimeError(
                    f"When computing batch size, found at least one input with batch size "
                    f"{found} and one with batch size {size}. Please specify it explicitly "
                    "using the batch size kwarg in call_for_per_sample_grads")
            found = size
        if found is None:
            raise RuntimeError(
                "Unable to find a tensor in the passed args and kwargs. They may not be "
                "pytree-able and so ExpandedWeights cannot compute the batch size from the "
                "inputs. Please specify it explicitly")
        return found

    @functools.wraps(module.forward)
    def wrapper(*args, **kwargs):
        from ...func import functional_call
        size = batch_size if batch_size is not None else inferred_batch_size(args, kwargs)
        params = {name: (ExpandedWeight(p, size, loss_reduction) if p.requires_grad else p)
                  for name, p in module.named_parameters()}
        return functional_call(module, params, args, kwargs)

    return wrapper
