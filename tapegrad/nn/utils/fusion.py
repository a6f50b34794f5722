"""Folding an eval-mode batch norm into the convolution or linear layer before it, for
inference: y = bn(conv(x)) becomes one conv whose weight is scaled per output channel by
gamma / sqrt(running_var + eps) and whose bias is shifted accordingly."""
from __future__ import annotations as _annotations

import copy

from ... import creation
from ..parameter import Parameter


def _folded(weight, bias, running_mean, scale, beta, channel_axis: int):
    """(weight, bias) Parameters with a batch norm of per-channel `scale` (gamma /
    sqrt(running_var + eps)) and shift `beta` folded in; `channel_axis` is the weight's axis of
    the output channels (0, or 1 for transposed convolutions)."""
    shape = [1] * weight.dim()
    shape[channel_axis] = -1
    new_weight = (weight * scale.reshape(shape)).to(dtype=weight.dtype)
    bias_dtype = weight.dtype if bias is None else bias.dtype
    if bias is None:
        bias = creation.zeros_like(running_mean)
    new_bias = (bias - running_mean) * scale
    if beta is not None:
        new_bias = new_bias + beta
    return (Parameter(new_weight, weight.requires_grad),
            Parameter(new_bias.to(dtype=bias_dtype), bias.requires_grad))


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """A convolution's (weight, bias) Parameters with a batch norm's statistics and affine
    parameters (None for a norm without them) folded in; ``transpose`` for a transposed
    convolution's weight layout."""
    scale = (bn_rv + bn_eps).rsqrt()
    if bn_w is not None:
        scale = bn_w * scale
    return _folded(conv_w, conv_b, bn_rm, scale, bn_b, 1 if transpose else 0)


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """A linear layer's (weight, bias) Parameters with a batch norm folded in.  As PyTorch's,
    it needs the norm's affine parameters (a norm without them: TypeError)."""
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    return _folded(linear_w, linear_b, bn_rm, scale, bn_b, 0)


def _check_foldable(layer, bn) -> None:
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")


def _check_statistics(bn) -> None:
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of eval-mode `conv` computing ``bn(conv(x))`` of eval-mode `bn` in one layer."""
    _check_foldable(conv, bn)
    fused = copy.deepcopy(conv)
    _check_statistics(bn)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_linear_bn_eval(linear, bn):
    """A copy of eval-mode `linear` computing ``bn(linear(x))`` of eval-mode `bn` in one
    layer; bn's features must be linear's outputs (or 1)."""
    _check_foldable(linear, bn)
    fused = copy.deepcopy(linear)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            f"To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
            f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    _check_statistics(bn)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]
