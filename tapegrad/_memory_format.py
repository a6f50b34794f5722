"""torch.memory_format and its values (contiguous_format, channels_last, channels_last_3d,
preserve_format), honoured where PyTorch takes memory_format=: Tensor.contiguous,
Tensor.is_contiguous, Tensor.clone and Tensor.to.

channels_last is a real strided layout, not a flag: tapegrad tensors are numpy arrays with
strides, so an (N, C, H, W) tensor in channels_last is the (N, H, W, C) C-order array viewed
through permute(0, 3, 1, 2), with strides (H W C, 1, W C, C) as PyTorch's.  Elementwise ops keep
that layout (numpy computes in the inputs' memory order) and clone preserves it.  The conversion
is a recorded permute-contiguous-permute, so gradients flow through it.

The factories that take memory_format= (empty and the *_like family) allocate in the layout it
names, through array_order: a script that prints .stride() or .dim_order() of such a tensor, or
calls .view() on it, sees PyTorch's answer.
"""
from __future__ import annotations as _annotations

import numpy as np

from ._torch_names import TorchNamedClass

from tapegrad._core import type_name as _type_name
from . import _core
from ._uninitialised import uninitialised

TensorBase = _core.TensorBase


class memory_format(metaclass=TorchNamedClass):  # noqa: N801  (PyTorch's name)
    """A memory layout a tensor can be asked for (torch.memory_format); its values are the
    module constants contiguous_format, channels_last, channels_last_3d, preserve_format."""
    _c_type_name = "torch.memory_format"  # (its name in PyTorch's messages)

    __module__ = "tapegrad"

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return f"torch.{self._name}"

    def __reduce__(self):
        return self._name        # pickled by name: the module constant


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
legacy_contiguous_format = contiguous_format     # PyTorch's alias

# (rank, the dims from innermost to outermost) of each channels-last layout
_CHANNELS_LAST = {id(channels_last): (4, (1, 3, 2, 0), "channels_last"),
                  id(channels_last_3d): (5, (1, 4, 3, 2, 0), "channels_last_3d")}


def check_memory_format(value, fn: str):
    """value, or contiguous_format for None; a TypeError naming fn for anything else."""
    if value is None:
        return contiguous_format
    if not isinstance(value, memory_format):
        raise TypeError(f"{fn}(): argument 'memory_format' must be torch.memory_format, not "
                        f"{_type_name(value)}")
    return value


def array_order(fmt, shape: tuple, fn: str):
    """The order, outermost dim first, in which a factory lays out a new array of `shape` that
    memory_format=fmt asks for, or None for row-major; PyTorch's RuntimeError for a channels-last
    format of another rank.  (preserve_format is the caller's: it depends on an input.)"""
    fmt = check_memory_format(fmt, fn)
    layout = _CHANNELS_LAST.get(id(fmt))
    if layout is None:
        return None
    rank, inner_to_outer, name = layout
    if len(shape) != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {name} format")
    return tuple(reversed(inner_to_outer))


def empty_array(shape: tuple, dtype, fmt, fn: str) -> np.ndarray:
    """An uninitialised array of `shape` in the layout memory_format=fmt names."""
    order = array_order(fmt, shape, fn)
    if order is None:
        return uninitialised(shape, dtype)
    back = tuple(order.index(d) for d in range(len(shape)))
    return uninitialised(tuple(shape[d] for d in order), dtype).transpose(back)


def _is_channels_last(t, layout) -> bool:
    rank, inner_to_outer, _ = layout
    if t.dim() != rank:
        return False
    shape, strides = tuple(t.shape), t.stride()
    expected = 1
    for d in inner_to_outer:         # dims of size 1 may have any stride, as in PyTorch
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def _to_channels_last(t, layout):
    """t itself if it reads as the layout (Tensor.contiguous: size-1 dims' strides free), else
    a channels-last copy."""
    _check_rank(t, layout)
    if _is_channels_last(t, layout):
        return t
    return _copy_channels_last(t, layout)


def _check_rank(t, layout) -> None:
    rank, _, name = layout
    if t.dim() != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {name} format")


def _dense_strides(shape: tuple, inner_to_outer: tuple) -> tuple:
    """The strides a new tensor of `shape` allocated in the layout has, size-1 dims included:
    PyTorch's empty(..., memory_format=) gives a (2, 8, 1, 1) channels_last tensor strides
    (8, 1, 8, 8), not (8, 1, 1, 1)."""
    strides = [0] * len(shape)
    step = 1
    for d in inner_to_outer:
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def _copy_channels_last(t, layout):
    """t with the layout's dense strides, through recorded ops."""
    order = tuple(reversed(layout[1]))                # outermost first: (0, 2, 3, 1) for 2-D
    back = tuple(order.index(d) for d in range(layout[0]))
    rows = t.permute(*order).contiguous()
    if rows.stride() != _dense_strides(tuple(rows.shape), tuple(reversed(range(layout[0])))):
        # numpy counts an array whose only odd strides are on size-1 dims as contiguous, so
        # contiguous() kept them; a clone of a contiguous array is allocated afresh
        rows = rows.clone()
    return rows.permute(*back)


