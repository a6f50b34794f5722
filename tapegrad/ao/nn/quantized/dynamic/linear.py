"""torch.ao.nn.quantized.dynamic.Linear: a Linear layer with an int8 weight whose input is
quantized to uint8 on every call (dynamic quantization), as PyTorch's FBGEMM kernel
(quantized::linear_dynamic) computes it on x86, bit for bit:

1. the input's range [min(x, 0), max(x, 0)] gives a scale and zero point over 0..127
   (reduce_range: x86 int8 multiplies accumulate pairs in int16, one bit is kept free), by
   FBGEMM's ChooseQuantizationParams (_input_qparams);
2. the input is quantized as torch.quantize_per_tensor quantizes quint8 (a float32 fused
   multiply-add, round half to even, clamped to 0..255);
3. the integer product sum((xq - x_zp) * (wq - w_zp)) (exact: accumulated in float64, whose
   53 bits hold any int32 accumulator);
4. the result is dequantized as fma(acc, float32(x_scale * w_scale), bias) in float32.

With dtype=torch.float16 the weight is only rounded to float16 (saturated to its range) and the
product is a float32 one (quantized::linear_dynamic_fp16).

The forward is not differentiable (PyTorch's is not either: the weight is integers)."""
from __future__ import annotations

import numpy as np

import tapegrad as torch
from tapegrad import nn

# FBGEMM's ChooseQuantizationParams, shared with torch.quantize_per_tensor_dynamic.
from tapegrad._quantized import _choose_qparams as _input_qparams


def _linear_dynamic(x, weight, bias, reduce_range: bool = True):
    """quantized::linear_dynamic: x (float32, >= 2 dims) times the quantized weight's transpose,
    plus the float bias."""
    from tapegrad._quantized import _quantize_array
    from tapegrad.tensor import Tensor
    if not isinstance(x, Tensor):
        raise TypeError(f"linear_dynamic(): argument 'X' must be Tensor, not {type(x).__name__}")
    a = x.detach()._array
    if a.dtype != np.float32:
        raise RuntimeError(f"expected scalar type Float but found "
                           f"{torch._core.scalar_type_name_of(a.dtype)}")
    if a.ndim < 2:
        raise RuntimeError("The dimension of input tensor should be larger than or equal to 2")
    n_out, k = weight.shape
    if a.shape[-1] != k:
        raise RuntimeError(f"The number of rows in the packB should be equal to K: {a.shape[-1]}")
    rows = a.reshape(-1, k)
    if rows.size:
        x_min, x_max = rows.min(), rows.max()
    else:
        x_min = x_max = np.float32(0)
    scale, zero_point = _input_qparams(x_min, x_max, 0, 255, reduce_range)
    xq = _quantize_array(rows, scale, zero_point, torch.quint8)
    wq = weight._ints
    if weight.qscheme() is torch.per_tensor_affine:
        w_scale = np.float32(weight._scale)
        w_zero = np.float64(weight._zero_point)
    else:
        w_scale = weight._scale.astype(np.float32)
        w_zero = weight._zero_point.astype(np.float64)[:, None]
    acc = (xq.astype(np.float64) - zero_point) @ (wq.astype(np.float64) - w_zero).T
    multiplier = (np.float32(scale) * w_scale).astype(np.float32)
    out = acc.astype(np.float32).astype(np.float64) * multiplier.astype(np.float64)
    if bias is not None:
        out = out + bias.detach()._array.astype(np.float64)
    return torch.tensor(out.astype(np.float32).reshape(a.shape[:-1] + (n_out,)))


_FP16_MAX = float(np.finfo(np.float16).max)


def _fp16_weight(weight):
    """quantized::linear_prepack_fp16's weight: float32 holding float16 values, the values
    beyond float16's range saturated to its largest (PyTorch clamps before rounding)."""
    a = weight.detach()._array.astype(np.float32)
    return torch.tensor(np.clip(a, -_FP16_MAX, _FP16_MAX).astype(np.float16).astype(np.float32))


def _linear_dynamic_fp16(x, weight, bias):
    """quantized::linear_dynamic_fp16: a float32 product with the float16-rounded weight (FBGEMM
    widens the weight to float32 in its kernel; the input stays float32), plus the bias."""
    from tapegrad.tensor import Tensor
    if not isinstance(x, Tensor):
        raise TypeError(f"linear_dynamic_fp16(): argument 'X' must be Tensor, not "
                        f"{type(x).__name__}")
    if x.dim() < 2:
        raise RuntimeError("The dimension of input tensor should be larger than or equal to 2")
    if x.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"The number of rows in the packB should be equal to K: "
                           f"{x.shape[-1]}")
    with torch.no_grad():
        return torch.nn.functional.linear(x.detach().float(), weight, bias)


