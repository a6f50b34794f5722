"""torch.overrides: the part of PyTorch's __torch_function__ protocol that tapegrad has.

tapegrad does not dispatch to __torch_function__ overrides; what scripts use to tell tensors
from other objects is here."""
from __future__ import annotations

from .tensor import Tensor

__all__ = ["is_tensor_like"]


def is_tensor_like(inp) -> bool:
    """True for a Tensor (or a subclass instance), for the Tensor class and its subclasses, and
    for any object defining __torch_function__ (PyTorch's duck-typed tensors)."""
    return type(inp) is Tensor or isinstance(inp, Tensor) or hasattr(inp, "__torch_function__") \
        or (isinstance(inp, type) and issubclass(inp, Tensor))
