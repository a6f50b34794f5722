"""The fused module classes: each is an nn.Sequential of its parts, whose constructor checks that
it was given exactly the module types it stands for (PyTorch's AssertionError otherwise)."""
from __future__ import annotations

from tapegrad import nn


class _FusedModule(nn.Sequential):
    # The part types, in order; each subclass declares its own.
    _part_types: tuple = ()

    def __init__(self, *parts):
        if len(parts) != len(self._part_types) or not all(
                type(part) is expected for part, expected in zip(parts, self._part_types)):
            raise AssertionError("Incorrect types for input modules"
                                 + "".join(str(type(part)) for part in parts))
        super().__init__(*parts)


def _fused(name: str, *part_types) -> type:
    # One declaration per fused class: its name and its parts' types.
    return type(name, (_FusedModule,), {"_part_types": part_types, "__module__": __name__,
                                        "__qualname__": name})


ConvReLU1d = _fused("ConvReLU1d", nn.Conv1d, nn.ReLU)
ConvReLU2d = _fused("ConvReLU2d", nn.Conv2d, nn.ReLU)
ConvReLU3d = _fused("ConvReLU3d", nn.Conv3d, nn.ReLU)
LinearReLU = _fused("LinearReLU", nn.Linear, nn.ReLU)
ConvBn1d = _fused("ConvBn1d", nn.Conv1d, nn.BatchNorm1d)
ConvBn2d = _fused("ConvBn2d", nn.Conv2d, nn.BatchNorm2d)
ConvBn3d = _fused("ConvBn3d", nn.Conv3d, nn.BatchNorm3d)
ConvBnReLU1d = _fused("ConvBnReLU1d", nn.Conv1d, nn.BatchNorm1d, nn.ReLU)
ConvBnReLU2d = _fused("ConvBnReLU2d", nn.Conv2d, nn.BatchNorm2d, nn.ReLU)
ConvBnReLU3d = _fused("ConvBnReLU3d", nn.Conv3d, nn.BatchNorm3d, nn.ReLU)
BNReLU2d = _fused("BNReLU2d", nn.BatchNorm2d, nn.ReLU)
BNReLU3d = _fused("BNReLU3d", nn.BatchNorm3d, nn.ReLU)
LinearBn1d = _fused("LinearBn1d", nn.Linear, nn.BatchNorm1d)
LinearLeakyReLU = _fused("LinearLeakyReLU", nn.Linear, nn.LeakyReLU)
LinearTanh = _fused("LinearTanh", nn.Linear, nn.Tanh)
