"""``isinstance(x, torch.Tensor)`` inside vmap: PyTorch's batched tensors are Tensors.

A function mapped by vmap receives BatchedTensors (tapegrad/_vmap.py), which are not a subclass
of Tensor (they carry a level and a physical value, not an array).  User code and library code
branch on ``isinstance(x, torch.Tensor)`` ("if not a tensor, convert it"); with PyTorch the
answer is True inside vmap, and a False took the other branch.  While any vmap runs, the
metaclass of Tensor answers True for a BatchedTensor asked about Tensor itself; the check is
installed when the first vmap starts and removed when the last one ends, so isinstance costs
nothing extra outside vmap.
"""
from __future__ import annotations

from . import _vmap
from ._torch_names import TorchNamedClass

_installed = False


def _instancecheck(cls, instance):
    if type(instance) is _vmap.BatchedTensor and cls is _tensor_class():
        return True
    return type.__instancecheck__(cls, instance)


def _tensor_class():
    from .tensor import Tensor
    return Tensor


def install() -> None:
    """The first vmap to start calls this (under vmap's lock)."""
    global _installed
    if not _installed:
        TorchNamedClass.__instancecheck__ = _instancecheck
        _installed = True


def uninstall() -> None:
    """The last vmap to end calls this."""
    global _installed
    if _installed:
        del TorchNamedClass.__instancecheck__
        _installed = False