def _fresh_channels_last(t, layout):
    """t laid out as a newly allocated channels-last tensor, as PyTorch's results of clone,
    to and the kernels that allocate by the input's format: t if its strides are already those,
    else a copy."""
    if t.stride() == _dense_strides(tuple(t.shape), layout[1]):
        return t
    return _copy_channels_last(t, layout)


def suggested_channels_last(t):
    """The channels-last format PyTorch's ``t.suggest_memory_format()`` names for a 4-D or 5-D
    tensor (channels_last, channels_last_3d), or None for row-major: the strides order the dims
    channels innermost, then width, height (depth), batch (size-1 dims free), and a layout that
    also reads as row-major (N111, NC11 with C's stride equal to N's) falls back to row-major."""
    for fmt in (channels_last, channels_last_3d):
        rank, inner_to_outer, _ = _CHANNELS_LAST[id(fmt)]
        if t.dim() != rank:
            continue
        shape, strides = tuple(t.shape), t.stride()
        if strides[1] == 0:
            return None
        lowest = 0
        for d in inner_to_outer:
            if shape[d] == 0 or strides[d] < lowest:
                return None
            if d == 0 and lowest == strides[1]:
                return None
            lowest = strides[d] * (shape[d] if shape[d] > 1 else 1)
        return fmt
    return None


def follow_channels_last(out, *sources):
    """`out` in the channels-last layout any source of its rank suggests, as PyTorch allocates
    the results of convolution (input or weight), pooling, interpolation, padding and the batch
    and group norms on the CPU; the values are the same, but a later ``.view()`` succeeds or
    fails by this layout."""
    for s in sources:
        # (a row-major source never suggests channels-last: the common case costs a check or two)
        # (numpy calls an (N, C, 1, 1) array with channels-last strides C-contiguous too)
        if (s is not None and s.dim() == out.dim()
                and (not s._array.flags.c_contiguous or 1 in s._array.shape[2:])):
            fmt = suggested_channels_last(s)
            if fmt is not None:
                return _fresh_channels_last(out, _CHANNELS_LAST[id(fmt)])
    return out


def install(tensor_cls) -> None:
    """Give the core's Tensor.contiguous / is_contiguous the layouts other than row-major (the
    default format stays on the compiled path, with no Python call)."""
    core_is_contiguous = tensor_cls.is_contiguous

    def contiguous(self, memory_format):
        fmt = check_memory_format(memory_format, "contiguous")
        if fmt is preserve_format:       # PyTorch: only a no-op is allowed
            if core_is_contiguous(self):
                return self
            raise RuntimeError("preserve memory format is unsupported by the contiguous "
                               "operator")
        laid_out = _to_channels_last(self, _CHANNELS_LAST[id(fmt)])
        # (PyTorch's contiguous is a clone into the format)
        return laid_out if laid_out is self else _core._name_grad_fn(laid_out, "CloneBackward0")

    def is_contiguous(self, memory_format):
        fmt = check_memory_format(memory_format, "is_contiguous")
        if fmt is preserve_format:       # PyTorch answers as for contiguous_format
            return core_is_contiguous(self)
        return _is_channels_last(self, _CHANNELS_LAST[id(fmt)])

    def clone(self, memory_format):
        fmt = check_memory_format(memory_format, "clone")
        if fmt is contiguous_format:     # one recorded copy either way
            return self.clone() if core_is_contiguous(self) else self.contiguous()
        layout = _CHANNELS_LAST[id(fmt)]
        _check_rank(self, layout)
        laid_out = _fresh_channels_last(self, layout)
        return self.clone() if laid_out is self else _core._name_grad_fn(laid_out,
                                                                         "CloneBackward0")

    _core._set_memory_format_layouts(contiguous_format, contiguous, is_contiguous,
                                     preserve_format, clone)


def apply_to_result(result, value):
    """Tensor.to's memory_format=: the converted tensor in that layout (preserve keeps it)."""
    fmt = check_memory_format(value, "to")
    if fmt is preserve_format:
        return result
    layout = _CHANNELS_LAST.get(id(fmt))
    # PyTorch's to() keeps the tensor only when its suggested format is the one asked for, and
    # otherwise copies into a new tensor (a (2, 8, 1, 1) row-major one reads as both)
    if layout is None or suggested_channels_last(result) is fmt:
        return result.contiguous(memory_format=fmt)
    _check_rank(result, layout)
    return _core._name_grad_fn(_copy_channels_last(result, layout), "ToCopyBackward0")


def register(namespace: dict, tensor_cls) -> None:
    """Add torch.memory_format and its constants; install the memory_format-aware methods."""
    for name in ("memory_format", "contiguous_format", "channels_last", "channels_last_3d",
                 "preserve_format", "legacy_contiguous_format"):
        namespace.setdefault(name, globals()[name])
    install(tensor_cls)
