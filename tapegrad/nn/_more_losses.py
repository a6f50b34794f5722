"""triplet_margin_with_distance_loss, multilabel_margin_loss and feature_alpha_dropout for
tapegrad.nn.functional, composed of the core's differentiable ops."""
from __future__ import annotations as _annotations

import math

import numpy as np

import tapegrad as _tg
from .. import _core
from .._saved_indices import saves_index_args
from .._half_precision import refuse_half
from ..creation import rand
from ._conv_ops import _check_tensor
from .._torch_functional import _check_feature_input, _returns_input_unchanged
from ._extra_activations import _SELU_ALPHA, _SELU_SCALE, _finish
from ._extra_losses import (_check_reduction, _check_vector_or_matrix, _reduction,
                            pairwise_distance)

_wrap = _core.wrap_array

__all__ = ["triplet_margin_with_distance_loss", "multilabel_margin_loss",
           "feature_alpha_dropout"]


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.mean()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean"):
    """``max(d(anchor, positive) - d(anchor, negative) + margin, 0)`` for any distance function
    ``d`` (default: pairwise_distance); ``swap=True`` uses the smaller of d(a, n) and d(p, n)."""
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {dims[0]}D, positive "
                           f"{dims[1]}D, and negative {dims[2]}D inputs")
    distance = distance_function if distance_function is not None else pairwise_distance
    to_positive = distance(anchor, positive)
    to_negative = distance(anchor, negative)
    if swap:
        # (the public minimum: its bfloat16 operands give a bfloat16 result, where the core's,
        # on their float32 storage, gave float32; fuzz 66900656)
        to_negative = _tg.minimum(to_negative, distance(positive, negative))
    return _reduce((to_positive - to_negative + margin).clamp_min(0), reduction)


@saves_index_args("target")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-class multi-label hinge loss: for each sample, the mean over classes of
    ``max(0, 1 - (x[y] - x[i]))`` summed over its target classes y (the entries of its target
    row before the first -1) and its non-target classes i."""
    # the reduction name is checked first, as PyTorch's functional maps it to its enum first
    reduction = _check_reduction(_reduction(size_average, reduce, reduction))
    _check_tensor(input)
    _check_tensor(target, "target")
    _check_vector_or_matrix(input)
    unbatched = input.dim() <= 1
    x = input.reshape(1, -1) if unbatched else input
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    if target._array.dtype != np.int64 and target.numel():
        # Class indices are Long: PyTorch refuses another dtype (a float target would otherwise
        # be truncated to indices silently), after the size check; its kernel checks no empty
        # target.
        raise RuntimeError(f"expected scalar type Long but found "
                           f"{_core.scalar_type_name_of(target._array.dtype)}")
    labels = np.asarray(target._array).astype(np.int64).reshape(x.shape[0], -1) \
        if target.numel() else np.zeros((x.shape[0], 0), np.int64)
    n, classes = x.shape
    # Targets are the entries before each row's first -1 (counted with repetition).
    before_end = np.cumprod(labels != -1, axis=1).astype(bool)
    if ((labels < -1) | (labels >= classes))[before_end].any():
        raise RuntimeError("argument #2 'target' is out of range")
    refuse_half(x, "multilabel_margin_loss_forward_out_frame")  # (after the target's range)
    counts = np.zeros((n, classes))
    rows = np.broadcast_to(np.arange(n)[:, None], labels.shape)
    np.add.at(counts, (rows[before_end], labels[before_end]), 1.0)
    is_target = counts > 0
    weight = counts[:, :, None] * (~is_target)[:, None, :]        # (N, target j, other i)
    # PyTorch's kernel adds a (target j, other i) term only where z > 0: a margin of exactly 0
    # passes no gradient, a NaN term is left out, and so is any pair it does not visit (a zero
    # weight times an infinite or NaN z would be NaN; fuzz 60628872, as multi_margin_loss).
    z = 1.0 - x.unsqueeze(2) + x.unsqueeze(1)
    kept = (z > 0) & _wrap(weight > 0)
    margins = _core.where(kept, z, 0.0)
    loss = (margins * _wrap(weight.astype(x._array.dtype))).sum((1, 2)) / classes
    if unbatched:
        loss = loss.squeeze(0) if input.dim() == 1 else loss.reshape(())
    # (one node in PyTorch, whatever the reduction)
    return _core._name_grad_fn(_reduce(loss, reduction), "MultilabelMarginLossBackward0")


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Alpha dropout of whole channels: each (sample, channel) map is kept or set to SELU's
    negative saturation together, then the result is re-affined to keep zero mean and unit
    variance (as alpha_dropout, one draw per channel)."""
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    # (PyTorch passes training on as its builtin feature_alpha_dropout's 3rd argument `train`)
    _core.check_bool("feature_alpha_dropout_" if inplace else "feature_alpha_dropout", "train",
                     training, 3)
    if _returns_input_unchanged(input, p, training):
        return input
    saturation = _SELU_ALPHA * _SELU_SCALE
    if p == 1:
        result = input * 0
    else:
        _check_feature_input(input)     # (a 1-D input has no channels to draw for)
        a = 1.0 / math.sqrt((saturation * saturation * p + 1) * (1 - p))
        shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
        keep = (rand(shape, dtype=input.dtype) >= p).to(input.dtype)
        b = (keep - 1) * (saturation * a) + saturation * a * p
        result = (_core._overlap_operand(input) if inplace else input) * (keep * a) + b
    return _finish(input, result, inplace)
