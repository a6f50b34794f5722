"""Flatten parameters into one vector and write a vector back (torch.nn.utils's pair)."""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import tapegrad as _tg
from ...tensor import Tensor


def parameters_to_vector(parameters) -> Tensor:
    """The parameters, each flattened, concatenated in iteration order (differentiable).  A
    parameter whose storage is not one dense run refuses, as PyTorch's (its flattening is a
    view)."""
    return _tg.cat([p.view(-1) for p in parameters])


def vector_to_parameters(vec, parameters) -> None:
    """Overwrite each parameter's data with its consecutive slice of vec."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {_type_name(vec)}")
    offset = 0
    for param in parameters:
        n = param.numel()
        param.data = vec[offset:offset + n].view_as(param).data
        offset += n
