"""Loss modules: thin wrappers around tapegrad.nn.functional with a `reduction`."""
from __future__ import annotations

import warnings

from .. import functional as F
from .._extra_losses import _reduction
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
