"""MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril): the Gaussian over
vectors, parameterised internally by the Cholesky factor L (covariance L L^T), reparameterised."""
from __future__ import annotations as _annotations

import math

from .. import cholesky_inverse, linalg
from ..tensor import Size
from . import constraints
from ._params import standard_normal_like
from .distribution import Distribution
from .utils import lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mahalanobis(bL, bx):
    """The squared Mahalanobis distance x^T (L L^T)^-1 x of vectors ``bx`` for lower Cholesky
    factors ``bL`` whose batch shape broadcasts to theirs: PyTorch's helper of this name, which
    log_prob looks up here at each call (scripts call it, and replace it)."""
    L = bL.expand(*(tuple(bx.shape[:-1]) + tuple(bL.shape[-2:])))
    # (a triangular solve, as PyTorch's: an LU solve of the triangle loses digits)
    return linalg.solve_triangular(L, bx.unsqueeze(-1), upper=False).squeeze(-1).pow(2).sum(-1)


def _batch_broadcast(a: tuple, b: tuple) -> tuple:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return tuple(max(x, y) for x, y in zip(a, b))


def _the_one_matrix(covariance_matrix, precision_matrix, scale_tril, error=ValueError):
    """The one of the three matrix parameters given (MultivariateNormal's and Wishart's); else
    ``error``, the type each raises in PyTorch (ValueError, Wishart's AssertionError)."""
    given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
    if len(given) != 1:
        raise error("Exactly one of covariance_matrix or precision_matrix or scale_tril "
                    "may be specified.")
    return given[0]


class MultivariateNormal(Distribution):
    """N(loc, Sigma) over the last dim of loc; exactly one of the three matrix forms is given."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        matrix = _the_one_matrix(covariance_matrix, precision_matrix, scale_tril)
        if matrix.dim() < 2:
            name = ("covariance_matrix" if covariance_matrix is not None else
                    "precision_matrix" if precision_matrix is not None else "scale_tril")
            # (PyTorch's wording: "matrix" follows scale_tril alone)
            raise ValueError(f"{name}{' matrix' if name == 'scale_tril' else ''} must be at least "
                             "two-dimensional, with optional leading batch dimensions")
        batch = _batch_broadcast(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        event = tuple(loc.shape[-1:])
        # the other two forms are derived lazily; expand copies only this one, so a repr
        # names the parameter given, as PyTorch's
        self._given_matrix = ("covariance_matrix" if covariance_matrix is not None else
                              "precision_matrix" if precision_matrix is not None else
                              "scale_tril")
        setattr(self, self._given_matrix, matrix.expand(*(batch + (-1, -1))))
        self.loc = loc.expand(*(batch + (-1,)))
        super().__init__(Size(batch), Size(event), validate_args=validate_args)
        # PyTorch factors a covariance or precision matrix here, in __init__: one that is not
        # positive-definite raises LinAlgError at construction even with validate_args=False
        # (a jitter-retry loop around the constructor relies on it), not at a later sample.
        self._tril

    @lazy_property
    def _tril(self):
        """The Cholesky factor the methods use.  Cached apart from ``scale_tril`` so that, as in
        PyTorch, only a user's own access to scale_tril caches it there and shows it in repr
        (sampling or log_prob leave repr naming the given parameter alone)."""
        if "scale_tril" in self.__dict__:
            return self.scale_tril
        if "covariance_matrix" in self.__dict__:
            return linalg.cholesky(self.covariance_matrix)
        return linalg.cholesky(linalg.inv(self.precision_matrix))

    @lazy_property
    def scale_tril(self):
        return self._expanded(self._tril)

    def _expanded(self, matrix):
        """matrix expanded to batch_shape + (n, n), as PyTorch ends each derived matrix: its
        grad_fn (ExpandBackward0) is what a print of a derived matrix shows."""
        return matrix.expand(*(tuple(self._batch_shape) + tuple(self._event_shape) * 2))

    @lazy_property
    def covariance_matrix(self):
        return self._expanded(self._tril @ self._tril.mT)

    @lazy_property
    def precision_matrix(self):
        return self._expanded(cholesky_inverse(self._tril))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._tril.pow(2).sum(-1).expand(*self._extended_shape())

    def expand(self, batch_shape, _instance=None):
        """A MultivariateNormal with its parameters broadcast to ``batch_shape``."""
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch = tuple(Size(batch_shape))
        new.loc = self.loc.expand(*(batch + tuple(self.event_shape)))
        new._given_matrix = self._given_matrix
        setattr(new, self._given_matrix,
                getattr(self, self._given_matrix).expand(*(batch + (-1, -1))))
        Distribution.__init__(new, Size(batch), self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=Size()):
        eps = standard_normal_like(self, sample_shape, self.loc)
        return self.loc + (self._tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return self._tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        mahalanobis = _batch_mahalanobis(self._tril, value - self.loc)
        k = self.event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + mahalanobis) - self._half_log_det()

    def entropy(self):
        k = self.event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h if tuple(h.shape) == tuple(self.batch_shape) else h.expand(*self.batch_shape)