class LinearPackedParams(nn.Module):
    """The packed (weight, bias) of a quantized Linear; saved as `dtype` and `_packed_params`."""

    _version = 3

    def __init__(self, dtype=torch.qint8):
        super().__init__()
        self.dtype = dtype
        weight = torch.zeros(1, 1)
        if dtype is torch.qint8:
            weight = torch.quantize_per_tensor(weight, 1.0, 0, torch.qint8)
        self.set_weight_bias(weight, None)

    def set_weight_bias(self, weight, bias) -> None:
        if self.dtype is torch.float16:
            weight = _fp16_weight(weight)
        elif self.dtype is not torch.qint8:
            raise RuntimeError("Unsupported dtype on dynamic quantized linear!")
        self._packed_params = (weight, bias)

    def _weight_bias(self):
        return self._packed_params

    def forward(self, x):
        return x

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "dtype"] = self.dtype
        destination[prefix + "_packed_params"] = self._weight_bias()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        for name in ("dtype", "_packed_params"):
            if prefix + name not in state_dict:
                missing_keys.append(prefix + name)
        if prefix + "dtype" in state_dict:
            self.dtype = state_dict.pop(prefix + "dtype")
        if prefix + "_packed_params" in state_dict:
            self.set_weight_bias(*state_dict.pop(prefix + "_packed_params"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def __repr__(self) -> str:
        return repr(self._weight_bias())


class Linear(nn.Module):
    """A dynamically quantized Linear (int8 weight, input quantized per call); built from a float
    nn.Linear by from_float, which torch.ao.quantization.quantize_dynamic calls."""

    _version = 4
    _FLOAT_MODULE = nn.Linear

    def __init__(self, in_features: int, out_features: int, bias_: bool = True,
                 dtype=torch.qint8):
        super().__init__()
        if dtype not in (torch.qint8, torch.float16):
            raise RuntimeError("Unsupported dtype specified for quantized Linear!")
        self.in_features, self.out_features = in_features, out_features
        bias = torch.zeros(out_features) if bias_ else None
        weight = torch.zeros(out_features, in_features)
        if dtype is torch.qint8:
            weight = torch.quantize_per_tensor(weight, 1.0, 0, torch.qint8)
        self._packed_params = LinearPackedParams(dtype)
        self._packed_params.set_weight_bias(weight, bias)
        self.scale = 1.0
        self.zero_point = 0

    def _get_name(self) -> str:
        return "DynamicQuantizedLinear"

    def extra_repr(self) -> str:
        s = (f"in_features={self.in_features}, out_features={self.out_features}, "
             f"dtype={self._packed_params.dtype}")
        if self._packed_params.dtype is torch.qint8:
            s += f", qscheme={self.weight().qscheme()}"
        return s

    def __repr__(self) -> str:
        # the packed parameters are state, not a submodule to print (PyTorch hides them too)
        return f"{self._get_name()}({self.extra_repr()})"

    def forward(self, x):
        weight, bias = self._packed_params._weight_bias()
        if self._packed_params.dtype is torch.float16:
            return _linear_dynamic_fp16(x, weight, bias)
        return _linear_dynamic(x, weight, bias, reduce_range=True)

    def weight(self):
        return self._packed_params._weight_bias()[0]

    def bias(self):
        return self._packed_params._weight_bias()[1]

    def set_weight_bias(self, w, b) -> None:
        self._packed_params.set_weight_bias(w, b)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = torch.tensor(self.scale)
        destination[prefix + "zero_point"] = torch.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        for name in ("scale", "zero_point"):
            if prefix + name in state_dict:
                value = state_dict.pop(prefix + name)
                setattr(self, name, float(value) if name == "scale" else int(value))
            elif strict:
                missing_keys.append(prefix + name)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """The dynamic quantized twin of float Linear `mod`: its weight quantized by the weight
        observer of `mod.qconfig` (qint8), its bias kept in float."""
        if type(mod) is not nn.Linear:
            raise AssertionError(f"nn.quantized.dynamic.Linear.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        weight_observer = mod.qconfig.weight()
        dtype = weight_observer.dtype
        if dtype not in (torch.qint8, torch.float16):
            raise AssertionError("The only supported dtypes for dynamic quantized linear are "
                                 f"qint8 and float16, got: {dtype}")
        weight_observer(mod.weight)
        if dtype is torch.qint8:
            qweight = _quantize_weight(mod.weight.float(), weight_observer)
        else:
            qweight = mod.weight.float()
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(qweight, mod.bias)
        return qlinear


def _quantize_weight(float_wt, observer):
    """The observer's qparams applied to the weight: per tensor or per channel, qint8."""
    scale, zero_point = observer.calculate_qparams()
    if observer.qscheme in (torch.per_tensor_symmetric, torch.per_tensor_affine):
        return torch.quantize_per_tensor(float_wt, float(scale), int(zero_point), torch.qint8)
    if observer.qscheme in (torch.per_channel_symmetric, torch.per_channel_affine):
        return torch.quantize_per_channel(float_wt, scale.to(torch.float64),
                                          zero_point.to(torch.int64), observer.ch_axis,
                                          torch.qint8)
    raise ValueError(f"Unexpected qscheme {observer.qscheme}")
