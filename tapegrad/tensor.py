"""tapegrad.Tensor: the Python facade over the compiled TensorBase.

Everything on the per-op path (arithmetic, recording, backward) is compiled in TensorBase; this
class adds the conveniences PyTorch users expect: shape and size queries, conversions, repr.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import _core, _dlpack
from ._format import tensor_repr


_NUMPY_REQUIRES_GRAD = ("Can't call numpy() on Tensor that requires grad. "
                        "Use tensor.detach().numpy() instead.")


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

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The tensor's values as an ndarray sharing its memory.  force=True detaches first, so it
        also works on a tensor that requires grad (on a CPU-only build that needs no copy)."""
        if self.requires_grad and not force:
            raise RuntimeError(_NUMPY_REQUIRES_GRAD)
        _core._capture_read(self, "numpy", None)
        return self._array

    def __array__(self, dtype=None, copy=None):
        # numpy 2's protocol: copy=None shares when it can (np.asarray), copy=True must return a
        # fresh array (np.array), copy=False must share or raise.
        if self.requires_grad:
            raise RuntimeError(_NUMPY_REQUIRES_GRAD)
        _core._capture_read(self, "numpy", None)
        arr = self._array
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError(f"Unable to avoid copy while creating an array as requested: "
                                 f"the tensor's dtype {self.dtype} differs from {np.dtype(dtype)}")
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return _dlpack.export_tensor(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        return _dlpack.CPU_DEVICE

    # Python scalars.  PyTorch raises ValueError for a size mismatch here, RuntimeError in item().
    def _scalar(self):
        if self._array.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __bool__(self) -> bool:
        if self._array.size != 1:
            amount = "no values" if self._array.size == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {amount} is ambiguous")
        value = bool(self._array.reshape(()).item())
        _core._capture_read(self, "bool", value)
        return value

    def __float__(self) -> float:
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def __complex__(self) -> complex:
        return complex(self._scalar())

    def __index__(self) -> int:
        if self._array.dtype.kind not in "iub" or self._array.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __format__(self, format_spec: str) -> str:
        # A 0-d tensor formats as its Python scalar (f"{loss:.4f}"); any other tensor, and any
        # subclass (a 0-d nn.Parameter too, as in PyTorch), only accepts the empty spec, as
        # object.__format__ does.
        if self._array.ndim == 0 and type(self) is Tensor:
            return self.item().__format__(format_spec)
        if format_spec:
            raise TypeError(f"unsupported format string passed to {type(self).__name__}.__format__")
        return str(self)

    def __contains__(self, element) -> bool:
        if not isinstance(element, (_core.TensorBase, numbers.Number)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you "
                               f"passed in a {type(element)}.")
        return bool((self == element).any())

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
