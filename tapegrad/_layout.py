"""torch.layout: how a tensor's elements are stored.  Every tapegrad.Tensor is strided (dense);
a tapegrad.sparse SparseTensor reports sparse_coo."""
from __future__ import annotations

from ._torch_names import TorchNamedClass


class layout(metaclass=TorchNamedClass):
    """A tensor memory layout; the two instances are ``tapegrad.strided`` and
    ``tapegrad.sparse_coo``, printed as PyTorch prints them (``torch.strided``)."""

    __module__ = "tapegrad"

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return f"torch.{self._name}"

    __str__ = __repr__

    def __reduce__(self):
        # The two layouts are singletons: unpickling finds the module attribute again.
        return self._name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
