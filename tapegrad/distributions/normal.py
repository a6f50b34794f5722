"""Normal(loc, scale): the Gaussian, reparameterised (rsample is differentiable)."""
from __future__ import annotations as _annotations

import math

from ..tensor import Size
from ._params import LocationScale, expand_params, standard_normal_like
from .exp_family import ExponentialFamily

__all__ = ["Normal"]

_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))


class Normal(ExponentialFamily, LocationScale):
    """N(loc, scale^2), parameters broadcast together."""

    @property
    def mean(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale.pow(2)

    def expand(self, batch_shape, _instance=None):
        """A Normal with ``loc`` and ``scale`` broadcast to ``batch_shape`` (no copy of the data)."""
        return expand_params(self, Normal, ("loc", "scale"), batch_shape, _instance)

    def rsample(self, sample_shape=Size()):
        return self.loc + standard_normal_like(self, sample_shape, self.loc) * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -((value - self.loc) ** 2) / (2 * self.variance) - self.scale.log() - _LOG_SQRT_2PI

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)).erf())

    def icdf(self, value):
        return self.loc + self.scale * (2 * value - 1).erfinv() * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()
