"""F.linear_cross_entropy: cross entropy of linearly transformed inputs (PyTorch 2.1x).

Defined, as PyTorch defines it, by its reference form ``cross_entropy(linear(input, W, b),
target, ...)``; the (C, d1, ..., dK, in_features) weight of a K-dimensional loss is flattened
for the linear and the logits reshaped back to (N, C, d1, ..., dK).  Gradients are those of the
recorded linear and cross_entropy ops.  PyTorch's chunked path (``options``) is a memory layout
of the same values; tapegrad validates and resolves the options as PyTorch does and computes
the reference form.
"""
from __future__ import annotations as _annotations

import math
import warnings

from .. import _core


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction: str = "mean", ignore_index=None,
                         label_smoothing: float = 0.0, options=None):
    """Cross entropy between ``linear(input, linear_weight, linear_bias)`` and ``target``.

    ``input`` is (in_features,) or (N, in_features); ``linear_weight`` is (C, in_features) or
    (C, d1, ..., dK, in_features) for a K-dimensional loss (batched input only);
    ``linear_bias`` has shape (C, d1, ..., dK).  ``target`` holds class indices or, when its
    shape equals the logits' (N, C, d1, ...), class probabilities.  ``ignore_index=None`` means
    -100 for class indices and is the only value allowed with probabilities.  ``weight``,
    ``reduction`` and ``label_smoothing`` are those of ``cross_entropy``; ``options``
    (LinearCrossEntropyOptions) selects PyTorch's chunked evaluation, which gives the same
    values.
    """
    from . import functional as F
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError("expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.dim()}")
    num_batches = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), "
            f"got {input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    num_classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not num_batches:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
            f"requires batched input, (N, {in_features}), got unbatched input with shape "
            f"{tuple(input.shape)}")
    logits_shape = (*num_batches, num_classes, *out_features)
    # cross_entropy tells probabilities from indices by the target's shape equalling the logits'.
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if options is not None:
        chunkable = (not out_features and reduction in ("mean", "sum", "none")
                     and label_smoothing == 0.0 and target.dtype == _core.int64)
        if not chunkable:
            warnings.warn(
                "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
                "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, "
                f"out_features == (). Got reduction={reduction!r}, "
                f"label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
                f"out_features={tuple(out_features)}, tracing=False, linear_bias.shape="
                f"{tuple(linear_bias.shape) if linear_bias is not None else None}.",
                stacklevel=2)
        else:
            # Resolved for its errors only (conflicting batch_chunk_size / chunking_method).
            options._adjust(num_batches=num_batches[0] if num_batches else 1,
                            in_features=in_features, num_classes=num_classes,
                            dtype=input.dtype, device=input.device)
    if out_features:
        flat = math.prod(out_features, start=num_classes)
        linear_weight = linear_weight.reshape((flat, in_features))
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(flat)
    logits = F.linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return F.cross_entropy(logits, target, weight=weight, reduction=reduction,
                           ignore_index=ignore_index, label_smoothing=label_smoothing)
