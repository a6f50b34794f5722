"""torch.nn.functional.group_norm and instance_norm, shared by GroupNorm and InstanceNorm1d/2d.

Composed of the core's differentiable ops (reshape, mean, sub, mul, rsqrt), so gradients and
create_graph come for free; instance_norm's running statistics are updated in place outside the
graph, as batch_norm's are.
"""
from __future__ import annotations

import math

import numpy as np

from .. import _core
from .._memory_format import follow_channels_last
from .._half_precision import narrow_half, widen_half
from ..grad_mode import no_grad
from ._batch_norm import batch_norm
from ._norm_dtypes import check_parameter_dtypes


def _normalise_groups(input, groups: int, eps: float, weight, bias):
    """input (N, C, *) normalised over each of `groups` runs of channels and the spatial dims,
    then scaled and shifted per channel, as PyTorch's kernel forms it: scale = rstd * weight,
    shift = bias - mean * scale, x * scale + shift ((x - mean) * rstd * weight + bias gave
    +-inf for an infinite weight where PyTorch's inf - inf gives NaN; fuzz 60720749's
    sibling)."""
    n, channels = input.shape[0], input.shape[1]
    grouped = input.reshape(n, groups, -1)
    mean = grouped.mean(2, keepdim=True)
    # corrected by the residuals' mean, a constant group's mean is its value exactly (sum / n can
    # be an ulp off, which 1 / sqrt(eps) amplifies; PyTorch's Welford moments give exactly 0).
    # The correction is 0 in exact arithmetic, so it carries no derivative (detached).
    mean = mean + (grouped - mean).mean(2, keepdim=True).detach()
    centred = grouped - mean
    var = (centred * centred).mean(2, keepdim=True)
    per_channel = (n, groups, channels // groups, 1)
    scale = (var + eps).rsqrt().unsqueeze(2).expand(per_channel)
    if weight is not None:
        scale = scale * weight.reshape(1, groups, -1, 1)
    shift = mean.unsqueeze(2) * scale
    shift = bias.reshape(1, groups, -1, 1) - shift if bias is not None else -shift
    x = input.reshape(n, groups, channels // groups, -1)
    return (x * scale + shift).reshape(input.shape)


def _affine(out, weight, bias):
    shape = (1, out.shape[1]) + (1,) * (out.dim() - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


# PyTorch records group norm, its affine part included, as one node
_GROUP_NORM_NODE = "NativeGroupNormBackward0"


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """Normalise input (N, C, *) over groups of C // num_groups channels (and the spatial
    dims), then scale and shift each channel by weight and bias."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    channels = input.shape[1]
    if num_groups <= 0 or channels % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != channels):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(t.shape)} and "
                               f"input of shape {list(input.shape)}")
    # PyTorch refuses groups of one value, naming the (N*C/G, G, *spatial) grouping.
    grouping = [input.shape[0] * channels // num_groups, num_groups] + list(input.shape[2:])
    per_group = grouping[0]
    for n in grouping[2:]:
        per_group *= n
    if per_group == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {grouping}")
    if not input.is_floating_point():
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    # (a float16 input with float32 weight and bias gives float16, as PyTorch's mixed kernel)
    mixed = check_parameter_dtypes(input, weight, bias)
    if input.numel() == 0:
        return _core._name_grad_fn(_affine(input * 1, weight, bias), _GROUP_NORM_NODE)
    given = (input, weight)
    (input, weight, bias), half = widen_half(input, weight, bias)
    result = narrow_half(_normalise_groups(input, num_groups, eps, weight, bias), half or mixed)
    _core._guard_saved_version(result, *given)    # PyTorch's node saves input and weight
    # (PyTorch keeps a channels_last layout)
    return _core._name_grad_fn(follow_channels_last(result, given[0]), _GROUP_NORM_NODE)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5):
    """Normalise each channel of each sample over its spatial dims (use_input_stats), moving
    running_mean/var (when given) towards the batch average of the per-instance statistics;
    without use_input_stats, the running statistics normalise instead (as batch_norm in eval)."""
    if input.dim() < 2:
        raise ValueError(f"Expected 2D or higher input (got {input.dim()}D input)")
    # (PyTorch passes it on as its builtin instance_norm's 6th argument)
    _core.check_bool("instance_norm", "use_input_stats", use_input_stats, 6)
    # PyTorch checks weight and bias only: running statistics of another dtype are read as the
    # kernel's parameter type
    mixed = check_parameter_dtypes(input, weight, bias)
    if not use_input_stats:
        kernel_dtype = _core.float32 if mixed else input.dtype
        running_mean, running_var = (t if t is None or t.dtype == kernel_dtype
                                     else t.to(kernel_dtype) for t in (running_mean, running_var))
        # (PyTorch normalises a (1, N*C, ...) view with batch_norm, then views it back)
        return _core._name_grad_fn(
            batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps),
            "ViewBackward0")
    spatial = math.prod(input.shape[2:])     # (from the shape: N * C may be 0)
    if spatial == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{input.shape}")
    channels = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")
    if running_mean is not None or running_var is not None:
        _update_running(input, running_mean, running_var, momentum, spatial)
    # PyTorch's instance_norm is batch_norm over the (1, N * C, *spatial) regrouping, with the
    # weight and bias repeated per sample: the one record (NativeBatchNormBackward0) with its
    # numerics (float16 statistics rounded as its; an infinite weight's NaNs where its
    # x * alpha + beta has inf - inf, fuzz 60720749's sibling)
    grouped = input.reshape((1, input.shape[0] * channels) + tuple(input.shape[2:]))
    n = input.shape[0]
    weight, bias = (None if t is None else t.repeat(n) for t in (weight, bias))
    return batch_norm(grouped, None, None, weight, bias, True, 0.0, eps).reshape(input.shape)


def _update_running(input, running_mean, running_var, momentum, spatial) -> None:
    """running <- (1 - momentum) running + momentum * (the batch mean of the per-instance mean,
    and of the per-instance unbiased variance)."""
    if input.numel() == 0:
        # PyTorch blends a copy of the running statistics per instance (none moves when there
        # is no value) and averages the copies: over no instance, NaN
        if input.shape[0] == 0:
            for running in (running_mean, running_var):
                if running is not None:
                    running._array[...] = np.nan
                    _core._mark_written(running)
        return
    with no_grad():
        flat = input.detach().reshape(input.shape[0], input.shape[1], -1)
        mean = flat.mean(2)
        var = ((flat - mean.unsqueeze(2)) ** 2).sum(2) / (spatial - 1)
        for running, stat in ((running_mean, mean), (running_var, var)):
            if running is not None:
                arr = running._array
                arr[...] = ((1 - momentum) * arr + momentum * stat.mean(0)._array).astype(
                    arr.dtype, copy=False)
                _core._mark_written(running)      # saved copies are now stale
