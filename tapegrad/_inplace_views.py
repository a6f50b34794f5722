"""In-place shape changes: ``unsqueeze_``, ``squeeze_``, ``t_``, ``transpose_``, ``swapaxes_``,
``swapdims_`` (issue 15: tutorials batch an image with ``img.unsqueeze_(0)``).

Each makes the tensor itself take the shape of the matching view op's result, sharing its
storage, and returns the tensor.  The view op does the argument checks, so errors are its
(PyTorch's) errors.  Where autograd records it (the tensor requires grad, grad mode on), the view
op is recorded on the tensor's history and the tensor becomes its output (the core's
_inplace_view, which also applies PyTorch's in-place refusals: a leaf that requires grad, a view
of one, a view taken in no_grad or an output of split/chunk/unbind); otherwise the tensor simply
takes the view's layout.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import numpy as np

from . import _core
from ._class_members import has_member

def _restride(self, op: str, view: str, *args):
    fn = getattr(type(self), view)
    if self.requires_grad and _core.is_grad_enabled():
        return _core._inplace_view(self, fn, args)
    # `data =` swaps the array (a view of the same storage) and keeps the tensor's identity,
    # its requires_grad flag and its version counter.
    self.data = fn(self, *args)
    _core._mark_written(self)
    return self


def unsqueeze_(self, dim):
    """Insert a dimension of size one at ``dim``, in place (as ``unsqueeze``); returns self."""
    return _restride(self, "unsqueeze_", "unsqueeze", dim)


def squeeze_(self, dim=None):
    """Remove dimensions of size one (all, or those in ``dim``), in place; returns self."""
    args = () if dim is None else (dim,)
    return _restride(self, "squeeze_", "squeeze", *args)


def t_(self):
    """Transpose a tensor of at most 2 dims in place (as ``t``); returns self."""
    if self.ndim > 2:   # (the message names t_, not t)
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return _restride(self, "t_", "t")


def transpose_(self, dim0, dim1):
    """Swap dims ``dim0`` and ``dim1`` in place (as ``transpose``); returns self."""
    return _restride(self, "transpose_", "transpose", dim0, dim1)


def swapaxes_(self, axis0, axis1):
    """Alias of :meth:`transpose_` (numpy's name)."""
    return _restride(self, "swapaxes_", "transpose", axis0, axis1)


def swapdims_(self, dim0, dim1):
    """Alias of :meth:`transpose_`."""
    return _restride(self, "swapdims_", "transpose", dim0, dim1)


def as_strided_(self, size, stride, storage_offset=None):
    """Take the layout ``as_strided(size, stride, storage_offset)`` in place; returns self."""
    return _restride(self, "as_strided_", "as_strided", size, stride, storage_offset)


def _storage_array(self, source, storage_offset, size, stride) -> np.ndarray:
    """The array set_(storage, storage_offset, size, stride) gives self: the storage's bytes
    read as self's dtype, laid out as asked (default: all of it, contiguous)."""
    from . import storage as storages
    from ._strided import check_storage_bounds
    np_dtype = self._array.dtype
    if isinstance(source, storages.TypedStorage):
        if np.dtype(source.dtype.np_dtype) != np_dtype:
            raise RuntimeError(f"Expected a Storage of type {self.dtype} or an UntypedStorage, "
                               f"but got type {source.dtype} for argument 1 'storage'")
        source = source.untyped()
    raw = source._bytes
    flat = raw[:raw.size - raw.size % np_dtype.itemsize].view(np_dtype)
    offset = int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if size is None:
        size = (flat.size - offset,)
    size = [int(n) for n in size]
    if stride is None:
        stride, step = [], 1
        for n in reversed(size):
            stride.insert(0, step)
            step *= max(n, 1)
    stride = [int(k) for k in stride]
    check_storage_bounds(size, stride, offset, np_dtype.itemsize, flat.size)
    numel = int(np.prod(size, dtype=np.int64))
    # (an ndarray over the storage's own buffer, not stride_tricks: its base chain leads back to
    # the storage, which is how storage_offset() and data_ptr() find where it starts)
    return np.ndarray(tuple(size), np_dtype, buffer=flat,
                      offset=offset * np_dtype.itemsize if numel else 0,
                      strides=tuple(k * np_dtype.itemsize for k in stride))


def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Make self view `source`'s memory: a tensor (its storage, offset, sizes and strides, or,
    given `size`, its storage at its own offset plus `storage_offset` with `size` and `stride`), a
    storage (with `storage_offset`, `size`, `stride`: default all of it, contiguous), or nothing
    (an empty tensor).  Not differentiable: a tensor that requires grad is refused."""
    from . import storage as storages
    given = [source] + ([storage_offset] if size is not None or storage_offset != 0 else [])
    if not (source is None or isinstance(source, (_core.TensorBase, storages.UntypedStorage,
                                                  storages.TypedStorage))) or (
            size is None and storage_offset != 0):
        # (an offset only comes with a size: PyTorch has no (source, storage_offset) overload)
        raise TypeError(f"set_() received an invalid combination of arguments - got "
                        f"({', '.join(_type_name(a) for a in given)}), but expected one of: (), "
                        "(Storage source), (Storage source, int storage_offset, tuple of ints "
                        "size, tuple of ints stride), (Tensor source), (Tensor source, int "
                        "storage_offset, tuple of ints size, tuple of ints stride)")
    if _core.is_grad_enabled() and (self.requires_grad or (
            isinstance(source, _core.TensorBase) and source.requires_grad)):
        if self.requires_grad and self.is_leaf:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        raise RuntimeError("the derivative for 'set_' is not implemented (PyTorch's graph "
                           "fails on it in backward); call set_ on a detached tensor or under "
                           "no_grad")
    if isinstance(source, _core.TensorBase):
        if source._array.dtype != self._array.dtype:
            raise RuntimeError(f"Could not set tensor of type "
                               f"{_core.c_type_name_of(source._array.dtype)} to a tensor of "
                               f"type {_core.c_type_name_of(self._array.dtype)}")
        if size is None:
            arr = source._array
        else:   # PyTorch counts the offset from the source's own first element
            arr = _storage_array(self, source.untyped_storage(),
                                 source.storage_offset() + int(storage_offset), size, stride)
    elif source is None:
        arr = np.empty((0,), dtype=self._array.dtype)
    else:
        arr = _storage_array(self, source, storage_offset, size, stride)
    _core._mark_written(self)
    # (self keeps its own version counter, as in PyTorch: set_ shares the memory, not the
    # counter)
    self._array = arr
    return self


def ndimension(self) -> int:
    """The number of dimensions (an old alias of ``dim()``)."""
    return self.ndim


METHODS = {"unsqueeze_": unsqueeze_, "squeeze_": squeeze_, "t_": t_, "transpose_": transpose_,
           "swapaxes_": swapaxes_, "swapdims_": swapdims_, "as_strided_": as_strided_,
           "set_": set_, "ndimension": ndimension}


def register(tensor_cls) -> None:
    """Add the methods to `tensor_cls`; existing (compiled) ones win."""
    for name, method in METHODS.items():
        if not has_member(tensor_cls, name):
            setattr(tensor_cls, name, method)
