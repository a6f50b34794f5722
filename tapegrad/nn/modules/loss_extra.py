"""Loss and distance modules over tapegrad.nn._extra_losses (KLDivLoss ... PairwiseDistance)."""
from __future__ import annotations as _annotations

from .. import _extra_losses as L
from .. import functional as F
from .loss import _Loss as _ReducedLoss, _WeightedLoss
from .module import Module


class KLDivLoss(_ReducedLoss):
    """Kullback-Leibler divergence ``target * (log(target) - input)`` with ``input`` given as log-
    probabilities (``log_target=True``: target too); ``reduction='batchmean'`` divides the sum
    by the batch size, the mathematically correct mean (``F.kl_div``).
    """
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return L.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class _MarginLoss(_ReducedLoss):
    def __init__(self, margin: float = 0.0, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin


class CosineEmbeddingLoss(_MarginLoss):
    """``1 - cos(x1, x2)`` for target 1, ``max(0, cos(x1, x2) - margin)`` for target -1, per row;
    ``reduction`` as the other losses (``F.cosine_embedding_loss``).
    """
    def forward(self, input1, input2, target):
        return L.cosine_embedding_loss(input1, input2, target, self.margin,
                                       reduction=self.reduction)


class MarginRankingLoss(_MarginLoss):
    """``max(0, -y * (x1 - x2) + margin)`` per element with y = 1 or -1
    (``F.margin_ranking_loss``).
    """
    def forward(self, input1, input2, target):
        return L.margin_ranking_loss(input1, input2, target, self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_MarginLoss):
    """``x`` for target 1 and ``max(0, margin - x)`` for target -1, per element; ``reduction`` as
    the other losses (``F.hinge_embedding_loss``).
    """
    def __init__(self, margin: float = 1.0, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input, target):
        return L.hinge_embedding_loss(input, target, self.margin, reduction=self.reduction)


class SoftMarginLoss(_ReducedLoss):
    """``log(1 + exp(-y * x))`` per element with y = 1 or -1 (``F.soft_margin_loss``)."""
    def forward(self, input, target):
        return L.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label one-versus-all loss: the mean over the C classes of the binary cross entropy of
    ``sigmoid(x)`` against targets in {0, 1} (N, C) (``F.multilabel_soft_margin_loss``).
    """
    def forward(self, input, target):
        return L.multilabel_soft_margin_loss(input, target, self.weight,
                                             reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss: ``sum_i max(0, margin - x[y] + x[i])**p / C`` over i != y, per
    sample (``F.multi_margin_loss``).
    """
    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None,
                 reduce=None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.dim()}D instead")
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return L.multi_margin_loss(input, target, self.p, self.margin, self.weight,
                                   reduction=self.reduction)


class TripletMarginLoss(_ReducedLoss):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with d the p-norm distance
    (``F.triplet_margin_loss``).
    """
    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                             f"{margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return L.triplet_margin_loss(anchor, positive, negative, self.margin, self.p, self.eps,
                                     self.swap, reduction=self.reduction)


class PoissonNLLLoss(_ReducedLoss):
    """Poisson negative log likelihood, ``exp(x) - y * x`` for log-rate inputs (``log_input=True``)
    (``F.poisson_nll_loss``).
    """
    def __init__(self, log_input: bool = True, full: bool = False, size_average=None,
                 eps: float = 1e-8, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return L.poisson_nll_loss(log_input, target, self.log_input, self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_ReducedLoss):
    """Gaussian negative log likelihood ``0.5 * (log(max(var, eps)) + (input - target)**2 /
    max(var, eps))`` (``full=True`` adds ``0.5 * log(2 pi)``) (``F.gaussian_nll_loss``).
    """
    def __init__(self, *, full: bool = False, eps: float = 1e-6,
                 reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return L.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class CosineSimilarity(Module):
    """``x1 . x2 / max(|x1| |x2|, eps)`` along ``dim`` (default 1), after broadcasting
    (``F.cosine_similarity``); the output drops ``dim``.
    """
    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return L.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """``||x1 - x2 + eps||_p`` along the last dim, after broadcasting (``F.pairwise_distance``)."""
    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return L.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


__all__ = ["KLDivLoss", "CosineEmbeddingLoss", "MarginRankingLoss", "HingeEmbeddingLoss",
           "SoftMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "TripletMarginLoss",
           "PoissonNLLLoss", "GaussianNLLLoss", "CosineSimilarity", "PairwiseDistance"]


class CTCLoss(_ReducedLoss):
    """Connectionist temporal classification loss of log-probabilities (T, N, C) for unaligned
    target sequences (``F.ctc_loss``: blank, reduction, zero_infinity)."""

    def __init__(self, blank: int = 0, reduction: str = "mean",
                 zero_infinity: bool = False) -> None:
        super().__init__(None, None, reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


class MultiLabelMarginLoss(_ReducedLoss):
    """Multi-class multi-label hinge loss over class-index targets padded with -1
    (``F.multilabel_margin_loss``)."""

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_ReducedLoss):
    """Triplet margin loss with any distance function (default: ``PairwiseDistance()``)
    (``F.triplet_margin_with_distance_loss``)."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        self.distance_function = distance_function if distance_function is not None \
            else PairwiseDistance()
        self.margin = margin
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)
