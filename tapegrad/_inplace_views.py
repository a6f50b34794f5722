"""In-place shape changes: ``unsqueeze_``, ``squeeze_``, ``t_``, ``transpose_``, ``swapaxes_``,
``swapdims_`` (issue 15: tutorials batch an image with ``img.unsqueeze_(0)``).

Each makes the tensor itself take the shape of the matching view op's result, sharing its
storage, and returns the tensor.  The view op does the argument checks, so errors are its
(PyTorch's) errors.  A leaf that requires grad is refused while grad mode is on, as PyTorch
refuses it; a non-leaf that requires grad would need its graph node to become the view's,
which the compiled core does not offer for these ops, so that case raises instead of dropping
the history.
"""
from __future__ import annotations

from . import _core
from ._class_members import has_member

_LEAF_IN_PLACE = "a leaf Variable that requires grad is being used in an in-place operation."
_NON_LEAF = ("{op}() on a tensor that is part of an autograd graph is not supported by "
             "tapegrad; use the out-of-place {view}() instead")


def _restride(self, op: str, view: str, *args):
    if self.requires_grad and _core.is_grad_enabled():
        if self.is_leaf:
            raise RuntimeError(_LEAF_IN_PLACE)
        raise RuntimeError(_NON_LEAF.format(op=op, view=view))
    # `data =` swaps the array (a view of the same storage) and keeps the tensor's identity,
    # its requires_grad flag and its version counter.
    self.data = getattr(self, view)(*args)
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


def ndimension(self) -> int:
    """The number of dimensions (an old alias of ``dim()``)."""
    return self.ndim


METHODS = {"unsqueeze_": unsqueeze_, "squeeze_": squeeze_, "t_": t_, "transpose_": transpose_,
           "swapaxes_": swapaxes_, "swapdims_": swapdims_, "ndimension": ndimension}


def register(tensor_cls) -> None:
    """Add the methods to `tensor_cls`; existing (compiled) ones win."""
    for name, method in METHODS.items():
        if not has_member(tensor_cls, name):
            setattr(tensor_cls, name, method)
