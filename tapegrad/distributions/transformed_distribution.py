"""TransformedDistribution(base, transforms): the law of T_n(...T_1(x)) for x ~ base, with the
change-of-variables log_prob; LogNormal is Normal pushed through exp."""
from __future__ import annotations as _annotations

from ..tensor import Size
from . import constraints
from .distribution import Distribution
from .independent import Independent
from .normal import Normal
from .transforms import ComposeTransform, ExpTransform, Transform
from .utils import _sum_rightmost

__all__ = ["LogNormal", "TransformedDistribution"]


class TransformedDistribution(Distribution):
    """Samples of `base_distribution` passed through `transforms` in order.

    The event shape follows the transforms (a transform over vectors, such as
    StickBreakingTransform, turns base batch dims into event dims, through Independent); the
    log_prob subtracts each transform's log |det J| reduced over the event dims it has there.
    """

    arg_constraints: dict = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event_dim = len(base_distribution.event_shape)
        chain = ComposeTransform(self.transforms)
        if len(base_shape) < chain.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least "
                             f"{chain.domain.event_dim}, but got {Size(base_shape)}.")
        forward_shape = tuple(chain.forward_shape(Size(base_shape)))
        expanded_base_shape = tuple(chain.inverse_shape(Size(forward_shape)))
        if base_shape != expanded_base_shape:
            base_batch = expanded_base_shape[:len(expanded_base_shape) - base_event_dim]
            base_distribution = base_distribution.expand(Size(base_batch))
        reinterpreted = chain.domain.event_dim - base_event_dim
        if reinterpreted > 0:
            base_distribution = Independent(base_distribution, reinterpreted)
        self.base_dist = base_distribution
        event_dim = max(chain.codomain.event_dim,
                        base_event_dim + chain.codomain.event_dim - chain.domain.event_dim)
        cut = len(forward_shape) - event_dim
        super().__init__(Size(forward_shape[:cut]), Size(forward_shape[cut:]),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its base expanded so the batch shape is ``batch_shape``."""
        new = self._get_checked_instance(TransformedDistribution, _instance)
        batch_shape = Size(batch_shape)
        shape = Size(tuple(batch_shape) + tuple(self.event_shape))
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        base_batch = tuple(shape)[:len(shape) - len(self.base_dist.event_shape)]
        new.base_dist = self.base_dist.expand(Size(base_batch))
        new.transforms = self.transforms
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support, len(self.event_shape) - support.event_dim)
        return support

    def sample(self, sample_shape=Size()):
        from ..grad_mode import no_grad
        with no_grad():
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
        event_dim = len(self.event_shape)
        log_prob = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - _sum_rightmost(t.log_abs_det_jacobian(x, y),
                                                 event_dim - t.domain.event_dim)
            y = x
        return log_prob + _sum_rightmost(self.base_dist.log_prob(y),
                                         event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        """The base cdf turned into this one's: 1 - F where the chain decreases."""
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        for t in reversed(self.transforms):
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for t in self.transforms:
            value = t(value)
        return value


class LogNormal(TransformedDistribution):
    """exp(N(loc, scale^2)): positive, with median exp(loc)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogNormal, _instance)
        return super().expand(batch_shape, _instance=new)

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
