"""torch.nested: nested tensors, batches of tensors whose sizes differ in some dims.

Two layouts, as in PyTorch: ``torch.strided`` (any dims may differ; PyTorch's prototype, few ops)
and ``torch.jagged`` (one ragged dim; values packed along it plus offsets; most elementwise and
regular-dim ops, attention).  The object is _tensor.NestedTensor, its ops _ops.py; here are the
constructors and conversions PyTorch's torch.nested exports.
"""
from __future__ import annotations as _annotations


import numpy as np

from .. import _core
from .._layout import jagged, strided
from ..tensor import Tensor
from ._ops import to_padded_tensor
from ._tensor import NestedTensor

__all__ = ["nested_tensor", "as_nested_tensor", "nested_tensor_from_jagged", "to_padded_tensor",
           "narrow", "masked_select"]

_T = _core.TORCH_FUNCTIONS

_PROTOTYPE_WARNING = (
    "The PyTorch API of nested tensors is in prototype stage and will change in the near future. "
    "We recommend specifying layout=torch.jagged when constructing a nested tensor, as this "
    "layout receives active development, has better operator coverage, and works with "
    "torch.compile.")


def _warn_prototype() -> None:
    """PyTorch's TORCH_WARN_ONCE for a strided nested tensor: once per process (the core's
    once-per-process warnings, naming the user's line)."""
    _core.warn_once(_PROTOTYPE_WARNING, "aten/src/ATen/NestedTensorImpl.cpp:177")


def _as_tensors(tensor_list, dtype, detach: bool) -> list:
    from ..creation import as_tensor, tensor
    parts = []
    for item in tensor_list:
        if isinstance(item, Tensor):
            part = item.detach() if detach else item
            part = part.to(dtype) if dtype is not None else part
        else:
            part = tensor(item, dtype=dtype) if detach else as_tensor(item, dtype=dtype)
        parts.append(part)
    for i, part in enumerate(parts):
        if part.dim() != parts[0].dim():
            raise RuntimeError(f"All Tensors given to nested_tensor must have the same dimension. "
                               f"Found dimension {part.dim()} for Tensor at index {i} and "
                               f"dimension {parts[0].dim()} for Tensor at index 0.")
    if parts and parts[0].dim() == 0:
        raise RuntimeError("nested_tensor(): the components must have at least one dimension")
    return parts


def _offsets_of(lengths):
    from ..creation import tensor
    return tensor(np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64))


def _pack(parts, layout, dtype):
    """A nested tensor of `layout` over `parts` (on the graph: their gradients reach them)."""
    if layout is strided:
        if not parts:
            from ..creation import empty
            return NestedTensor.strided_from_buffer(empty(0, dtype=dtype), [])
        buffer = _T["cat"]([p.reshape(-1) for p in parts])
        return NestedTensor.strided_from_buffer(buffer, [tuple(p.shape) for p in parts])
    if layout is not jagged:
        raise RuntimeError(f"Specified layout is unsupported for nested tensors: {layout}")
    shapes = [tuple(p.shape) for p in parts]
    differing = [d for d in range(len(shapes[0])) if len({s[d] for s in shapes}) > 1] \
        if shapes else []
    if len(differing) > 1:
        raise RuntimeError("Cannot represent given tensor list as a nested tensor with the jagged "
                           "layout. Note that the jagged layout only allows for a single ragged "
                           "dimension. For example: (B, *, D_0, D_1, ..., D_N), with ragged * "
                           "dim.")
    axis = differing[0] if differing else 0
    values = _T["cat"](list(parts), axis)
    lengths = [s[axis] for s in shapes]
    return NestedTensor.jagged_from_values(values, _offsets_of(lengths), axis + 1,
                                           max_seqlen=max(lengths))


