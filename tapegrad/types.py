"""torch.types: the aliases PyTorch's signatures are annotated with (`Number`, `Device`,
`_size`...), for scripts that annotate their own code with them."""
from __future__ import annotations as _annotations

from typing import Union

from ._core import dtype as _dtype
from ._device import device as _device
from .tensor import Size, Tensor

_int = int
_float = float
_bool = bool
_complex = complex
_str = str
_bytes = bytes
_size = Union[Size, list[int], tuple[int, ...]]

# A Python number as PyTorch's ops take it.
Number = int | float | bool
_Number = (int, float, bool)
Device = _device | str | int | None

_TensorOrTensors = Union[Tensor, tuple[Tensor, ...]]
_TensorOrOptionalTensors = Union[Tensor, tuple[Union[Tensor, None], ...]]

__all__ = ["Number", "Device", "Size", "Tensor"]
