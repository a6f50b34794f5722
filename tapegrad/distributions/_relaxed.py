"""The shared half of RelaxedBernoulli and RelaxedOneHotCategorical: each is a transform of a
base distribution (its logit, its log) that holds the temperature and the parameters."""
from __future__ import annotations as _annotations

import math
import numbers

from .transformed_distribution import TransformedDistribution


def _log_temperature(t):
    """log of a temperature given as a number or a tensor."""
    return math.log(t) if isinstance(t, numbers.Number) else t.log()


class _RelaxedTransformed(TransformedDistribution):
    """A relaxed discrete distribution made by transforming ``base_dist``; its temperature and
    parameters are the base's."""

    has_rsample = True

    @property
    def temperature(self):
        """The relaxation temperature (lower: closer to the discrete distribution relaxed)."""
        return self.base_dist.temperature

    @property
    def logits(self):
        """The logits of the discrete distribution relaxed."""
        return self.base_dist.logits

    @property
    def probs(self):
        """The probabilities of the discrete distribution relaxed."""
        return self.base_dist.probs
