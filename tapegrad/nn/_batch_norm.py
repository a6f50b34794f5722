"""torch.nn.functional.batch_norm, shared by the BatchNorm1d/2d modules.

The normalisation is one record of the compiled core (_native_batch_norm, grad_fn
NativeBatchNormBackward0 as PyTorch's, with a compiled VJP and a recorded one for create_graph);
the running statistics are updated in place here, outside the graph.
"""
from __future__ import annotations as _annotations

import math

from tapegrad._core import type_name as _type_name
import numpy as np

from .. import _core
from .._real_torch import real_tensor_or_item
from ._norm_dtypes import check_parameter_dtypes
from .._memory_format import follow_channels_last


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) of input with its batch statistics (training) or the
    running ones; in training, running_mean/var (when given) move towards the batch mean and
    unbiased variance by `momentum`."""
    # PyTorch's order: the batch-size and eps checks (Python), the argument types, then the
    # shapes; the check counts the values per channel from the shape (N * prod(spatial)), so a
    # batch with no channels is checked too and an empty one passes
    count = math.prod(input.shape[:1] + input.shape[2:])
    if training and count == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {input.shape}")
    # A zero eps divides by a zero batch variance, a negative one takes the root of a negative
    # number: nn.functional refuses both (ATen's batch_norm returns inf/nan), on eps as given.
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    return aten_batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                           eps)


def aten_batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
                    momentum=0.1, eps=1e-5):
    """batch_norm without nn.functional's Python check of the batch size: ATen's batch_norm,
    which torch.batch_norm and torch.native_batch_norm reach (one value per channel in training
    normalises to the bias there, where F.batch_norm raises ValueError)."""
    input = real_tensor_or_item(input)      # (a real torch tensor: read, as every entry reads it)
    # A 0-D or 1-D input has no channel dim: PyTorch counts 0 channels (its parameters must be
    # empty) and normalises an empty 1-D input to an empty result
    C = input.shape[1] if input.dim() >= 2 else 0
    count = math.prod(input.shape[:1] + input.shape[2:])
    _core.check_bool("batch_norm", "training", training, 6)
    # PyTorch's parser reads a float argument from any Python or numpy number (bool included:
    # momentum=True is 1.0) and from a 0-d tensor; a module's momentum may be any of these
    momentum, eps = (_float_argument(v, name, position)
                     for position, name, v in ((7, "momentum", momentum), (8, "eps", eps)))
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != C:
            raise RuntimeError(f"{name} should contain {C} elements not {t.numel()}")
    if input.numel() == 0:
        return _empty_batch_norm(input, weight, bias)
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean must be defined in evaluation mode")
    check_parameter_dtypes(input, weight, bias, running_mean, running_var)
    if input.dim() < 2:
        if input.dim() == 1 and input.numel() == 0:
            return _core._name_grad_fn(input * 1, "NativeBatchNormBackward0")
        _core.normalize_dim(1, input.dim())     # (PyTorch's IndexError: there is no dim 1)
    out, mean, var = _core._native_batch_norm(input, weight, bias, running_mean, running_var,
                                              bool(training), float(eps))
    if training and input.numel() and (running_mean is not None or running_var is not None):
        # (an empty batch leaves the running statistics as they are, as PyTorch's kernel does)
        _update_running(running_mean, running_var, mean, var, count, momentum)
    # (PyTorch keeps a channels_last layout, but its CPU kernel asks is_contiguous() first:
    # an (N, C, 1, 1) input reads as row-major whatever its layout, and gives a row-major out)
    return out if input.is_contiguous() else follow_channels_last(out, input)


def _float_argument(v, name: str, position: int) -> float:
    if isinstance(v, (int, float, np.integer, np.floating, np.bool_)) or (
            isinstance(v, _core.TensorBase) and v.ndim == 0):
        return float(v)
    raise TypeError(f"batch_norm(): argument '{name}' (position {position}) must be float, not "
                    f"{_type_name(v)}")


def _empty_batch_norm(input, weight, bias):
    """PyTorch's batch_norm of an empty input, before its kernel's checks: a clone, times
    weight[0] and plus bias[0] when given (so an empty weight raises IndexError).  Nothing saves
    the input, so an in-place write into it before backward is no error (fuzz 60665994)."""
    out = input.clone()
    if weight is not None:
        out = out * weight[0]
    if bias is not None:
        out = out + bias[0]
    return out


def _update_running(running_mean, running_var, mean, var, count, momentum):
    batch_mean = mean
    # (one value per channel, which only ATen's batch_norm takes: an infinite correction, a NaN
    # running variance, as PyTorch's)
    with np.errstate(invalid="ignore"):
        unbiased = var * (count / (count - 1) if count > 1 else math.inf)
    # The blend runs in the statistics' (wider) dtype and is rounded once into the buffer, as
    # PyTorch's: a float16 buffer takes momentum * 1e5 without overflowing (to inf, silently).
    # float32 and float64 buffers blend in one compiled loop, the same roundings.
    with _core.IeeeResults():
        for running, stat in ((running_mean, batch_mean), (running_var, unbiased)):
            if running is not None and not _core._blend_running_statistic(
                    running._array, stat, float(momentum)):
                buf = running._array
                wide = np.float32 if buf.dtype == np.float16 else buf.dtype
                blend = buf.astype(wide) * (1 - momentum)       # (a new array: buf is read)
                blend += stat.astype(wide, copy=False) * momentum
                buf[...] = blend