def nested_tensor(tensor_list, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """A nested tensor (a leaf, no autograd history) of copies of the tensors in `tensor_list`.

    layout: torch.strided (default, PyTorch's prototype: it warns once) or torch.jagged (one
    ragged dim)."""
    if isinstance(tensor_list, Tensor) or not isinstance(tensor_list, (list, tuple)):
        raise TypeError("nested_tensor(): argument 'tensor_list' must be a list of tensors")
    layout = strided if layout is None else layout
    if layout is strided:
        _warn_prototype()
    parts = _as_tensors(tensor_list, dtype, detach=True)
    if layout is jagged and not parts:
        raise RuntimeError("Cannot construct a nested tensor from an empty tensor list")
    made = _pack(parts, layout, dtype)
    made._values = made._values.detach()
    if requires_grad:
        made.requires_grad_(True)
    return made


def as_nested_tensor(ts, dtype=None, device=None, layout=None):
    """A nested tensor of `ts` (a list of tensors, or a tensor whose first dim is the batch)
    that keeps their autograd history; a nested tensor of the same layout is returned as it is
    (converted to `dtype`)."""
    is_list = isinstance(ts, (list, tuple)) and all(isinstance(t, Tensor) for t in ts)
    if not isinstance(ts, (Tensor, NestedTensor)) and not is_list:
        raise TypeError("as_nested_tensor(): Expected first argument to be a tensor or a list / "
                        "tuple of tensors ")
    if isinstance(ts, NestedTensor):
        if layout is ts.layout:
            return ts if dtype is None else ts.to(dtype)
        raise RuntimeError("as_nested_tensor(): Converting between nested tensor layouts is not "
                           "supported")
    if isinstance(ts, Tensor) and ts.dim() < 2:
        raise RuntimeError("as_nested_tensor(): Expected tensor argument to have dim() > 1")
    layout = strided if layout is None else layout
    if layout is strided and not isinstance(ts, Tensor):
        _warn_prototype()
    parts = list(ts.unbind(0)) if isinstance(ts, Tensor) else _as_tensors(ts, dtype, False)
    if dtype is not None:
        parts = [p.to(dtype) for p in parts]
    return _pack(parts, layout, dtype)


def nested_tensor_from_jagged(values, offsets=None, lengths=None, jagged_dim=None,
                              min_seqlen=None, max_seqlen=None):
    """A jagged nested tensor viewing `values` (its packed dim first), component i being
    ``values[offsets[i]:offsets[i+1]]`` (or ``lengths[i]`` long from ``offsets[i]``).  A view:
    gradients reach `values` (PyTorch's NestedViewFromJaggedBackward0)."""
    if offsets is None:
        if lengths is None:
            raise RuntimeError("nested_tensor_from_jagged(): At least one of offsets or lengths "
                               "is required.")
        offsets, lengths = _offsets_of(lengths._array), None
    jagged_dim = 1 if jagged_dim is None else jagged_dim
    if jagged_dim < 1:
        raise ValueError("Expected jagged_dim >=1")
    if values.dim() < jagged_dim:
        raise ValueError("Expected values to have at least jagged_dim dims")
    view = values.view(values.shape)
    if values.requires_grad:
        view = _core._name_grad_fn(view, "NestedViewFromJaggedBackward0")
    return NestedTensor.jagged_from_values(view, offsets, jagged_dim, lengths,
                                           max_seqlen=max_seqlen)


def narrow(tensor, dim, start, length, layout=strided):
    """A nested tensor of `tensor`'s rows, row i narrowed along `dim` to ``start[i]`` ...
    ``start[i] + length[i]`` (start and length: ints or tensors of one entry per row).  The
    jagged layout gives a view of the tensor with holes (offsets and lengths); the strided
    layout supports dim=0 only, as PyTorch."""
    if isinstance(tensor, NestedTensor):      # (PyTorch narrows it as Tensor.narrow does)
        return tensor.narrow(dim, start, length)
    if not isinstance(tensor, Tensor):
        raise TypeError("narrow(): expected a tensor to narrow")
    if layout is strided:
        if dim != 0:
            raise RuntimeError(f"narrow(): only dim=0 supported for nested tensors, but got: "
                               f"{dim}")
        _warn_prototype()
        return _pack(list(tensor.narrow(0, int(start), int(length)).unbind(0)), strided, None)
    if layout is not jagged:
        raise RuntimeError(f"narrow(): layout {layout} is not supported")
    if dim != 1:
        raise RuntimeError("jagged layout only supports dim=1")
    from ..creation import tensor as make
    batch = tensor.shape[0]
    starts = np.broadcast_to(np.asarray(start._array if isinstance(start, Tensor) else start,
                                        dtype=np.int64), (batch,))
    lengths = np.broadcast_to(np.asarray(length._array if isinstance(length, Tensor) else length,
                                         dtype=np.int64), (batch,))
    row = tensor.shape[1]
    offsets = np.concatenate([np.arange(batch, dtype=np.int64) * row + starts,
                              [batch * row]]).astype(np.int64)
    if batch:
        offsets[-1] = offsets[-2] + lengths[-1]
    values = tensor.flatten(0, 1) if tensor.dim() > 1 else tensor
    return NestedTensor.jagged_from_values(values, make(offsets), 1,
                                           make(np.array(lengths, dtype=np.int64)))


def masked_select(tensor, mask):
    """A jagged nested tensor of shape (B, j): row i holds the elements of ``tensor[i]`` where
    ``mask[i]`` is True (differentiable in `tensor`)."""
    if not isinstance(tensor, Tensor) or not isinstance(mask, Tensor):
        raise TypeError("masked_select(): expected tensor and mask to be tensors")
    if mask.dtype.name != "bool":
        raise RuntimeError("masked_select(): mask must be a bool tensor")
    mask = mask.expand(tensor.shape) if tuple(mask.shape) != tuple(tensor.shape) else mask
    batch = tensor.shape[0]
    counts = mask._array.reshape(batch, -1).sum(axis=1)
    values = _T["masked_select"](tensor, mask)
    return NestedTensor.jagged_from_values(values, _offsets_of(counts), 1)
