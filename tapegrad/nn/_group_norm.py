"""torch.nn.functional.group_norm and instance_norm, shared by GroupNorm and InstanceNorm1d/2d.

Group norm is one autograd.Function (PyTorch's one node and its closed-form backward, written in
differentiable ops so create_graph works); instance_norm is batch_norm over a regrouping, its
running statistics updated in place outside the graph, as batch_norm's are.
"""
from __future__ import annotations as _annotations

import math

import numpy as np

from .. import _core
from .._real_torch import real_tensor_or_item
from .._memory_format import follow_channels_last
from .._half_precision import narrow_half, widen_half
from .._extra_functions import _torch_grad_fn_name
from ..autograd.function import KernelFunction
from ..grad_mode import no_grad
from ._batch_norm import batch_norm
from ._norm_dtypes import check_parameter_dtypes


# PyTorch records group norm, its affine part included, as one node
_GROUP_NORM_NODE = "NativeGroupNormBackward0"


def _group_statistics(x, groups: int, eps: float):
    """The mean and 1 / sqrt(var + eps) of each of `groups` runs of channels (and the spatial
    dims) of x (N, C, *), each shaped (N, groups, 1, 1): on an ndarray as the forward kernel
    computes them, on a tensor in differentiable ops (the create_graph backward)."""
    grouped = x.reshape(x.shape[0], groups, 1, -1)
    count = grouped.shape[3]
    if isinstance(x, np.ndarray):
        # (np.add.reduce: ndarray.mean's Python wrapper costs more than the sum at these sizes)
        mean = np.add.reduce(grouped, axis=3, keepdims=True) / count
        # corrected by the residuals' mean, a constant group's mean is its value exactly (sum /
        # n can be an ulp off, which 1 / sqrt(eps) amplifies; PyTorch's Welford moments give 0)
        mean += np.add.reduce(grouped - mean, axis=3, keepdims=True) / count
        centred = grouped - mean
        var = np.add.reduce(centred * centred, axis=3, keepdims=True) / count
        return mean, 1 / np.sqrt(var + eps)      # PyTorch's kernel: 1 / sqrt(var + eps)
    mean = grouped.mean(3, keepdim=True)
    # (the correction is 0 in exact arithmetic, so it carries no derivative: detached)
    mean = mean + (grouped - mean).mean(3, keepdim=True).detach()
    centred = grouped - mean
    return mean, ((centred * centred).mean(3, keepdim=True) + eps).rsqrt()


