"""Exponential, Laplace, Cauchy (continuous, reparameterised by the inverse cdf) and Geometric
(the number of failures before the first success): log_prob, cdf, icdf, entropy, moments."""
from __future__ import annotations as _annotations

import math

from .. import full, zeros_like
from ..tensor import Size
from . import constraints
from ._params import BinaryParameter, LocationScale, expand_params, set_probs_or_logits, uniform_like
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Cauchy", "Exponential", "Geometric", "Laplace"]


class Exponential(ExponentialFamily):
    """Exponential(rate): density rate * exp(-rate * x) on x >= 0."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        self.rate, = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return zeros_like(self.rate)            # a constant, as PyTorch's (no graph)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def expand(self, batch_shape, _instance=None):
        """An Exponential with ``rate`` broadcast to ``batch_shape``."""
        return expand_params(self, Exponential, ("rate",), batch_shape, _instance)

    def rsample(self, sample_shape=Size()):
        u = uniform_like(self, sample_shape, self.rate, sampler="exponential")
        return -(1 - u).log() / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value):
        return -(1 - value).log() / self.rate

    def entropy(self):
        return 1.0 - self.rate.log()

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -(-x).log()


class Laplace(LocationScale):
    """Laplace(loc, scale): density exp(-|x - loc| / scale) / (2 scale)."""

    @property
    def mean(self):
        return self.loc

    @property
    def stddev(self):
        return math.sqrt(2) * self.scale

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    def expand(self, batch_shape, _instance=None):
        """A Laplace with ``loc`` and ``scale`` broadcast to ``batch_shape``."""
        return expand_params(self, Laplace, ("loc", "scale"), batch_shape, _instance)

    def rsample(self, sample_shape=Size()):
        return self.icdf(uniform_like(self, sample_shape, self.loc, low=1e-7, sampler="finfo"))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = value - self.loc
        return 0.5 - 0.5 * z.sign() * (-(z.abs()) / self.scale).expm1()

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self):
        return 1 + (2 * self.scale).log()


class Cauchy(LocationScale):
    """Cauchy(loc, scale): density 1 / (pi scale (1 + ((x - loc) / scale)^2)); no mean."""

    # constants, as PyTorch's (tensors filled with nan / inf: no graph to the parameters)
    @property
    def mean(self):
        return full(self._extended_shape(), math.nan, dtype=self.loc.dtype)

    @property
    def variance(self):
        return full(self._extended_shape(), math.inf, dtype=self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        """A Cauchy with ``loc`` and ``scale`` broadcast to ``batch_shape``."""
        return expand_params(self, Cauchy, ("loc", "scale"), batch_shape, _instance)

    def rsample(self, sample_shape=Size()):
        return self.icdf(uniform_like(self, sample_shape, self.loc, low=1e-7, sampler="cauchy"))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (-math.log(math.pi) - self.scale.log()
                - (((value - self.loc) / self.scale) ** 2).log1p())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value):
        return ((value - 0.5) * math.pi).tan() * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


class Geometric(BinaryParameter, Distribution):
    """Geometric(probs or logits): the number of failures before the first success."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        param, _ = set_probs_or_logits(self, probs, logits)
        super().__init__(param.shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            # beyond unit_interval, as PyTorch: a success probability of 0 never stops
            valid = self.probs > 0
            if not bool(valid.all()):
                raise ValueError(
                    f"Expected parameter probs ({type(self.probs).__name__} of shape "
                    f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but "
                    f"found invalid values:\n{self.probs.detach()[~valid]}")

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return zeros_like(self.probs)           # a constant, as PyTorch's (no graph)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def expand(self, batch_shape, _instance=None):
        """A Geometric with its parameter broadcast to ``batch_shape``."""
        name = "probs" if "probs" in self.__dict__ else "logits"
        return expand_params(self, Geometric, (name,), batch_shape, _instance)

    def sample(self, sample_shape=Size()):
        from ..grad_mode import no_grad
        with no_grad():
            u = uniform_like(self, sample_shape, self.probs, low=1e-7, sampler="finfo")
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # Unclamped, as PyTorch: a sure success (p = 1) has log-probability 0 at k = 0 (0 * log 0
        # is taken as 0) and -inf at k > 0.
        value, probs = broadcast_all(value, self.probs)
        probs = probs.masked_fill((probs == 1) & (value == 0), 0.0)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        from ..nn.functional import binary_cross_entropy_with_logits
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
