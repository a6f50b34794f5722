"""TransformedDistribution(base, transforms): the law of T_n(...T_1(x)) for x ~ base, with the
change-of-variables log_prob; LogNormal is Normal pushed through exp."""
from __future__ import annotations

from ..tensor import Size
from . import constraints
from .distribution import Distribution
from .normal import Normal
from .transforms import ExpTransform, Transform

__all__ = ["LogNormal", "TransformedDistribution"]


class TransformedDistribution(Distribution):
    """Samples of `base_distribution` passed through `transforms` (elementwise) in order."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            transforms = [transforms]
        elif not all(isinstance(t, Transform) for t in transforms):
            raise ValueError("transforms must be a Transform or a list of Transforms")
        self.base_dist = base_distribution
        self.transforms = list(transforms)
        super().__init__(base_distribution.batch_shape, base_distribution.event_shape,
                         validate_args=validate_args)

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def support(self):
        return self.transforms[-1].codomain if self.transforms else self.base_dist.support

    def sample(self, sample_shape=Size()):
        x = self.base_dist.sample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def rsample(self, sample_shape=Size()):
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            log_prob = log_prob - t.log_abs_det_jacobian(x, y)
            y = x
        return log_prob + self.base_dist.log_prob(y)

    def cdf(self, value):
        for t in reversed(self.transforms):
            value = t.inv(value)
        return self.base_dist.cdf(value)


class LogNormal(TransformedDistribution):
    """exp(N(loc, scale^2)): positive, with median exp(loc)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(),
                         validate_args=validate_args)

    @property
    def loc(self):
        """The mean of the underlying Normal (the log of the median)."""
        return self.base_dist.loc

    @property
    def scale(self):
        """The standard deviation of the underlying Normal."""
        return self.base_dist.scale

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.pow(2)).exp()

    @property
    def variance(self):
        s2 = self.scale.pow(2)
        return s2.expm1() * (2 * self.loc + s2).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc

    def __repr__(self) -> str:
        return f"LogNormal({self.base_dist!r})"
