"""Kumaraswamy(concentration1, concentration0): a Beta-like law on (0, 1) with a closed-form
cdf, (1 - (1 - U)^(1/b))^(1/a) for U uniform (reparameterised)."""
from __future__ import annotations as _annotations

import math

from .. import digamma, lgamma
from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all

__all__ = ["Kumaraswamy"]

from .utils import euler_constant as _EULER_GAMMA


def _moments(a, b, n):
    """E[X^n] = b B(1 + n / a, b)."""
    arg1 = 1 + n / a
    return b * (lgamma(arg1) + lgamma(b) - lgamma(arg1 + b)).exp()


class Kumaraswamy(TransformedDistribution):
    """Density a b x^(a-1) (1 - x^a)^(b-1) on (0, 1), a = concentration1, b = concentration0."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        shape = tuple(self.concentration0.shape)
        base = Uniform(self.concentration0.new_zeros(shape), self.concentration0.new_ones(shape),
                       validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(*batch_shape)
        new.concentration0 = self.concentration0.expand(*batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        # PyTorch's formula, kept as is (it is nan where either concentration is below 1)
        a, b = self.concentration1, self.concentration0
        log_mode = b.reciprocal() * (-b).log1p() - (-b * a).log1p()
        return log_mode.masked_fill((b < 1) | (a < 1), math.nan).exp()

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        return _moments(a, b, 2) - _moments(a, b, 1).pow(2)

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = digamma(self.concentration0 + 1) + _EULER_GAMMA
        return t0 + t1 * h0 - self.concentration1.log() - self.concentration0.log()
