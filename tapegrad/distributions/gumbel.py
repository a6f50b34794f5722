"""Gumbel(loc, scale): the law of maxima, loc - scale log(-log U) for U uniform."""
from __future__ import annotations as _annotations

import math

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import _finfo_of, broadcast_all

__all__ = ["Gumbel"]

from .utils import euler_constant as _EULER_GAMMA


class Gumbel(TransformedDistribution):
    """Gumbel(loc, scale): cdf exp(-exp(-(x - loc) / scale)); reparameterised through a
    uniform draw."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        fi = _finfo_of(self.loc)
        low = self.loc.new_full(tuple(self.loc.shape), float(fi.tiny))
        high = self.loc.new_full(tuple(self.loc.shape), 1 - float(fi.eps))
        # u -> -log u -> log(-log u) negated -> loc + scale * (-log(-log u))
        transforms = [ExpTransform().inv, AffineTransform(0, -self.scale.new_ones(())),
                      ExpTransform().inv, AffineTransform(self.loc, -self.scale)]
        super().__init__(Uniform(low, high, validate_args=False), transforms,
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(*batch_shape)
        new.scale = self.scale.expand(*batch_shape)
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self):
        return self.loc + self.scale * _EULER_GAMMA

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + _EULER_GAMMA)
