"""The helpers of torch._utils that public scripts import by name (fastai v1's and apex's mixed
precision, DDP-style gradient bucketing): one flat buffer from a list of tensors, and views of a
flat buffer shaped as a list of tensors.  Both record on the graph as PyTorch's do (a cat of
flattened views; narrow-then-view of the buffer)."""
from __future__ import annotations as _annotations

from . import cat

__all__: list[str] = []


def _flatten_dense_tensors(tensors):
    """The tensors' elements, each tensor in row-major order, one after another in a new 1-D
    tensor (a single tensor: a view of it when it is contiguous, as PyTorch's)."""
    if len(tensors) == 1:
        return tensors[0].contiguous().view(-1)
    return cat([t.contiguous().view(-1) for t in tensors])


def _unflatten_dense_tensors(flat, tensors):
    """Views of the 1-D `flat`, consecutive, shaped as each of `tensors` (a tuple)."""
    outputs = []
    offset = 0
    for t in tensors:
        numel = t.numel()
        outputs.append(flat.narrow(0, offset, numel).view_as(t))
        offset += numel
    return tuple(outputs)
