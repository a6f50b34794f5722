"""torch.fake_quantize_per_tensor_affine and torch.fake_quantize_per_channel_affine: the
quantise-then-dequantise step of quantisation-aware training, with PyTorch's straight-through
gradient (the incoming gradient where the quantised value fell inside [quant_min, quant_max],
0 where it was clamped).

The arithmetic follows PyTorch's CPU kernels, since which float an operation rounds in decides
ties such as 0.05 / 0.1 (float32 0.5, rounded half to even to 0; float64 0.50000001 -> 1):
  q = nearbyint(x * inv_scale) + zero_point     with inv_scale = float32(1 / scale)
  out = (fmin(fmax(q, quant_min), quant_max) - zero_point) * scale
x * inv_scale is computed in float64 for a float64 input and in float32 otherwise (float16
computes in float32 and rounds at the end).  The per-tensor kernel forms the product with
scale in float32 whatever the input dtype; the per-channel kernel forms it in the input's
(widened) dtype, and with a floating zero point adds it before rounding:
  q = nearbyint(x * inv_scale + zero_point).
fmax/fmin take a NaN q to quant_min, an infinite one to the nearer bound.
"""
from __future__ import annotations as _annotations

import numpy as np

from . import _core
from ._extra_functions import _torch_grad_fn_name
from ._extra_ops import _check_tensor, _dim, _dtype_name, _wrap
from .autograd.function import Function
from tapegrad._core import type_name as _type_name

TensorBase = _core.TensorBase


def _quantise(x: np.ndarray, scale, zero_point, quant_min: int, quant_max: int,
              float_zero_point: bool, product_dtype):
    """(out, mask): the fake-quantised values in x's dtype and where q stayed in range.
    scale / zero_point are float32 / numeric arrays broadcastable to x."""
    wide = np.float64 if x.dtype == np.float64 else np.float32
    scale32 = np.asarray(scale, dtype=np.float32)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        inv_scale = (np.float32(1.0) / scale32).astype(wide)
        scaled = x.astype(wide) * inv_scale
        if float_zero_point:
            zp = np.asarray(zero_point, dtype=wide)
            q = np.rint(scaled + zp)
        else:
            zp = np.asarray(zero_point, dtype=np.int64).astype(wide)
            q = np.rint(scaled) + zp
        mask = (q >= quant_min) & (q <= quant_max)
        clamped = np.fmin(np.fmax(q, quant_min), quant_max)
        if float_zero_point:
            # PyTorch's kernel rounds (q - zero_point) * scale once: float64 holds the float32
            # difference and product exactly enough for that
            out = (clamped.astype(np.float64) - zp.astype(np.float64)) * scale32.astype(np.float64)
        else:
            out = (clamped - zp).astype(product_dtype) * scale32.astype(product_dtype)
    return out.astype(x.dtype), mask


class _FakeQuantize(Function):
    """Forward: the values computed by _quantise; backward: grad where mask, else 0."""

    @staticmethod
    def forward(ctx, x, scale, zero_point, quant_min, quant_max, float_zero_point,
                product_dtype):
        out, mask = _quantise(x._array, scale, zero_point, quant_min, quant_max,
                              float_zero_point, product_dtype)
        ctx.mask = _wrap(mask)
        return _wrap(out)

    @staticmethod
    def backward(ctx, grad):
        return (_core.where(ctx.mask, grad, 0.0), None, None, None, None, None, None)


class _FakeQuantizePerTensor(_FakeQuantize):
    pass


class _FakeQuantizePerTensorTensorQparams(_FakeQuantize):
    pass


class _FakeQuantizePerChannel(_FakeQuantize):
    pass


_torch_grad_fn_name(_FakeQuantizePerTensor, "FakeQuantizePerTensorAffineCachemaskBackward0")
_torch_grad_fn_name(_FakeQuantizePerTensorTensorQparams,
                    "FakeQuantizePerTensorAffineCachemaskTensorQparamsBackward0")
_torch_grad_fn_name(_FakeQuantizePerChannel, "FakeQuantizePerChannelAffineCachemaskBackward0")


def _check_floating_input(input, kernel: str) -> None:
    if not input.is_floating_point():
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype_name(input._array)}'")


