"""The static quantized Linear and Conv2d kernels (quantized::linear, quantized::conv2d and their
_relu forms, x86 / FBGEMM arithmetic): quint8 activations times qint8 weights (per tensor or per
output channel), accumulated exactly in integers, then requantized to the output's qparams.

Requantization with a float bias is FBGEMM's, in float32:
    act_times_w_scale[j] = input_scale * weight_scale[j]
    multiplier[j]        = act_times_w_scale[j] / output_scale
    q = rint((acc + bias[j] / act_times_w_scale[j]) * multiplier[j]) + output_zero_point
clamped to the output type's range (and from the zero point up when ReLU is fused)."""
from __future__ import annotations

import numpy as np

import tapegrad as torch
from tapegrad._qscheme import per_tensor_affine
from tapegrad._quantized import QuantizedTensor

_F32 = np.float32


def _check_input(x, who: str):
    if not getattr(x, "is_quantized", False):
        raise NotImplementedError(
            f"Could not run '{who}' with arguments from the 'CPU' backend. This could be because "
            "the operator doesn't exist for this backend, or was omitted during the selective/"
            "custom build process (if using custom build).")
    if x.dtype is not torch.quint8:
        raise RuntimeError("Expected input data type QUInt8 but got "
                           + {torch.qint8: "QInt8", torch.qint32: "QInt32"}[x.dtype]
                           if who.startswith("quantized::linear")
                           else f"{who.split('.')[0]} (ONEDNN): data type of input should be "
                           "QUint8.")


def _weight_scales(weight, channels: int) -> tuple[np.ndarray, np.ndarray]:
    # Per output channel (a per-tensor weight repeats its one scale and zero point).
    if weight._axis is None:
        return (np.full(channels, weight._scale, np.float64),
                np.full(channels, weight._zero_point, np.int64))
    return np.asarray(weight._scale, np.float64), np.asarray(weight._zero_point, np.int64)


def _requantize(acc: np.ndarray, x, weight, bias, scale: float, zero_point: int, relu: bool,
                channel_axis: int):
    """acc (exact integer sums, float64) -> quint8 with (scale, zero_point)."""
    channels = acc.shape[channel_axis]
    w_scales, _ = _weight_scales(weight, channels)
    act_times_w = _F32(x.q_scale()) * w_scales.astype(_F32)
    multiplier = act_times_w / _F32(scale)
    shape = [1] * acc.ndim
    shape[channel_axis] = channels
    values = acc.astype(_F32)
    if bias is not None:
        b = bias.detach().numpy().astype(_F32)
        values = values + (b / act_times_w).reshape(shape)
    q = np.rint(values * multiplier.reshape(shape)) + zero_point
    low = zero_point if relu else 0
    ints = np.clip(q, low, 255).astype(np.uint8)
    return QuantizedTensor._make(ints, torch.quint8, per_tensor_affine, float(scale),
                                 int(zero_point))


def _centred(x) -> np.ndarray:
    # The input's integers minus its zero point (float64: every sum below is exact).
    return x.int_repr().numpy().astype(np.float64) - x.q_zero_point()


def _weight_centred(weight) -> np.ndarray:
    ints = weight.int_repr().numpy().astype(np.float64)
    _, zero_points = _weight_scales(weight, ints.shape[0])
    return ints - zero_points.reshape((-1,) + (1,) * (ints.ndim - 1))


def quantized_linear(x, weight, bias, scale: float, zero_point: int, relu: bool = False):
    _check_input(x, "quantized::linear_relu" if relu else "quantized::linear")
    acc = _centred(x) @ _weight_centred(weight).T
    return _requantize(acc, x, weight, bias, scale, zero_point, relu, acc.ndim - 1)


def quantized_conv(x, weight, bias, stride, padding, dilation, groups, scale: float,
                   zero_point: int, relu: bool = False):
    """Zero padding pads with the input's zero point (0 after centring)."""
    _check_input(x, "quantized::conv2d_relu.new" if relu else "quantized::conv2d.new")
    convolve = {3: torch.nn.functional.conv1d, 4: torch.nn.functional.conv2d,
                5: torch.nn.functional.conv3d}[x.dim()]
    acc = convolve(torch.from_numpy(_centred(x)), torch.from_numpy(_weight_centred(weight)),
                   None, stride, padding, dilation, groups).numpy()
    return _requantize(acc, x, weight, bias, scale, zero_point, relu, 1)
