"""Wishart(df, covariance_matrix | precision_matrix | scale_tril): the law of sums of df outer
products of N(0, Sigma) vectors, over positive definite matrices."""
from __future__ import annotations as _annotations

import math
import numbers
import warnings

import numpy as np

from .. import cholesky_solve, digamma, eye, linalg, mvlgamma
from ..creation import _broadcast_shapes, _make
from ..tensor import Size
from . import constraints
from ._standard_gamma import standard_gamma
from .exp_family import ExponentialFamily
from .multivariate_normal import _the_one_matrix
from .utils import lazy_property

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p: int):
    """The multivariate digamma: sum over i < p of digamma(x - i / 2)."""
    offsets = x.new_tensor([i / 2 for i in range(p)])
    return digamma(x.unsqueeze(-1) - offsets).sum(-1)


class Wishart(ExponentialFamily):
    """Wishart(df, Sigma) over p x p positive definite matrices (df > p - 1), Sigma given by
    exactly one of its three forms.  Samples come from the Bartlett decomposition and are
    reparameterised (in the scale and, through the chi-squared draws, in df)."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        param = _the_one_matrix(covariance_matrix, precision_matrix, scale_tril, AssertionError)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading "
                             "batch dimensions")
        if isinstance(df, numbers.Number):
            batch = tuple(param.shape[:-2])
            self.df = param.new_tensor(float(df))
        else:
            batch = _broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape))
            self.df = df.expand(*batch)
        event = tuple(param.shape[-2:])
        p = event[-1]
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        if scale_tril is not None:
            self.scale_tril = param.expand(*(batch + (-1, -1)))
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(*(batch + (-1, -1)))
        else:
            self.precision_matrix = param.expand(*(batch + (-1, -1)))
        if bool((self.df < p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(Size(batch), Size(event), validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = linalg.cholesky(linalg.inv(precision_matrix))

    def expand(self, batch_shape, _instance=None):
        """A Wishart with its parameters broadcast to ``batch_shape``."""
        new = self._get_checked_instance(Wishart, _instance)
        batch = tuple(Size(batch_shape))
        cov_shape = batch + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(*cov_shape)
        new.df = self.df.expand(*batch)
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(*cov_shape))
        ExponentialFamily.__init__(new, Size(batch), self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(
            *(tuple(self._batch_shape) + tuple(self._event_shape)))

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(*(tuple(self._batch_shape) + tuple(self._event_shape)))

    @lazy_property
    def precision_matrix(self):
        identity = eye(self._event_shape[-1], dtype=self._unbroadcasted_scale_tril.dtype)
        return cholesky_solve(identity, self._unbroadcasted_scale_tril).expand(
            *(tuple(self._batch_shape) + tuple(self._event_shape)))

    def _df_matrix(self, values):
        return values.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = factor.masked_fill(factor <= 0, math.nan)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix(self.df) * (V.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def rsample(self, sample_shape=Size(), max_try_correction=None):
        """A reparameterised draw by the Bartlett decomposition: L A A^T L^T with A lower
        triangular, sqrt(Chi2(df - i)) on its diagonal and standard normals below.

        ``max_try_correction`` is PyTorch's budget of redraws for samples it finds singular
        (which happens only by underflow for df > p - 1); accepted for scripts that pass it, and
        unused: the diagonal of A is kept at least machine epsilon, so no draw is singular."""
        from .. import _random
        sample_shape = tuple(Size(sample_shape))
        p = self._event_shape[-1]
        batch = tuple(self._batch_shape)
        offsets = self.df.new_tensor([float(i) for i in range(p)])
        half_df = 0.5 * (self.df.unsqueeze(-1) - offsets)
        chi2 = standard_gamma(half_df, sample_shape + batch + (p,)) * 2
        root = chi2.sqrt().clamp(min=float(np.finfo(chi2._array.dtype).eps))
        lower = np.zeros(sample_shape + batch + (p, p), dtype=chi2._array.dtype)
        rows, cols = np.tril_indices(p, -1)
        lower[..., rows, cols] = _random._standard_normal(
            _random._numpy_rng(None), sample_shape + batch + (len(rows),), lower.dtype)
        noise = root.diag_embed() + _make(lower, False)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.mT

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        half_log_det = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        batch = _broadcast_shapes(tuple(value.shape[:-2]), tuple(L.shape[:-2]))
        solved = cholesky_solve(value.expand(*(batch + (p, p))), L.expand(*(batch + (p, p))))
        return (-nu * (p * _LOG_2 / 2 + half_log_det) - mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * linalg.slogdet(value)[1]
                - solved.diagonal(dim1=-2, dim2=-1).sum(-1) / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _LOG_2 / 2 + half_log_det) + mvlgamma(nu / 2, p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self):
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-linalg.slogdet(-2 * x)[1] + _LOG_2 * p)
                + mvlgamma(y + (p + 1) / 2, p))
