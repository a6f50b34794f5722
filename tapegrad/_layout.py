"""torch.layout: how a tensor's elements are stored.  Every tapegrad.Tensor is strided (dense);
a tapegrad.sparse SparseTensor reports sparse_coo."""
from __future__ import annotations as _annotations

from ._torch_names import TorchNamedClass


class layout(metaclass=TorchNamedClass):
    """A tensor memory layout; the two instances are ``tapegrad.strided`` and
    ``tapegrad.sparse_coo``, printed as PyTorch prints them (``torch.strided``)."""
    _c_type_name = "torch.layout"  # (its name in PyTorch's messages)

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
# The compressed layouts (tapegrad._sparse_compressed: CSR and CSC tensors; the blocked BSR and
# BSC layouts exist as names only).
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
# Nested tensors of the jagged layout (tapegrad.nested: values packed along the ragged dim plus
# offsets); nested tensors of the strided layout report torch.strided.
jagged = layout("jagged")


_Layout = layout


def sparse_factory_layout(requested, fn: str, kernel: str | None = None):
    """The `layout=` argument of factory `fn`: False for a dense result (None, torch.strided).

    A sparse layout (COO, CSR, CSC) is returned where the factory makes sparse tensors (`kernel`
    None: zeros, empty and zeros_like give one with no entries, which the caller builds in that
    layout; the blocked ones are refused as PyTorch's zeros does); elsewhere PyTorch refuses
    it with its dispatcher's NotImplementedError naming the factory's ATen `kernel` (the *_like
    factories and the random ones reach empty_strided or their sampler first), or with the
    RuntimeError of the fill factories ("full": ones, full) and the windows ("hann_window" ...).
    Not a layout: TypeError."""
    if requested is None or requested is strided:
        return False
    if not isinstance(requested, _Layout):
        from ._core import type_name
        raise TypeError(f"{fn}(): argument 'layout' must be torch.layout, not "
                        f"{type_name(requested)}")
    if kernel is None:
        if requested in (sparse_bsr, sparse_bsc):
            raise RuntimeError(f"zeros_sparse_compressed expected sparse compressed (non-block) "
                               f"tensor layout but got Sparse{requested._name[7:].capitalize()}")
        return requested
    if kernel == "full":
        raise RuntimeError("full(...) is not implemented for sparse layout")
    if kernel.endswith("_window"):
        raise RuntimeError(f"{kernel} is not implemented for sparse types")
    raise NotImplementedError(
        f"Could not run 'aten::{kernel}' with arguments from the 'SparseCPU' backend. This could "
        f"be because the operator doesn't exist for this backend, or was omitted during the "
        f"selective/custom build process (if using custom build).")
