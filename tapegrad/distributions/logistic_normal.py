"""LogisticNormal(loc, scale): a Normal over R^(K-1) mapped onto the K-simplex by stick
breaking (a reparameterised alternative to the Dirichlet)."""
from __future__ import annotations as _annotations

from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """StickBreakingTransform of Normal(loc, scale) over the last dim: events on the simplex
    one longer than loc's last dim."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand([1])
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        """The mean of the underlying Normal (over K - 1 coordinates)."""
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        """The standard deviation of the underlying Normal."""
        return self.base_dist.base_dist.scale
