"""PyTorch's tuple-returning `native_*` entry points, built on the functional ops:
native_layer_norm -> (output, mean, rstd), native_batch_norm -> (output, save_mean,
save_invstd), native_group_norm -> (output, mean, rstd), native_dropout -> (output, mask).  Only
the output carries a gradient (PyTorch's statistics and mask do not require grad), except
native_group_norm's mean and rstd, which do in PyTorch."""
from __future__ import annotations as _annotations


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    import tapegrad
    from tapegrad.nn import functional as F
    shape = tuple(normalized_shape)
    output = F.layer_norm(input, shape, weight, bias, eps)
    dims = tuple(range(input.dim() - len(shape), input.dim()))
    x = input.detach()
    mean = x.mean(dim=dims, keepdim=True)
    rstd = tapegrad.rsqrt(x.var(dim=dims, unbiased=False, keepdim=True) + eps)
    return output, mean, rstd


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """(output, save_mean, save_invstd): F.batch_norm's output (running stats updated in place
    when training), and the batch statistics per channel that PyTorch saves for backward (empty
    in eval mode); only the output carries a gradient."""
    import tapegrad
    if not training and (running_mean is None or running_var is None):
        # (PyTorch crashes here; its eval kernel reads the running statistics)
        raise RuntimeError("native_batch_norm: running_mean and running_var must be defined "
                           "in evaluation mode")
    if training and input.numel() == 0:
        # (its CPU training kernel's check; F.batch_norm returns before reaching it)
        raise RuntimeError(f"input tensor must have at least one element, but got "
                           f"input_sizes = {list(input.shape)}")
    from tapegrad.nn._batch_norm import aten_batch_norm
    # (ATen's: no check of the batch size, which is nn.functional's)
    output = aten_batch_norm(input, running_mean, running_var, weight, bias, bool(training),
                             momentum, eps)
    if not training:
        empty = tapegrad.empty(0, dtype=input.dtype)
        return output, empty, empty.clone()
    dims = (0,) + tuple(range(2, input.dim()))
    x = input.detach()
    mean = x.mean(dim=dims)
    invstd = tapegrad.rsqrt(x.var(dim=dims, unbiased=False) + eps)
    return output, mean, invstd


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """(output, mean, rstd) of group_norm, mean and rstd of shape (N, group); as PyTorch's, all
    three carry a gradient to input."""
    import tapegrad
    if input.numel() != N * C * HxW:
        raise RuntimeError("Expected X.numel() == N * C * HxW to be true, but got false.")
    from tapegrad.nn._group_norm import aten_group_norm
    # (ATen's: no check of one value per group, which is nn.functional's)
    output = aten_group_norm(input, group, weight, bias, eps)
    # (explicit sizes: -1 is ambiguous for an empty batch)
    groups = input.reshape(N, group, (C // group) * HxW)
    mean = groups.mean(dim=-1)
    rstd = tapegrad.rsqrt(groups.var(dim=-1, unbiased=False) + eps)
    return output, mean, rstd


def native_dropout(input, p, train):
    import tapegrad
    if train is False or p == 0:
        return input.clone(), tapegrad.ones_like(input, dtype=tapegrad.bool)
    mask = tapegrad.rand_like(input.detach()) >= p
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    return input * mask.to(input.dtype) * scale, mask


def register(namespace: dict) -> None:
    for fn in (native_layer_norm, native_batch_norm, native_group_norm, native_dropout):
        namespace.setdefault(fn.__name__, fn)