def _check_range(quant_min: int, quant_max: int) -> None:
    if quant_min > quant_max:
        # (PyTorch's message carries the indentation of its source's line continuation)
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`.")


def _check_zero_point_range(low, high, quant_min: int, quant_max: int) -> None:
    if not (low >= quant_min and high <= quant_max):
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")


def _refuse_qparam_grad(function: str, **qparams) -> None:
    for name, value in qparams.items():
        if isinstance(value, TensorBase) and value.requires_grad:
            raise RuntimeError(f"The function '{function}' is not differentiable with respect to "
                               f"argument '{name}'. This input cannot have requires_grad True.")


def _invalid_per_tensor_arguments(scale, zero_point, quant_min, quant_max):
    """PyTorch's overloads take (float scale, int zero_point) or two tensors."""
    raise TypeError("fake_quantize_per_tensor_affine() received an invalid combination of "
                    f"arguments - got (Tensor, {_type_name(scale)}, {_type_name(zero_point)}, "
                    f"{_type_name(quant_min)}, {_type_name(quant_max)}), but expected one of: "
                    "(Tensor input, float scale, int zero_point, int quant_min, int quant_max) "
                    "or (Tensor input, Tensor scale, Tensor zero_point, int quant_min, "
                    "int quant_max)")


def _parsed_scalar(value, integral: bool):
    """value as PyTorch's argument parser reads a float (integral: an int) argument, or None
    where it does not match."""
    if isinstance(value, TensorBase):
        if value.dim() != 0 or value.requires_grad or (integral and value.is_floating_point()):
            return None
        value = value.item()
    if isinstance(value, bool):
        return None
    if integral:
        return int(value) if isinstance(value, (int, np.integer)) else None
    return float(value) if isinstance(value, (int, float, np.integer, np.floating)) else None


def _scalar_of(value):
    """A per-tensor qparam given as a tensor: its one element (PyTorch's .item())."""
    if value.numel() != 1:
        raise RuntimeError(f"a Tensor with {value.numel()} elements cannot be converted to Scalar")
    return value._array.reshape(-1)[0].item()


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """Fake-quantise input with one scale and zero point (floats / ints, or one-element
    tensors); the gradient passes through where the quantised value was not clamped."""
    _check_tensor(input, "fake_quantize_per_tensor_affine")
    tensor_qparams = isinstance(scale, TensorBase) and isinstance(zero_point, TensorBase)
    if tensor_qparams:
        _refuse_qparam_grad("_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
                            scale=scale, zero_point=zero_point)
        scale_value = _scalar_of(scale)
        # PyTorch reads a tensor zero point as an int (a float one truncated)
        zp_value = int(_scalar_of(zero_point))
    else:
        # the (float scale, int zero_point) overload, whose parser also takes a 0-d tensor
        # (an integer one for the zero point) in either place
        scale_value = _parsed_scalar(scale, integral=False)
        zp_value = _parsed_scalar(zero_point, integral=True)
        if scale_value is None or zp_value is None:
            _invalid_per_tensor_arguments(scale, zero_point, quant_min, quant_max)
    quant_min, quant_max = int(quant_min), int(quant_max)
    _check_floating_input(input, "fake_quantize_tensor_cachemask_kernel_type_handling")
    _check_range(quant_min, quant_max)
    _check_zero_point_range(zp_value, zp_value, quant_min, quant_max)
    function = _FakeQuantizePerTensorTensorQparams if tensor_qparams else _FakeQuantizePerTensor
    return function.apply(input, float(scale_value), int(zp_value), quant_min, quant_max, False,
                          np.float32)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """Fake-quantise input with one scale and zero point per slice along `axis` (1-D float32
    scale, 1-D int32 / float32 / float16 zero_point); straight-through gradient as per tensor."""
    _check_tensor(input, "fake_quantize_per_channel_affine")
    _check_tensor(scale, "fake_quantize_per_channel_affine", "scale", 2)
    _check_tensor(zero_point, "fake_quantize_per_channel_affine", "zero_point", 3)
    _refuse_qparam_grad("fake_quantize_per_channel_affine_cachemask", scale=scale,
                        zero_point=zero_point)
    if scale._array.dtype != np.float32:
        raise RuntimeError(f"Scale must be Float or BFloat16, found {_dtype_name(scale._array)}")
    if zero_point._array.dtype not in (np.int32, np.float32, np.float16):
        raise RuntimeError("Zero-point must be Int32, Float or Half, found "
                           f"{_dtype_name(zero_point._array)}")
    if scale.dim() != 1:
        raise RuntimeError("scale should be a 1-D tensor")
    if zero_point.dim() != 1:
        raise RuntimeError("zero point should be a 1-D tensor")
    if scale.numel() != zero_point.numel():
        raise RuntimeError("scale and zero-point need to have the same dimensions")
    ndim = input.dim()
    dim = _dim(axis, ndim, "fake_quantize_per_channel_affine")
    if scale.numel() != input.shape[dim]:
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input tensor")
    quant_min, quant_max = int(quant_min), int(quant_max)
    _check_range(quant_min, quant_max)
    float_zero_point = zero_point._array.dtype != np.int32
    if not float_zero_point and zero_point.numel():
        zp = zero_point._array
        _check_zero_point_range(int(zp.min()), int(zp.max()), quant_min, quant_max)
    if axis < 0:
        raise RuntimeError("`axis` must be between 0 and number of dimensions of input")
    _check_floating_input(input, "fake_quantize_channel_cachemask_cpu_type_handling")
    shape = [1] * ndim
    shape[dim] = -1
    wide = np.float64 if input._array.dtype == np.float64 else np.float32
    return _FakeQuantizePerChannel.apply(input, scale._array.reshape(shape),
                                         zero_point._array.reshape(shape), quant_min, quant_max,
                                         float_zero_point, wide)


class _FakeQuantizeLearnablePerTensor(Function):
    """Learned-step-size (LSQ) fake quantisation: the forward of fake_quantize_per_tensor_affine
    with the zero point rounded half to even and clamped into range; the backward also
    differentiates the scale and zero point, per element as PyTorch's kernel does, where
    q = nearbyint(x / scale) + z with z = trunc(clamp(zero_point + 0.5)):
      in range:  dx = dy,  dscale = dy * (fq(x) - x) / scale,     dz = 0
      clamped:   dx = 0,   dscale = dy * (bound - z),             dz = -dy * scale
    dscale and dz times grad_factor, summed into the one-element scale / zero_point."""

    @staticmethod
    def forward(ctx, x, scale, zero_point, quant_min, quant_max, grad_factor):
        scale_value = np.float32(_scalar_of(scale.reshape(-1)[0]))
        zp = np.float32(_scalar_of(zero_point.reshape(-1)[0]))
        zp_forward = int(min(max(np.rint(zp), quant_min), quant_max))
        ctx.save_for_backward(x, scale, zero_point)
        ctx.qrange = (quant_min, quant_max, grad_factor)
        out, _ = _quantise(x._array, scale_value, zp_forward, quant_min, quant_max, False,
                           np.float32)
        return _wrap(out)

    @staticmethod
    def backward(ctx, grad):
        x, scale, zero_point = ctx.saved_tensors
        quant_min, quant_max, grad_factor = ctx.qrange
        for name, t in (("dY", grad), ("X", x), ("scale", scale), ("zero_point", zero_point)):
            if t._array.dtype != np.float32:
                raise RuntimeError(f"Expected {name}_.scalar_type() == ScalarType::Float to be "
                                   "true, but got false.")
        if not (quant_min <= 0 <= quant_max):
            raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`, "
                               "and the quantization range should include 0.")
        scale_value = np.float32(_scalar_of(scale.reshape(-1)[0]))
        zp = float(np.trunc(min(max(np.float32(_scalar_of(zero_point.reshape(-1)[0]))
                                    + np.float32(0.5), quant_min), quant_max)))
        if not quant_min <= zp <= quant_max:
            raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
        dy = grad._array
        gf = np.float32(grad_factor)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            inv_scale = np.float32(1.0) / scale_value
            q = np.rint(x._array * inv_scale) + np.float32(zp)
            low, high = q < quant_min, q > quant_max
            inside = ~(low | high)
            fq = ((np.clip(q, quant_min, quant_max) - np.float32(zp)) * scale_value).astype(np.float32)
            d_scale = np.where(inside, dy * (fq - x._array) * inv_scale,
                               dy * np.where(low, np.float32(quant_min - zp),
                                             np.float32(quant_max - zp))) * gf
            d_zero = np.where(inside, np.float32(0.0), dy * np.float32(-1.0) * scale_value * gf)
        dx = np.where(inside, dy, np.float32(0.0)).astype(np.float32)
        return (_wrap(dx), _wrap(np.asarray([d_scale.sum()], dtype=np.float32)),
                _wrap(np.asarray([d_zero.sum()], dtype=np.float32)), None, None, None)


