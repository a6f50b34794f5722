"""Loss modules: thin wrappers around tapegrad.nn.functional with a `reduction`."""
from __future__ import annotations as _annotations

import math
import warnings

from .. import functional as F
from .._extra_losses import _reduction
from .linear import Linear
from .linear_cross_entropy_options import LinearCrossEntropyOptions  # noqa: F401
from .module import Module


class _Loss(Module):
    """A loss keeping PyTorch's constructor arguments: the reduction is checked when the loss is
    called (as PyTorch's functional losses do), the legacy size_average / reduce flags fold into
    it with PyTorch's deprecation warning."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = _reduction(size_average, reduce, reduction)


class MSELoss(_Loss):
    """Mean (``reduction``: 'mean', 'sum' or 'none') of ``(input - target)**2`` (``F.mse_loss``)."""
    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean (``reduction``: 'mean', 'sum' or 'none') of ``|input - target|``, broadcasting as
    PyTorch with a warning on mismatched shapes (``F.l1_loss``).
    """
    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """``0.5 * d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta``, for d = input -
    target (``F.smooth_l1_loss``).
    """
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta): SmoothL1Loss scaled by delta."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        # (PyTorch's check: a complex or tensor delta is refused here, not at the first call)
        if not isinstance(delta, (float, int)):
            raise TypeError(f"delta must be a float or int, got: {type(delta)}")
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class _WeightedLoss(_Loss):
    """A loss with a per-class `weight`, registered as a buffer (in the state dict, cast by
    .double() and friends), as PyTorch's."""

    def __init__(self, weight=None, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class NLLLoss(_WeightedLoss):
    """Negative log likelihood: ``-input[n, target[n]]`` (times ``weight[target[n]]``) for log-
    probabilities (N, C) (or (N, C, d1, ...)) and class indices; ``ignore_index`` skips targets;
    'mean' divides by the total weight (``F.nll_loss``).
    """
    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy between logits (N, C) (or (N, C, d1, ...), or (C,)) and class indices (N,) or
    class probabilities of the input's shape: ``log_softmax`` then ``nll_loss``, with
    ``weight``, ``ignore_index``, ``label_smoothing`` and ``reduction`` (``F.cross_entropy``).
    """
    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """Binary cross entropy ``-w * (y * log(x) + (1 - y) * log(1 - x))`` between probabilities
    ``x`` and targets ``y`` of the same shape, logs clamped at -100 as PyTorch; ``reduction``
    'mean', 'sum' or 'none' (``F.binary_cross_entropy``).
    """
    def __init__(self, weight=None, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of ``sigmoid(x)``, computed stably from the logits ``x``;
    ``pos_weight`` weights the positive term per class (``F.binary_cross_entropy_with_logits``).
    """
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, weight=self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class NLLLoss2d(NLLLoss):
    """The legacy name of ``NLLLoss`` for (N, C, H, W) inputs (NLLLoss handles any rank);
    constructing it warns, as PyTorch's does."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in "
                      "replacement and see https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss "
                      "for more details.", FutureWarning, stacklevel=2)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class LinearCrossEntropyLoss(_WeightedLoss):
    """Cross entropy of ``input`` mapped to logits by an owned ``Linear`` (``self.linear``):
    ``F.linear_cross_entropy`` with the module's weight reshaped to
    (num_classes, *out_features, in_features).  The Linear stores it flat, with
    ``num_classes * prod(out_features)`` outputs (and a bias of that length when
    ``bias=True``), as PyTorch's does, so state_dict keys are ``linear.weight`` /
    ``linear.bias`` (and ``weight``, the per-class rescaling buffer).
    """

    def __init__(self, in_features: int, num_classes: int, *, out_features=(),
                 bias: bool = False, device=None, dtype=None, reduction: str = "mean",
                 weight=None, ignore_index=None, label_smoothing: float = 0.0,
                 options=None) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError("expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        super().__init__(weight=weight, size_average=None, reduce=None, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes), bias=bias,
                             device=device, dtype=dtype)
        self.options = options

    def forward(self, input, target):
        linear_weight = self.linear.weight.reshape(
            (self.num_classes, *self.out_features, self.linear.in_features))
        linear_bias = (self.linear.bias.reshape((self.num_classes, *self.out_features))
                       if self.linear.bias is not None else None)
        return F.linear_cross_entropy(input, linear_weight, target, linear_bias=linear_bias,
                                      weight=self.weight, reduction=self.reduction,
                                      ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing,
                                      options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
