"""The shared half of HalfNormal and HalfCauchy: |X| for X a distribution centred at 0 and
symmetric about it, so every law of |X| follows from X's by folding at 0."""
from __future__ import annotations as _annotations

import math

from .. import as_tensor, where, zeros_like
from . import constraints
from .transformed_distribution import TransformedDistribution


class _FoldedAtZero(TransformedDistribution):
    """|X| for X = ``base_dist``, symmetric about 0 with a ``scale``: density 2 p_X(x) on
    x >= 0, cdf 2 F_X(x) - 1, entropy H(X) - log 2.  Subclasses give the base distribution,
    ``expand`` (it names the class) and the moments."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    @property
    def scale(self):
        """The scale of the base distribution folded at 0."""
        return self.base_dist.scale

    @property
    def mode(self):
        return zeros_like(self.scale)           # a constant, as PyTorch's (no graph)

    # PyTorch's HalfCauchy reads a log_prob value in the scale's dtype (a float64 value of a
    # float32 HalfCauchy gives a float32 density); its HalfNormal promotes as usual
    _value_in_scale_dtype = False

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        if self._value_in_scale_dtype:
            value = as_tensor(value, dtype=self.scale.dtype)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
