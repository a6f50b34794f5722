"""InverseGamma(concentration, rate): 1 / X for X ~ Gamma(concentration, rate)."""
from __future__ import annotations as _annotations

import math

from .. import digamma, lgamma, where
from . import constraints
from ._gamma_family import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """Density rate^a x^(-a-1) exp(-rate / x) / Gamma(a) on x > 0 (a conjugate prior on
    variances); reparameterised through Gamma's samples."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -base.rate.new_ones(())
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self):
        """The shape parameter of the Gamma inverted."""
        return self.base_dist.concentration

    @property
    def rate(self):
        """The rate of the Gamma inverted (the scale of this distribution)."""
        return self.base_dist.rate

    @property
    def mean(self):
        result = self.rate / (self.concentration - 1)
        return where(self.concentration > 1, result, math.inf)

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        a = self.concentration
        result = self.rate.pow(2) / ((a - 1).pow(2) * (a - 2))
        return where(a > 2, result, math.inf)

    def entropy(self):
        a = self.concentration
        return a + self.rate.log() + lgamma(a) - (1 + a) * digamma(a)
