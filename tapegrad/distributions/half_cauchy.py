"""HalfCauchy(scale): |X| for X ~ Cauchy(0, scale), reparameterised."""
from __future__ import annotations as _annotations

import math

from .. import full
from ._folded import _FoldedAtZero
from ._location_scale import Cauchy
from .transforms import AbsTransform

__all__ = ["HalfCauchy"]


class HalfCauchy(_FoldedAtZero):
    """The absolute value of a centred Cauchy of scale ``scale`` (a common prior on standard
    deviations): density 2 Cauchy(x; 0, scale) on x >= 0; no finite mean."""

    _value_in_scale_dtype = True

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        # a constant, as PyTorch's (a tensor filled with inf: no graph to the scale)
        return full(self._extended_shape(), math.inf, dtype=self.scale.dtype)

    @property
    def variance(self):
        return self.base_dist.variance
