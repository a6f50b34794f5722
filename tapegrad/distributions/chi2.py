"""Chi2(df): the chi-squared law, Gamma(df / 2, 1 / 2)."""
from __future__ import annotations as _annotations

from . import constraints
from ._gamma_family import Gamma

__all__ = ["Chi2"]


class Chi2(Gamma):
    """The sum of ``df`` squared standard normals (``df`` real and positive): Gamma(df/2, 1/2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self):
        """The degrees of freedom, ``2 * concentration``."""
        return self.concentration * 2
