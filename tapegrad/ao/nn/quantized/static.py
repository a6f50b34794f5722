"""The statically quantized Linear and Conv2d (torch.ao.nn.quantized.Linear / Conv2d) and their
fused-ReLU forms (torch.ao.nn.intrinsic.quantized.LinearReLU / ConvReLU2d): quint8 in, quint8
out with the output qparams that calibration chose, int8 weights. convert builds them from an
observed float module (from_float): the weight quantized by the qconfig's weight observer, the
output scale and zero point from the module's activation observer."""
from __future__ import annotations

import tapegrad as torch
from tapegrad import nn
from tapegrad.ao.nn import intrinsic as nni
from tapegrad.nn.modules.utils import _pair

from ._int8_kernels import quantized_conv, quantized_linear
from .dynamic.linear import Linear as _DynamicLinear
from .dynamic.linear import _quantize_weight

__all__ = ["Linear", "Conv2d", "LinearReLU", "ConvReLU2d"]


def _observed_parts(mod, float_type, fused_type):
    """(the layer holding the weight, its activation observer, its weight observer after seeing
    the weight) of an observed float, fused or QAT module. A QAT module's weight observer is its
    weight fake-quantizer, which sees the weight once more (as PyTorch's)."""
    if not hasattr(mod, "weight_fake_quant"):
        if type(mod) is not float_type and type(mod) is not fused_type:
            raise AssertionError(f"nnq.{float_type.__name__}.from_float only works for "
                                 f"{float_type.__name__}, got: {type(mod)}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
    # (an unobserved module: PyTorch's AttributeError, from this attribute access)
    activation_observer = mod.activation_post_process
    if hasattr(mod, "weight_fake_quant"):
        layer, weight_observer = mod, mod.weight_fake_quant
    else:
        layer = mod[0] if type(mod) is fused_type else mod
        weight_observer = mod.qconfig.weight()
    weight_observer(layer.weight)
    if weight_observer.dtype is not torch.qint8:
        raise AssertionError("Weight observer must have dtype torch.qint8")
    return layer, activation_observer, weight_observer


def _output_qparams(activation_observer):
    scale, zero_point = activation_observer.calculate_qparams()
    return float(scale), int(zero_point)


class Linear(_DynamicLinear):
    """A quantized Linear: quint8 input and output, qint8 weight, float bias."""

    _FLOAT_MODULE = nn.Linear
    _relu = False

    def __init__(self, in_features: int, out_features: int, bias_: bool = True,
                 dtype=torch.qint8):
        if dtype is not torch.qint8:
            raise NotImplementedError("Only QINT8 is supported for Sparse Quantized Linear")
        super().__init__(in_features, out_features, bias_, dtype)

    def _get_name(self) -> str:
        return "QuantizedLinearReLU" if self._relu else "QuantizedLinear"

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"scale={self.scale}, zero_point={self.zero_point}, "
                f"qscheme={self.weight().qscheme()}")

    def forward(self, x):
        return quantized_linear(x, self.weight(), self.bias(), self.scale, self.zero_point,
                                self._relu)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        layer, activation_observer, weight_observer = _observed_parts(
            mod, nn.Linear, nni.LinearReLU if cls._relu else None)
        qlinear = cls(layer.in_features, layer.out_features)
        qlinear.set_weight_bias(_quantize_weight(layer.weight.float(), weight_observer),
                                layer.bias)
        qlinear.scale, qlinear.zero_point = _output_qparams(activation_observer)
        return qlinear


class LinearReLU(Linear):
    _relu = True


class Conv2d(nn.Module):
    """A quantized Conv2d (zero padding): quint8 input and output, qint8 weight, float bias."""

    _relu = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros"):
        super().__init__()
        if padding_mode != "zeros":
            raise NotImplementedError(f"tapegrad: quantized Conv2d with padding_mode="
                                      f"'{padding_mode}' (only 'zeros' is supported)")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _pair(kernel_size), _pair(stride)
        self.padding, self.dilation = _pair(padding), _pair(dilation)
        self.output_padding, self.transposed = (0, 0), False
        self.groups, self.padding_mode = groups, padding_mode
        weight = torch.quantize_per_tensor(
            torch.zeros(out_channels, in_channels // groups, *self.kernel_size), 1.0, 0,
            torch.qint8)
        self.set_weight_bias(weight, torch.zeros(out_channels) if bias else None)
        self.scale, self.zero_point = 1.0, 0

    def _get_name(self) -> str:
        return "QuantizedConvReLU2d" if self._relu else "QuantizedConv2d"

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}, scale={self.scale}, zero_point={self.zero_point}")
        if self.padding != (0, 0):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self._bias is None:
            s += ", bias=False"
        return s

    def set_weight_bias(self, w, b) -> None:
        self._weight, self._bias = w, b

    def weight(self):
        return self._weight

    def bias(self):
        return self._bias

    def forward(self, x):
        if x.dim() != 4:
            raise ValueError("Input shape must be `(N, C, H, W)`!")
        return quantized_conv(x, self._weight, self._bias, self.stride, self.padding,
                              self.dilation, self.groups, self.scale, self.zero_point,
                              self._relu)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "weight"] = self._weight
        destination[prefix + "bias"] = self._bias
        destination[prefix + "scale"] = torch.tensor(self.scale)
        destination[prefix + "zero_point"] = torch.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        names = ("weight", "bias", "scale", "zero_point")
        missing_keys.extend(prefix + n for n in names if prefix + n not in state_dict)
        if all(prefix + n in state_dict for n in names):
            self.set_weight_bias(state_dict.pop(prefix + "weight"),
                                 state_dict.pop(prefix + "bias"))
            self.scale = float(state_dict.pop(prefix + "scale"))
            self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        conv, activation_observer, weight_observer = _observed_parts(
            mod, nn.Conv2d, nni.ConvReLU2d if cls._relu else None)
        qconv = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                    conv.padding, conv.dilation, conv.groups, conv.bias is not None,
                    conv.padding_mode)
        qconv.set_weight_bias(_quantize_weight(conv.weight.float(), weight_observer),
                              None if conv.bias is None else conv.bias.detach().clone())
        qconv.scale, qconv.zero_point = _output_qparams(activation_observer)
        return qconv


class ConvReLU2d(Conv2d):
    _relu = True
