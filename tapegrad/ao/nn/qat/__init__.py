"""torch.ao.nn.qat: the modules of quantization-aware training: float layers whose weight passes
through its qconfig's weight fake-quantizer on every forward (straight-through gradients), so
training sees the int8 rounding that convert will apply. prepare_qat swaps them in
(from_float shares the float layer's Parameters); convert turns them into quantized modules.

The fused forms (torch.ao.nn.intrinsic.qat: LinearReLU, ConvReLU2d) apply a ReLU after."""
from __future__ import annotations

from tapegrad import nn
from tapegrad.ao.nn import intrinsic as nni
from tapegrad.nn import functional as F

__all__ = ["Linear", "Conv2d", "LinearReLU", "ConvReLU2d"]


def _check_qconfig(qconfig) -> None:
    if not qconfig:
        raise AssertionError("qconfig must be provided for QAT module")


def _float_layer(cls, mod):
    """The float layer inside `mod` (the first part of a fused module), checked."""
    if type(mod) is not cls._FLOAT_MODULE:
        raise AssertionError(f"qat.{cls.__name__}.from_float only works for "
                             f"{cls._FLOAT_MODULE.__name__}")
    if not hasattr(mod, "qconfig"):
        raise AssertionError("Input float module must have qconfig defined")
    if not mod.qconfig:
        raise AssertionError("Input float module must have a valid qconfig")
    return mod[0] if isinstance(mod, nni._FusedModule) else mod


class Linear(nn.Linear):
    _FLOAT_MODULE = nn.Linear
    _relu = False

    def __init__(self, in_features, out_features, bias=True, qconfig=None, device=None,
                 dtype=None):
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        _check_qconfig(qconfig)
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input):  # noqa: A002
        out = F.linear(input, self.weight_fake_quant(self.weight), self.bias)
        return F.relu(out) if self._relu else out

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        layer = _float_layer(cls, mod)
        qat = cls(layer.in_features, layer.out_features, bias=layer.bias is not None,
                  qconfig=mod.qconfig)
        qat.weight, qat.bias = layer.weight, layer.bias     # (shared: the same Parameters)
        return qat


class LinearReLU(Linear):
    _FLOAT_MODULE = nni.LinearReLU
    _relu = True


class Conv2d(nn.Conv2d):
    _FLOAT_MODULE = nn.Conv2d
    _relu = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", qconfig=None, device=None,
                 dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride,
                         padding=padding, dilation=dilation, groups=groups, bias=bias,
                         padding_mode=padding_mode, device=device, dtype=dtype)
        _check_qconfig(qconfig)
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input):  # noqa: A002
        out = self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)
        return F.relu(out) if self._relu else out

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        conv = _float_layer(cls, mod)
        qat = cls(conv.in_channels, conv.out_channels, conv.kernel_size, stride=conv.stride,
                  padding=conv.padding, dilation=conv.dilation, groups=conv.groups,
                  bias=conv.bias is not None, padding_mode=conv.padding_mode,
                  qconfig=mod.qconfig)
        qat.weight, qat.bias = conv.weight, conv.bias
        return qat


class ConvReLU2d(Conv2d):
    _FLOAT_MODULE = nni.ConvReLU2d
    _relu = True
