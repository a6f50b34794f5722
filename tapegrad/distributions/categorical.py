"""Categorical(probs=|logits=): one of K categories per batch member (integer samples)."""
from __future__ import annotations as _annotations

import numpy as np

from .. import _random
from ..creation import _broadcast_shapes, _make
from ..grad_mode import no_grad
from ..tensor import Size
from . import constraints
from ._params import constant_like, expand_probs_or_logits
from .distribution import Distribution
from .utils import _finfo_of, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


def _check_one_of(probs, logits) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class Categorical(Distribution):
    """Categories 0 .. K-1 over the last dimension of `probs` (non-negative weights, normalised
    here) or `logits` (unnormalised log-probabilities); the other dimensions are the batch."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _check_one_of(probs, logits)
        # .dim() as PyTorch calls it: a numpy array or a list fails here with its AttributeError
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(self._param.shape[:-1], validate_args=validate_args)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter given at construction: ``batch_shape + (num_classes,)``."""
        return self._param.shape

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self):
        return constant_like(np.full(tuple(self._extended_shape()), np.nan), self._param)

    @property
    def variance(self):
        return self.mean

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    def expand(self, batch_shape, _instance=None):
        """A Categorical with the same parameters broadcast to ``batch_shape`` (no copy of the data)."""
        new = self._get_checked_instance(Categorical, _instance)
        new._num_events = self._num_events
        param_shape = tuple(Size(batch_shape)) + (self._num_events,)
        return expand_probs_or_logits(self, new, batch_shape, param_shape)

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)        # also refuses a bare int, as PyTorch
        count = int(np.prod(sample_shape, dtype=np.int64))
        with no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            drawn = _random.multinomial(probs_2d, max(count, 1), True)._array
        # (batch, count) -> sample_shape + batch_shape
        drawn = drawn[:, :count].T.reshape(tuple(shape))
        return _make(drawn.copy(order="C"), False)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        index = value.long()
        batch = _broadcast_shapes(tuple(index.shape), tuple(self._batch_shape))
        index = index.reshape(*index.shape, 1).expand(*batch, 1)
        log_pmf = self.logits.expand(*batch, self._num_events)
        return log_pmf.gather(-1, index).squeeze(-1)

    def entropy(self):
        # -inf logits (zero probabilities) contribute 0 * min, not 0 * -inf = nan.
        min_real = _finfo_of(self.logits).min
        p_log_p = self.logits.clamp(min=min_real) * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand: bool = True):
        n = self._num_events
        values = np.arange(n, dtype=np.int64).reshape((n,) + (1,) * len(self._batch_shape))
        if expand:
            values = np.broadcast_to(values, (n,) + tuple(self._batch_shape)).copy()
        return _make(values, False)


