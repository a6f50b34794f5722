"""HalfNormal(scale): |X| for X ~ Normal(0, scale), reparameterised."""
from __future__ import annotations as _annotations

import math

from ._folded import _FoldedAtZero
from .normal import Normal
from .transforms import AbsTransform

__all__ = ["HalfNormal"]


class HalfNormal(_FoldedAtZero):
    """The absolute value of a centred Normal of standard deviation ``scale``: density
    2 N(x; 0, scale) on x >= 0."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Normal(0, scale, validate_args=False), AbsTransform(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)
