"""Flatten parameters into one vector and write a vector back (torch.nn.utils's pair)."""
from __future__ import annotations as _annotations

import tapegrad as _tg
from ..._more_creation import typename
from ...tensor import Tensor


def _check_param_device(param) -> None:
    """PyTorch's same-device check, which reads each parameter's device before anything else
    (so a None in the iterable -- a .grad never set -- fails naming `device`).  Its only
    refusal, parameters on two CUDA/PrivateUse1 devices or one of those mixed with the CPU,
    cannot arise: tapegrad's devices (cpu, meta) are all the CPU class to that check."""
    param.device


def parameters_to_vector(parameters) -> Tensor:
    """The parameters, each flattened, concatenated in iteration order (differentiable).  A
    parameter whose storage is not one dense run refuses, as PyTorch's (its flattening is a
    view)."""
    flat = []
    for p in parameters:
        _check_param_device(p)
        flat.append(p.view(-1))
    return _tg.cat(flat)


def vector_to_parameters(vec, parameters) -> None:
    """Overwrite each parameter's data with its consecutive slice of vec."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {typename(vec)}")      # torch.typename
    offset = 0
    for param in parameters:
        _check_param_device(param)
        n = param.numel()
        param.data = vec[offset:offset + n].view_as(param).data
        offset += n
