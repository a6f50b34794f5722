"""LKJCholesky(dim, concentration): the LKJ prior over correlation matrices, expressed on their
lower Cholesky factors (Lewandowski, Kurowicka & Joe, 2009), sampled by the onion method."""
from __future__ import annotations as _annotations

import math

import numpy as np

from .. import lgamma, mvlgamma
from ..creation import _make
from ..tensor import Size
from . import constraints
from .distribution import Distribution
from ._gamma_family import Beta
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The law of L with L L^T ~ LKJ(concentration) over dim x dim correlation matrices
    (density of the correlation matrix proportional to det^(concentration - 1)).  Samples are
    not reparameterised, as PyTorch's."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # the onion method's Beta draws: row i's squared norm below the diagonal is
        # Beta(i / 2, concentration + (dim - 2 - i + 1) / 2) (row 0: a placeholder)
        offset = np.concatenate([[0.0], np.arange(dim - 1, dtype=np.float64)])
        offset_t = self.concentration.new_tensor(offset.tolist())
        marginal = self.concentration + 0.5 * (dim - 2)
        self._beta = Beta(offset_t + 0.5, marginal.unsqueeze(-1) - 0.5 * offset_t)
        super().__init__(self.concentration.shape, Size((dim, dim)),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """An LKJCholesky with its concentration broadcast to ``batch_shape``."""
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(*batch_shape)
        new._beta = self._beta.expand(Size(tuple(batch_shape) + (self.dim,)))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=Size()):
        from .. import _random
        y = self._beta.sample(sample_shape)._array[..., None]
        shape = tuple(self._extended_shape(sample_shape))
        rng = _random._numpy_rng(None)
        u = np.tril(_random._standard_normal(rng, shape, y.dtype), -1)
        with np.errstate(invalid="ignore", divide="ignore"):
            u = u / np.linalg.norm(u, axis=-1, keepdims=True)
        u[..., 0, :] = 0.0                     # the first row has nothing below the diagonal
        w = np.sqrt(y) * u
        diag = np.sqrt(np.maximum(1 - (w ** 2).sum(-1), np.finfo(w.dtype).tiny))
        idx = np.arange(self.dim)
        w[..., idx, idx] += diag
        return _make(np.ascontiguousarray(w), False)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = self.concentration.new_tensor(np.arange(2, self.dim + 1).tolist())
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalised = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normaliser = (0.5 * dm1 * math.log(math.pi) + mvlgamma(alpha - 0.5, dm1)
                      - lgamma(alpha) * dm1)
        return unnormalised - normaliser
