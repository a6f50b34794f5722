"""Weibull(scale, concentration): scale * E^(1/concentration) for E ~ Exponential(1)."""
from __future__ import annotations as _annotations

from .. import lgamma
from . import constraints
from ._location_scale import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .utils import broadcast_all

__all__ = ["Weibull"]

from .utils import euler_constant as _EULER_GAMMA


class Weibull(TransformedDistribution):
    """Weibull(scale, concentration): cdf 1 - exp(-(x / scale)^concentration) on x > 0;
    reparameterised."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(self.scale.new_ones(tuple(self.scale.shape)), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal),
                      AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Weibull, _instance)
        new.scale = self.scale.expand(*batch_shape)
        new.concentration = self.concentration.expand(*batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        base = self.base_dist.expand(batch_shape)
        transforms = [PowerTransform(exponent=new.concentration_reciprocal),
                      AffineTransform(loc=0, scale=new.scale)]
        TransformedDistribution.__init__(new, base, transforms, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.scale * lgamma(1 + self.concentration_reciprocal).exp()

    @property
    def mode(self):
        c = self.concentration
        return self.scale * ((c - 1) / c) ** c.reciprocal()

    @property
    def variance(self):
        return self.scale.pow(2) * (lgamma(1 + 2 * self.concentration_reciprocal).exp()
                                    - lgamma(1 + self.concentration_reciprocal).exp().pow(2))

    def entropy(self):
        return (_EULER_GAMMA * (1 - self.concentration_reciprocal)
                + (self.scale * self.concentration_reciprocal).log() + 1)