class GroupNormKernel(KernelFunction):
    """Group norm as ONE node, as PyTorch records it (NativeGroupNormBackward0), whose backward
    is PyTorch's closed form rather than the chain rule through the ops of the forward.  Composed,
    the input's gradient arrived as several partial terms, each added into the input's adjoint on
    its own: with a large upstream gradient (1e12 behind a normalize of zeros) the terms +g and -g
    of a one-value group cancelled only after another use's contribution had been added to the
    first and rounded away (fuzz 65006598: x.grad 0 where PyTorch gives that use's gradient).

    The forward is x * scale + shift per (sample, channel), with scale = rstd * weight and shift
    = bias - mean * scale, as PyTorch's kernel forms it ((x - mean) * rstd * weight + bias gave
    +-inf for an infinite weight where PyTorch's inf - inf gives NaN, fuzz 60720749's sibling).
    The create_graph backward is the same closed form in differentiable ops, its statistics
    recomputed from x, so the second derivatives are that formula's derivatives, as PyTorch's
    infinitely differentiable group norm backward.  A KernelFunction, so tapegrad.compile replays
    the two kernels."""

    saved_args = (0, 1)         # x and weight, as PyTorch's node saves them

    @staticmethod
    def kernel_forward(x, weight, bias, groups, eps):
        n, channels = x.shape[0], x.shape[1]
        # (inf - inf is NaN without a warning, as PyTorch's)
        with np.errstate(all="ignore"):
            mean, rstd = _group_statistics(x, groups, eps)
            # scale and shift per (sample, channel), (N, G, C // G, 1)
            per_channel = (n, groups, channels // groups, 1)
            scale = (np.broadcast_to(rstd, per_channel) if weight is None
                     else rstd * weight.reshape(1, groups, -1, 1))
            shift = (-mean * scale if bias is None
                     else bias.reshape(1, groups, -1, 1) - mean * scale)
            per_sample_channel = (n, channels) + (1,) * (x.ndim - 2)
            out = x * scale.reshape(per_sample_channel) + shift.reshape(per_sample_channel)
        return out, (x, weight, mean, rstd, groups)

    @staticmethod
    def kernel_backward(state, needs, grads):
        x, weight, mean, rstd, groups = state
        if grads[0] is None:
            return (None,) * 5
        with np.errstate(all="ignore"):
            return _group_norm_backward(x, grads[0], weight, mean, rstd, groups, needs[:3]) + \
                (None, None)

    @staticmethod
    def graph_backward(ctx, saved, grad):
        x, weight = saved
        groups, eps = ctx.params[3], ctx.params[4]
        mean, rstd = _group_statistics(x, groups, eps)
        return _group_norm_backward(x, grad, weight, mean, rstd, groups,
                                    ctx.needs_input_grad[:3]) + (None, None)


_torch_grad_fn_name(GroupNormKernel, _GROUP_NORM_NODE)


def _group_norm_backward(x, dy, weight, mean, rstd, groups, wanted):
    """PyTorch's closed form of group norm's gradients, for tensors or numpy arrays alike (only
    reshape, sum(axis, keepdims) and broadcasting arithmetic): with the sums per (sample,
    channel) ds = sum(dy * x), db = sum(dy) over the spatial dims, and their gamma-weighted sums
    over each group's channels,
        dx = rstd * gamma * dy + c2 * x + c3,
        c2 = (sum(db gamma) * mean - sum(ds gamma)) * rstd^3 / m,  c3 = -c2 * mean - sum(db gamma) * rstd / m,
        dgamma = sum over samples of (ds - db * mean) * rstd,  dbeta = sum over samples of db,
    m the number of values in a group."""
    n, channels = x.shape[0], x.shape[1]
    x4 = x.reshape(n, groups, channels // groups, -1)
    dy4 = dy.reshape(x4.shape)
    mean4, rstd4 = mean, rstd                             # (N, G, 1, 1)
    ds = (dy4 * x4).sum(axis=3, keepdims=True)           # (N, G, C // G, 1)
    db = dy4.sum(axis=3, keepdims=True)
    gamma = None if weight is None else weight.reshape(1, groups, -1, 1)
    grad_x = grad_weight = grad_bias = None
    if wanted[0]:
        ds_gamma = ds if gamma is None else ds * gamma
        db_gamma = db if gamma is None else db * gamma
        sum_ds = ds_gamma.sum(axis=2, keepdims=True)      # (N, G, 1, 1)
        sum_db = db_gamma.sum(axis=2, keepdims=True)
        inv_count = 1.0 / (x4.shape[2] * x4.shape[3])
        c2 = (sum_db * mean4 - sum_ds) * rstd4 * rstd4 * rstd4 * inv_count
        c3 = -c2 * mean4 - sum_db * rstd4 * inv_count
        scale = rstd4 if gamma is None else rstd4 * gamma
        grad_x = (dy4 * scale + c2 * x4 + c3).reshape(x.shape)
    if weight is not None and wanted[1]:
        grad_weight = ((ds - db * mean4) * rstd4).sum(axis=(0, 3)).reshape(channels)
    if wanted[2]:
        grad_bias = db.sum(axis=(0, 3)).reshape(channels)
    return grad_x, grad_weight, grad_bias


def _affine(out, weight, bias):
    shape = (1, out.shape[1]) + (1,) * (out.dim() - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """Normalise input (N, C, *) over groups of C // num_groups channels (and the spatial
    dims), then scale and shift each channel by weight and bias."""
    _check_shapes(input, num_groups, None, None)
    # nn.functional's Python check (ATen's group_norm has none): PyTorch refuses groups of one
    # value, naming the (N*C/G, G, *spatial) grouping.
    channels = input.shape[1]
    grouping = [input.shape[0] * channels // num_groups, num_groups] + list(input.shape[2:])
    per_group = grouping[0]
    for n in grouping[2:]:
        per_group *= n
    if per_group == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {grouping}")
    return aten_group_norm(input, num_groups, weight, bias, eps)


def _check_shapes(input, num_groups, weight, bias):
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


def aten_group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """group_norm without nn.functional's check of one value per group: ATen's, which
    torch.group_norm and torch.native_group_norm reach (such a group normalises to the bias)."""
    input = real_tensor_or_item(input)      # (a real torch tensor: read, as every entry reads it)
    _check_shapes(input, num_groups, weight, bias)
    if not input.is_floating_point():
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    # (a float16 input with float32 weight and bias gives float16, as PyTorch's mixed kernel)
    mixed = check_parameter_dtypes(input, weight, bias)
    if input.numel() == 0:
        # (the mixed form's result keeps the input's dtype here too: the affine terms in
        # float32 promoted it)
        out = _affine(input * 1, weight, bias)
        return _core._name_grad_fn(out.to(input.dtype) if mixed else out, _GROUP_NORM_NODE)
    given = (input, weight)
    (input, weight, bias), half = widen_half(input, weight, bias)
    result = narrow_half(GroupNormKernel.apply(input, weight, bias, num_groups, eps),
                         half or mixed)
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
