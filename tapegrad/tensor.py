"""tapegrad.Tensor: the Python facade over the compiled TensorBase.

Everything on the per-op path (arithmetic, recording, backward) is compiled in TensorBase; this
class adds the conveniences PyTorch users expect: shape and size queries, conversions, repr.
"""
from __future__ import annotations

import numpy as np

from . import _core
from ._format import tensor_repr


class Size(tuple):
    """A tensor's shape: a tuple that prints as PyTorch prints it."""

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    __str__ = __repr__

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n


class Tensor(_core.TensorBase):
    """A multi-dimensional array that records the operations applied to it for autograd."""

    __module__ = "tapegrad"
    # numpy scalars and arrays on the left defer to our reflected operators (as for torch.Tensor).
    __array_priority__ = 1000

    # -- shape --------------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._array.shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return Size(self._array.shape)
        return self._array.shape[_core.normalize_dim(dim, self._array.ndim)]

    def dim(self) -> int:
        return self._array.ndim

    def numel(self) -> int:
        return self._array.size

    def __len__(self) -> int:
        if self._array.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._array.shape[0]

    def __iter__(self):
        if self._array.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._array.shape[0]))

    # -- conversions ----------------------------------------------------------------------------
    def item(self):
        if self._array.size != 1:
            raise RuntimeError(f"a Tensor with {self._array.size} elements cannot be converted to Scalar")
        value = self._array.reshape(()).item()
        _core._capture_read(self, "item", value)
        return value

    def tolist(self):
        value = self._array.tolist()
        _core._capture_read(self, "tolist", value)
        return value

    def numpy(self) -> np.ndarray:
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        _core._capture_read(self, "numpy", None)
        return self._array

    def __array__(self, dtype=None, copy=None):
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        _core._capture_read(self, "numpy", None)
        return self._array if dtype is None else self._array.astype(dtype)

    def __bool__(self) -> bool:
        if self._array.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous")
        value = bool(self._array.reshape(()).item())
        _core._capture_read(self, "bool", value)
        return value

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._array.dtype.kind not in "iub" or self._array.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return tensor_repr(self)

    __str__ = __repr__

    # -- ops as methods -------------------------------------------------------------------------
    def exp(self):
        return _core.exp(self)

    def log(self):
        return _core.log(self)

    def tanh(self):
        return _core.tanh(self)

    def relu(self):
        return _core.relu(self)

    def neg(self):
        return _core.neg(self)

    def add(self, other):
        return _core.add(self, other)

    def sub(self, other):
        return _core.sub(self, other)

    def mul(self, other):
        return _core.mul(self, other)

    def div(self, other):
        return _core.div(self, other)

    def pow(self, exponent):
        return _core.pow(self, exponent)

    def sum(self, dim=None, keepdim=False, *, dtype=None):
        return _core.sum(self, dim, keepdim, dtype=dtype)

    def mean(self, dim=None, keepdim=False, *, dtype=None):
        return _core.mean(self, dim, keepdim, dtype=dtype)

    def argmax(self, dim=None, keepdim=False):
        return _core.argmax(self, dim, keepdim)


# Methods the compiled op families register (each is a binding function: `t.op(...)` passes t).
for _name, _fn in _core.TENSOR_METHODS.items():
    if _name not in Tensor.__dict__:
        setattr(Tensor, _name, _fn)

_core._set_tensor_class(Tensor)
