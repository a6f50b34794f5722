"""torch.qscheme and its five values (torch.per_tensor_affine, ...): how a quantisation scheme
maps floats to integers, named by the observers and fake-quantize modules of
tapegrad.ao.quantization.  Values compare by identity, print as PyTorch prints them and pickle
by name (a saved FakeQuantize module holds one)."""
from __future__ import annotations as _annotations

from ._torch_names import TorchNamedClass

_NAMES = ("per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
          "per_channel_symmetric", "per_channel_affine_float_qparams")


def _qscheme_by_name(name: str):
    return _BY_NAME[name]


class qscheme(metaclass=TorchNamedClass):
    """A quantisation scheme: per tensor or per channel, affine (with a zero point) or
    symmetric; its only values are torch.per_tensor_affine and the four others below."""

    __module__ = "tapegrad"
    __slots__ = ("name",)

    def __new__(cls, *args, **kwargs):
        # (PyTorch's five values are the only ones: its type cannot be instantiated)
        raise TypeError("cannot create 'torch.qscheme' instances")

    def __repr__(self) -> str:
        return "torch." + self.name

    def __reduce__(self):
        return (_qscheme_by_name, (self.name,))


def _make(name: str) -> qscheme:
    value = object.__new__(qscheme)
    object.__setattr__(value, "name", name)
    return value


_BY_NAME = {name: _make(name) for name in _NAMES}
per_tensor_affine = _BY_NAME["per_tensor_affine"]
per_channel_affine = _BY_NAME["per_channel_affine"]
per_tensor_symmetric = _BY_NAME["per_tensor_symmetric"]
per_channel_symmetric = _BY_NAME["per_channel_symmetric"]
per_channel_affine_float_qparams = _BY_NAME["per_channel_affine_float_qparams"]
