"""NegativeBinomial(total_count, probs | logits): successes before total_count failures."""
from __future__ import annotations as _annotations

import numpy as np

from .. import lgamma
from ..nn import functional as F
from ..tensor import Size
from . import constraints
from ._params import BinaryParameter, expand_params, numpy_draw, set_probs_or_logits

from .distribution import Distribution

__all__ = ["NegativeBinomial"]


class NegativeBinomial(BinaryParameter, Distribution):
    """The number of successes (each with probability ``probs``) before ``total_count`` failures
    (``total_count`` real and non-negative: the gamma-Poisson mixture of count models)."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        param, (count,) = set_probs_or_logits(self, probs, logits, total_count)
        self.total_count = count.type_as(param)
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A NegativeBinomial with its parameters broadcast to ``batch_shape``."""
        name = "probs" if "probs" in self.__dict__ else "logits"
        return expand_params(self, NegativeBinomial, ("total_count", name), batch_shape,
                             _instance)

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter given at construction."""
        return self.__dict__.get("probs", self.__dict__.get("logits")).shape

    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (-self.logits).sigmoid()

    def sample(self, sample_shape=Size()):
        n, p = self.total_count._array, self.probs._array

        def draw(rng, shape):
            # a Poisson whose rate is Gamma(total_count, p / (1 - p)): the mixture's definition
            with np.errstate(divide="ignore", invalid="ignore"):
                rate = rng.gamma(np.broadcast_to(n, shape), np.broadcast_to(p / (1 - p), shape))
            return rng.poisson(np.nan_to_num(rate))
        return numpy_draw(self, sample_shape, self.total_count, draw)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        unnormalised = (self.total_count * F.logsigmoid(-self.logits)
                        + value * F.logsigmoid(self.logits))
        normalisation = -lgamma(self.total_count + value) + lgamma(1.0 + value) \
            + lgamma(self.total_count)
        # total_count + value == 0 is the point mass at 0: its log-normaliser is 0, not nan
        normalisation = normalisation.masked_fill(self.total_count + value == 0, 0.0)
        return unnormalised - normalisation
