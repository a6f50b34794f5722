"""Dropout."""
from __future__ import annotations

from .. import functional as F
from .module import Module


class Dropout(Module):
    """Zeroes each element with probability p in training mode (scaling the rest by 1/(1-p))."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(Dropout):
    """Zeroes whole channels of (N, C, L) input with probability p in training mode."""

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(Dropout):
    """Zeroes whole channels of (N, C, H, W) input with probability p in training mode."""

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(Dropout):
    """Zeroes whole channels of (N, C, D, H, W) input with probability p in training mode."""

    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class FeatureAlphaDropout(Dropout):
    """Alpha dropout of whole channels in training mode (``F.feature_alpha_dropout``)."""

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)
