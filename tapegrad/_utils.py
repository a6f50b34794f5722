"""The helpers of torch._utils that public scripts import by name (fastai v1's and apex's mixed
precision, DDP-style gradient bucketing): one flat buffer from a list of tensors, and views of a
flat buffer shaped as a list of tensors; and the rebuild functions a checkpoint names
(_rebuild_tensor_v2, _rebuild_parameter, ...: torch.load's own, from _torch_checkpoint.py).  Both record on the graph as PyTorch's do (a cat of
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


# The rebuild functions torch.load resolves a checkpoint's torch._utils globals to; imported on
# first use (_torch_checkpoint imports the serialization machinery).
_REBUILD_FUNCTIONS = ("_rebuild_tensor_v2", "_rebuild_tensor_v3", "_rebuild_parameter",
                      "_rebuild_parameter_with_state", "_rebuild_qtensor")


def __getattr__(name):
    if name in _REBUILD_FUNCTIONS:
        from . import _torch_checkpoint
        return getattr(_torch_checkpoint, name)
    raise AttributeError(f"module 'torch._utils' has no attribute '{name}'")
