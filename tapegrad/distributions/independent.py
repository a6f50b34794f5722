"""Independent(base, n): reinterprets the rightmost n batch dims of `base` as event dims, so
log_prob sums over them (a diagonal Gaussian over vectors is Independent(Normal(...), 1))."""
from __future__ import annotations as _annotations

from ..tensor import Size
from . import constraints
from .distribution import Distribution
from .utils import _sum_rightmost

__all__ = ["Independent"]


class Independent(Distribution):
    """`base_dist` with `reinterpreted_batch_ndims` of its batch dims moved into the event."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims: int, validate_args=None):
        batch = tuple(base_distribution.batch_shape)
        if reinterpreted_batch_ndims > len(batch):
            raise ValueError("Expected reinterpreted_batch_ndims <= len(base_distribution."
                             f"batch_shape), actual {reinterpreted_batch_ndims} vs {len(batch)}")
        split = len(batch) - reinterpreted_batch_ndims
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__(Size(batch[:split]), Size(batch[split:] + tuple(base_distribution.event_shape)),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its base expanded so the batch shape is ``batch_shape``."""
        new = self._get_checked_instance(Independent, _instance)
        batch_shape = Size(batch_shape)
        event = tuple(self.event_shape)
        base_batch = tuple(batch_shape) + event[:self.reinterpreted_batch_ndims]
        new.base_dist = self.base_dist.expand(Size(base_batch))
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @constraints.dependent_property
    def support(self):
        support = self.base_dist.support
        if self.reinterpreted_batch_ndims:
            support = constraints.independent(support, self.reinterpreted_batch_ndims)
        return support

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    @property
    def has_enumerate_support(self):
        return self.base_dist.has_enumerate_support if self.reinterpreted_batch_ndims == 0 \
            else False

    def enumerate_support(self, expand: bool = True):
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def sample(self, sample_shape=Size()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=Size()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
