"""Dropout modules, each a direct subclass of PyTorch's private _DropoutNd (p, inplace and the
repr): `isinstance(m, nn.Dropout)` is False for a Dropout2d, as in PyTorch."""
from __future__ import annotations as _annotations

from .. import _extra_activations as A
from .. import functional as F
from .module import Module


class _DropoutNd(Module):
    """The state every dropout module shares: the probability ``p`` and ``inplace``."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zeroes each element with probability p in training mode (scaling the rest by 1/(1-p));
    with ``inplace=True`` the input itself is overwritten, as in PyTorch."""

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zeroes whole channels of (N, C, L) input with probability p in training mode."""

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zeroes whole channels of (N, C, H, W) input with probability p in training mode."""

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zeroes whole channels of (N, C, D, H, W) input with probability p in training mode."""

    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps the mean and variance of SELU activations (``F.alpha_dropout``) in
    training mode; identity in eval mode. Input of any shape; the output has the same shape.
    PyTorch's module ignores ``inplace`` here too.
    """

    def forward(self, input):
        return A.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels in training mode (``F.feature_alpha_dropout``)."""

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)


__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]
