"""Poisson and Binomial counts: log probabilities from lgamma (recorded, so rates and
probabilities train), moments, numpy-drawn samples."""
from __future__ import annotations as _annotations

from .. import arange, lgamma, poisson, xlogy
from ..grad_mode import no_grad
from ..nn import functional as F
from ..tensor import Size
from . import constraints
from ._params import BinaryParameter, expand_params, numpy_draw, set_probs_or_logits
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Binomial", "Poisson"]


class Poisson(ExponentialFamily):
    """Poisson(rate): P(k) = rate^k exp(-rate) / k! for k = 0, 1, ..."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        self.rate, = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def expand(self, batch_shape, _instance=None):
        """A Poisson with ``rate`` broadcast to ``batch_shape``."""
        return expand_params(self, Poisson, ("rate",), batch_shape, _instance)

    def sample(self, sample_shape=Size()):
        # torch.poisson on the expanded rates, as PyTorch draws: its refusal of integer rates
        # (the docstring's Poisson(torch.tensor([4])) cannot sample) and its care of huge rates
        with no_grad():
            return poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - lgamma(value + 1)

    @property
    def _natural_params(self):
        return (self.rate.log(),)

    def _log_normalizer(self, x):
        return x.exp()


class Binomial(BinaryParameter, Distribution):
    """Binomial(total_count, probs | logits): successes in total_count independent trials."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        param, (count,) = set_probs_or_logits(self, probs, logits, total_count)
        self.total_count = count.type_as(param)
        super().__init__(param.shape, validate_args=validate_args)

    @property
    def _param(self):
        """The parameter given at construction (``probs`` or ``logits``), PyTorch's attribute:
        reading it computes neither from the other."""
        return self.__dict__.get("probs", self.__dict__.get("logits"))

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter given at construction (``probs`` or ``logits``)."""
        return self._param.shape

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def expand(self, batch_shape, _instance=None):
        """A Binomial with its parameters broadcast to ``batch_shape``."""
        name = "probs" if "probs" in self.__dict__ else "logits"
        return expand_params(self, Binomial, ("total_count", name), batch_shape, _instance)

    has_enumerate_support = True

    def enumerate_support(self, expand: bool = True):
        """The counts 0..n along a new leading dim (one n shared by the whole batch)."""
        count = int(self.total_count.max())
        if not self.total_count.min() == count:
            raise NotImplementedError(
                "Inhomogeneous total count not supported by `enumerate_support`.")
        values = arange(1 + count, dtype=self._param.dtype)
        values = values.view((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1,) + tuple(self.batch_shape)) if expand else values

    def entropy(self):
        # the sum of -p log p over the support, so one n for the whole batch
        count = int(self.total_count.max())
        if not self.total_count.min() == count:
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def sample(self, sample_shape=Size()):
        n, p = self.total_count._array.astype("int64"), self.probs._array
        return numpy_draw(self, sample_shape, self.probs,
                          lambda rng, shape: rng.binomial(n, p, size=shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_choose = lgamma(n + 1) - lgamma(value + 1) - lgamma(n - value + 1)
        # k * logits - n * log(1 + exp(logits)) is k log p + (n - k) log(1 - p), stably.
        return log_choose + value * self.logits - n * F.softplus(self.logits)
