"""LowRankMultivariateNormal(loc, cov_factor, cov_diag): the Gaussian over vectors with
covariance W W^T + diag(D), evaluated through the m x m capacitance matrix I + W^T D^-1 W
(Woodbury, matrix determinant lemma) so an n-dim event costs O(n m^2), not O(n^3)."""
from __future__ import annotations as _annotations

import math

from .. import eye, linalg
from ..tensor import Size
from . import constraints
from ._params import standard_normal_like
from .distribution import Distribution
from .utils import lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _broadcast_batch(*shapes):
    n = max(len(s) for s in shapes)
    out = []
    for dims in zip(*[(1,) * (n - len(s)) + tuple(s) for s in shapes]):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise RuntimeError("shapes do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _capacitance_tril(W, D):
    """The Cholesky factor of I + W^T D^-1 W."""
    m = W.shape[-1]
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    K = Wt_Dinv @ W + eye(m, dtype=W.dtype)
    return linalg.cholesky(K)


def _lowrank_logdet(W, D, capacitance_tril):
    """log det(W W^T + D) = log det(capacitance) + log det(D)."""
    return (2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
            + D.log().sum(-1))


def _lowrank_mahalanobis(W, D, x, capacitance_tril):
    """x^T (W W^T + D)^-1 x = x^T D^-1 x - |L^-1 W^T D^-1 x|^2 (Woodbury)."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    Wt_Dinv_x = (Wt_Dinv @ x.unsqueeze(-1))
    batch = tuple(Wt_Dinv_x.shape[:-2])
    L = capacitance_tril.expand(*(batch + tuple(capacitance_tril.shape[-2:])))
    whitened = linalg.solve_triangular(L, Wt_Dinv_x, upper=False).squeeze(-1)
    return (x.pow(2) / D).sum(-1) - whitened.pow(2).sum(-1)


class LowRankMultivariateNormal(Distribution):
    """N(loc, cov_factor cov_factor^T + diag(cov_diag)) over the last dim of loc;
    reparameterised."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {Size(event_shape)}")
        try:
            batch = _broadcast_batch(tuple(loc.shape[:-1]), tuple(cov_factor.shape[:-2]),
                                     tuple(cov_diag.shape[:-1]))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from e
        m = cov_factor.shape[-1]
        self.loc = loc.expand(*(batch + event_shape))
        self.cov_factor = cov_factor.expand(*(batch + event_shape + (m,)))
        self.cov_diag = cov_diag.expand(*(batch + event_shape))
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(Size(batch), Size(event_shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameters broadcast to ``batch_shape``."""
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch = tuple(Size(batch_shape))
        event = tuple(self.event_shape)
        new.loc = self.loc.expand(*(batch + event))
        new.cov_diag = self.cov_diag.expand(*(batch + event))
        new.cov_factor = self.cov_factor.expand(*(batch + tuple(self.cov_factor.shape[-2:])))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        Distribution.__init__(new, Size(batch), self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1)
                + self._unbroadcasted_cov_diag).expand(*self._extended_shape())

    @lazy_property
    def scale_tril(self):
        """The lower Cholesky factor of the covariance, computed as sqrt(D) chol(I + ...)."""
        n = self.event_shape[0]
        d_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / d_sqrt
        K = Dinvsqrt_W @ Dinvsqrt_W.mT + eye(n, dtype=d_sqrt.dtype)
        tril = d_sqrt * linalg.cholesky(K)
        return tril.expand(*(tuple(self._batch_shape) + (n, n)))

    @lazy_property
    def covariance_matrix(self):
        """W W^T + diag(D), shape batch_shape + (n, n)."""
        W = self._unbroadcasted_cov_factor
        cov = W @ W.mT + self._unbroadcasted_cov_diag.diag_embed()
        n = self.event_shape[0]
        return cov.expand(*(tuple(self._batch_shape) + (n, n)))

    @lazy_property
    def precision_matrix(self):
        """(W W^T + diag(D))^-1 by Woodbury: D^-1 - A^T A with A = L^-1 W^T D^-1."""
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        Wt_Dinv = W.mT / D.unsqueeze(-2)
        L = self._capacitance_tril
        batch = _broadcast_batch(tuple(L.shape[:-2]), tuple(Wt_Dinv.shape[:-2]))
        A = linalg.solve_triangular(L.expand(*(batch + tuple(L.shape[-2:]))),
                                    Wt_Dinv.expand(*(batch + tuple(Wt_Dinv.shape[-2:]))),
                                    upper=False)
        precision = D.reciprocal().diag_embed() - A.mT @ A
        n = self.event_shape[0]
        return precision.expand(*(tuple(self._batch_shape) + (n, n)))

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        m = self.cov_factor.shape[-1]
        eps_W = standard_normal_like(_Shaped(shape[:-1] + (m,)), (), self.loc)
        eps_D = standard_normal_like(self, sample_shape, self.loc)
        return (self.loc + (self._unbroadcasted_cov_factor @ eps_W.unsqueeze(-1)).squeeze(-1)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                 diff, self._capacitance_tril)
        log_det = _lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                  self._capacitance_tril)
        return -0.5 * (self.event_shape[0] * math.log(2 * math.pi) + M + log_det)

    def entropy(self):
        log_det = _lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                  self._capacitance_tril)
        H = 0.5 * (self.event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        if len(self._batch_shape) == 0:
            return H
        return H.expand(*self._batch_shape)


class _Shaped:
    """Stands in for a distribution in standard_normal_like: draws of a given full shape."""

    def __init__(self, shape):
        self._shape = shape

    def _extended_shape(self, sample_shape=()):
        return Size(tuple(sample_shape) + self._shape)