_torch_grad_fn_name(_FakeQuantizeLearnablePerTensor,
                    "FakeQuantizeLearnablePerTensorAffineBackward0")


def _fake_quantize_learnable_per_tensor_affine(input, scale, zero_point, quant_min, quant_max,
                                               grad_factor=1.0):
    """Fake quantisation whose scale and zero point (one-element tensors, usually Parameters)
    are learned too (LSQ, torch.ao.quantization's _LearnableFakeQuantize); see
    _FakeQuantizeLearnablePerTensor for the gradients."""
    _check_tensor(input, "_fake_quantize_learnable_per_tensor_affine")
    _check_tensor(scale, "_fake_quantize_learnable_per_tensor_affine", "scale", 2)
    _check_tensor(zero_point, "_fake_quantize_learnable_per_tensor_affine", "zero_point", 3)
    quant_min, quant_max = int(quant_min), int(quant_max)
    _check_floating_input(input, "fake_quantize_tensor_cachemask_kernel_type_handling")
    _check_range(quant_min, quant_max)
    # (a float64 input quantises in float64 as the per-tensor forward does; PyTorch's backward
    # then refuses it, as the backward here does)
    return _FakeQuantizeLearnablePerTensor.apply(input, scale, zero_point, quant_min, quant_max,
                                                 float(grad_factor))


FUNCTIONS = ("fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine",
             "_fake_quantize_learnable_per_tensor_affine")


def register(namespace: dict) -> None:
    """Add the functions to `namespace` (tapegrad's globals); existing names win."""
    for name in FUNCTIONS:
        namespace.setdefault(name, globals()[name])
