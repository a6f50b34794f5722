"""tapegrad.utils._foreach_utils: the helpers multi-tensor optimizer code imports to split its
tensor lists by device and dtype before calling the torch._foreach_* functions (Adan, Lion and
schedule-free repositories written as edited copies of torch/optim/*.py import them).

tapegrad holds CPU tensors only, so a group's key is always the CPU device with one dtype; the
grouping still matters because a foreach call takes tensors of one dtype."""
from __future__ import annotations as _annotations

from typing import TypeAlias

from .._foreach import (_get_foreach_kernels_supported_devices, _get_fused_kernels_supported_devices,
                        group_by_device_and_dtype)
from ..grad_mode import no_grad
from ..tensor import Tensor

__all__: list[str] = []

TensorListList: TypeAlias = list[list[Tensor | None]]
Indices: TypeAlias = list[int]

# The tensor types PyTorch's foreach kernels take (exactly these: a subclass, a Parameter
# included, takes the per-tensor path).
_foreach_supported_types = [Tensor]


@no_grad()
def _group_tensors_by_device_and_dtype(tensorlistlist: TensorListList, with_indices: bool = False):
    """Split parallel tensor lists into groups of one device and dtype (see
    group_by_device_and_dtype)."""
    return group_by_device_and_dtype(tensorlistlist, with_indices)


def _device_has_foreach_support(device) -> bool:
    return device.type in _get_foreach_kernels_supported_devices() + ["cpu"]


def _has_foreach_support(tensors, device) -> bool:
    return _device_has_foreach_support(device) and all(
        t is None or type(t) in _foreach_supported_types for t in tensors)
