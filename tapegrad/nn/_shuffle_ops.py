"""Channel rearrangements composed of reshape / permute: pixel_shuffle, pixel_unshuffle,
channel_shuffle (and native_channel_shuffle), plus the bilinear form F.bilinear."""
from __future__ import annotations as _annotations

import numpy as np

import tapegrad as _tg

from .. import _core
from .._memory_format import follow_channels_last


def _check_rank(input, name: str, factor_name: str, factor: int) -> None:
    if input.dim() < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input "
                           f"with {input.dim()} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {factor_name}, but got {factor}")


def _new_tensor(result, input):
    """`result` in memory of its own.  PyTorch's shuffles always write a new tensor; one that
    moves nothing (a factor or group count of 1, size-1 dims) came out of reshape / permute as a
    view of the input, and an in-place write into the result silently changed the input
    (fuzz 65001325)."""
    # (numpy says an empty view shares nothing: under no_grad it was returned as the view, which
    # requires grad as the input does; fuzz seed 65700470)
    if result._array.size == 0 or np.may_share_memory(result._array, input._array):
        return result.clone(memory_format=_tg.contiguous_format)
    return result


def pixel_shuffle(input, upscale_factor: int):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r)."""
    r = upscale_factor
    _check_rank(input, "pixel_shuffle", "upscale_factor", r)
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be "
                           "divisible by the square of upscale_factor, but input.size(-3)="
                           f"{c} is not divisible by {r * r}")
    nb = len(batch)
    x = input.reshape(*batch, c // (r * r), r, r, h, w)
    order = list(range(nb)) + [nb, nb + 3, nb + 1, nb + 4, nb + 2]
    return _core._name_grad_fn(follow_channels_last(_new_tensor(
        x.permute(*order).reshape(*batch, c // (r * r), h * r, w * r), input), input),
        "PixelShuffleBackward0")


def pixel_unshuffle(input, downscale_factor: int):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W)."""
    r = downscale_factor
    _check_rank(input, "pixel_unshuffle", "downscale_factor", r)
    *batch, c, h, w = input.shape
    for label, size, dim in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {label} to be divisible by "
                               f"downscale_factor, but input.size({dim})={size} is not "
                               f"divisible by {r}")
    nb = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    order = list(range(nb)) + [nb, nb + 2, nb + 4, nb + 1, nb + 3]
    return _core._name_grad_fn(follow_channels_last(_new_tensor(
        x.permute(*order).reshape(*batch, c * r * r, h // r, w // r), input), input),
        "PixelUnshuffleBackward0")


def channel_shuffle(input, groups: int):
    """(N, g*k, *) -> the channels regrouped as k groups of g (ShuffleNet's interleave)."""
    if input.dim() < 3:
        raise RuntimeError("channel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.dim()} dimension(s)")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    x = input.reshape(n, groups, c // groups, *rest)
    return _core._name_grad_fn(follow_channels_last(
        _new_tensor(x.transpose(1, 2).reshape(n, c, *rest), input), input),
        "ChannelShuffleBackward0")


def native_channel_shuffle(input, groups: int):
    """channel_shuffle's kernel as PyTorch exposes it (torch.native_channel_shuffle): the same
    values, its own check of the rank, and no derivative formula: the result requires grad when
    the input does, and backward through it raises RuntimeError, as in PyTorch."""
    from .._more_math import without_derivative
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    shuffled = channel_shuffle(input.detach(), groups)
    return without_derivative((input,), shuffled,
                              "derivative for aten::native_channel_shuffle is not implemented",
                              RuntimeError)


def bilinear(input1, input2, weight, bias=None):
    """out[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]."""
    # PyTorch's first check; without it a float64 bias silently made a float32 bilinear float64
    operands = [("input1", input1), ("input2", input2), ("weight", weight)]
    if bias is not None:
        operands.append(("bias", bias))
    if len({t.dtype for _, t in operands}) > 1:
        raise RuntimeError("All tensors must have the same dtype, got " + ", ".join(
            f"{label}: {_core.c_type_name_of(t._array.dtype)}" for label, t in operands))
    # PyTorch's checks in its order; a size read from a tensor with too few dims raises its
    # IndexError, as there
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and "
                           f"{input2.dim()}")
    for d in range(input1.dim() - 1):
        if input1.shape[d] != input2.shape[d]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: got "
                               f"{input1.shape[d]} and {input2.shape[d]}")
    if input1.size(-1) != weight.size(1):
        raise RuntimeError("bilinear(): input1 size does not match weight size: got "
                           f"{input1.size(-1)} but expected {weight.size(1)}")
    if input2.size(-1) != weight.size(2):
        raise RuntimeError("bilinear(): input2 size does not match weight size: got "
                           f"{input2.size(-1)} but expected {weight.size(2)}")
    # (a bias of one element had broadcast over the outputs silently)
    if bias is not None and bias.size(0) != weight.size(0):
        raise RuntimeError("bilinear(): bias size does not match weight size: got "
                           f"{bias.size(0)} but expected {weight.size(0)}")
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be 3D, got {weight.dim()}D")
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, weight.shape[1])
    x2 = input2.reshape(-1, weight.shape[2])
    # the outer products x1[b, i] x2[b, j] times weight's rows: a linear layer of (o, i*j)
    # weight, whose gradient comes back laid out as weight (row-major), as PyTorch's (a product
    # through weight.permute(1, 0, 2) had given it permuted strides, so .view(-1) raised)
    o, i, j = weight.shape
    outer = (x1.unsqueeze(2) * x2.unsqueeze(1)).reshape(-1, i * j)
    out = (outer @ weight.reshape(o, i * j).t()).reshape(*lead, o)
    if out.dtype != input1.dtype:
        # (autocast cast the product: PyTorch's _trilinear computes it in the lower dtype too,
        # and gives it back in the inputs' dtype)
        out = out.to(input1.dtype)
    # the bias goes on after the reshape, as in PyTorch, whose grad_fn is then AddBackward0
    return out if bias is None else out + bias


__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "bilinear"]
