"""FisherSnedecor(df1, df2): the F distribution, (X1 / df1) / (X2 / df2) for chi-squared X."""
from __future__ import annotations as _annotations

import math

import numpy as np

from .. import lgamma
from ..tensor import Size
from . import constraints
from ._gamma_family import Gamma
from ._params import expand_params
from ._standard_gamma import standard_gamma
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """Fisher's F with ``df1`` and ``df2`` degrees of freedom on x > 0; reparameterised."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        # PyTorch's FisherSnedecor builds inner Gamma(df/2, df) for each df first, without
        # passing validate_args: a bad df is reported by that Gamma, even when validate_args=False.
        Gamma(self.df1 * 0.5, self.df1)
        Gamma(self.df2 * 0.5, self.df2)
        super().__init__(self.df1.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A FisherSnedecor with its parameters broadcast to ``batch_shape``."""
        return expand_params(self, FisherSnedecor, ("df1", "df2"), batch_shape, _instance)

    @property
    def mean(self):
        df2 = self.df2.masked_fill(self.df2 <= 2, math.nan)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return mode.masked_fill(self.df1 <= 2, math.nan)

    @property
    def variance(self):
        df2 = self.df2.masked_fill(self.df2 <= 4, math.nan)
        return (2 * df2.pow(2) * (self.df1 + df2 - 2)
                / (self.df1 * (df2 - 2).pow(2) * (df2 - 4)))

    def rsample(self, sample_shape=Size()):
        # (X1 / df1) / (X2 / df2) with X ~ Chi2(df): Gamma(df / 2, df / 2) draws are X / df
        shape = tuple(self._extended_shape(sample_shape))
        tiny = float(np.finfo(self.df1._array.dtype).tiny)
        x1 = (standard_gamma(0.5 * self.df1, shape) / (0.5 * self.df1)).clamp(min=tiny)
        x2 = (standard_gamma(0.5 * self.df2, shape) / (0.5 * self.df2)).clamp(min=tiny)
        return x1 / x2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        t1 = lgamma(ct1 + ct2) - lgamma(ct1) - lgamma(ct2)
        t2 = ct1 * (self.df1 / self.df2).log()
        t3 = (ct1 - 1) * value.log()
        t4 = (ct1 + ct2) * (self.df1 / self.df2 * value).log1p()
        return t1 + t2 + t3 - t4
