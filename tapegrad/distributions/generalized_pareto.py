"""GeneralizedPareto(loc, scale, concentration): the law of threshold exceedances (peaks over a
threshold), reparameterised through its inverse cdf."""
from __future__ import annotations as _annotations

import math

from .. import where
from ..tensor import Size
from . import constraints
from ._params import expand_params, uniform_like
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


def _near_zero(x):
    # torch.isclose(x, 0) with its default tolerances: |x| <= 1e-8
    return x.abs() <= 1e-8


class GeneralizedPareto(Distribution):
    """Survival function (1 + c z)^(-1/c), z = (x - loc) / scale (exp(-z) at c = 0): the
    exponential (c = 0), Pareto (c > 0) and a uniform (c = -1) as special cases."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A GeneralizedPareto with its parameters broadcast to ``batch_shape``."""
        return expand_params(self, GeneralizedPareto, ("loc", "scale", "concentration"),
                             batch_shape, _instance)

    def rsample(self, sample_shape=Size()):
        return self.icdf(uniform_like(self, sample_shape, self.loc))

    def _safe_concentration(self):
        zero = _near_zero(self.concentration)
        return zero, where(zero, self.concentration.new_ones(()), self.concentration)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, c = self._safe_concentration()
        y = 1 / c + 1
        nonzero = where(y == 0, y, y * (c * z).log1p())
        return -self.scale.log() - where(zero, z, nonzero)

    def log_survival_function(self, value):
        """log P(X > value)."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, c = self._safe_concentration()
        return where(zero, -z, -(c * z).log1p() / c)

    def log_cdf(self, value):
        """log P(X <= value)."""
        return (-(self.log_survival_function(value).exp())).log1p()

    def cdf(self, value):
        return self.log_cdf(value).exp()

    def icdf(self, value):
        zero, c = self._safe_concentration()
        logu = (-value).log1p()
        return where(zero, self.loc - self.scale * logu,
                     self.loc + self.scale / c * (-c * logu).expm1())

    @property
    def mean(self):
        valid = self.concentration < 1
        c = where(valid, self.concentration, self.concentration.new_full((), 0.5))
        return where(valid, self.loc + self.scale / (1 - c), self.loc.new_full((), math.nan))

    @property
    def variance(self):
        valid = self.concentration < 0.5
        c = where(valid, self.concentration, self.concentration.new_full((), 0.25))
        result = self.scale.pow(2) / ((1 - c).pow(2) * (1 - 2 * c))
        return where(valid, result, self.scale.new_full((), math.nan))

    def entropy(self):
        return (self.scale.log() + self.concentration + 1).expand(*self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = where(self.concentration < 0, self.loc - self.scale / self.concentration,
                      self.loc.new_full((), math.inf))
        return constraints.interval(self.loc, upper)
