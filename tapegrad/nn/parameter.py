"""nn.Parameter: a leaf tensor that a Module registers as one of its parameters."""
from __future__ import annotations

from .. import _core
from ..tensor import Tensor


class Parameter(Tensor):
    """A tensor that is a module parameter: it shares `data`'s storage and requires grad."""

    def __new__(cls, data=None, requires_grad: bool = True):
        if data is None:
            from ..creation import empty
            data = empty(0)
        if not isinstance(data, _core.TensorBase):
            raise TypeError(f"Parameter data must be a Tensor, got {type(data).__name__}")
        p = _core.TensorBase.__new__(cls)
        p._array = data._array
        p.requires_grad = requires_grad
        return p

    def __init__(self, data=None, requires_grad: bool = True):
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return (Parameter, (Tensor.detach(self), self.requires_grad))
