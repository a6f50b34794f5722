"""Bernoulli(probs=|logits=): 0/1 outcomes, 1 with probability probs."""
from __future__ import annotations as _annotations

import numpy as np

from .. import _random
from ..grad_mode import no_grad
from ..nn import functional as F
from ..tensor import Size
from . import constraints
from ._params import constant_like, expand_probs_or_logits, refuse_integral
from .exp_family import ExponentialFamily
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Bernoulli"]


class Bernoulli(ExponentialFamily):
    """1 with probability `probs` (or sigmoid(`logits`)), else 0; samples in the parameter's
    dtype."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            param = self.logits
        self._param = param
        super().__init__(param.shape, validate_args=validate_args)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter given at construction (``probs`` or ``logits``)."""
        return self._param.shape

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).type_as(self.probs)
        return mode.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def expand(self, batch_shape, _instance=None):
        """A Bernoulli with the same parameters broadcast to ``batch_shape`` (no copy of the data)."""
        new = self._get_checked_instance(Bernoulli, _instance)
        return expand_probs_or_logits(self, new, batch_shape, batch_shape)

    def sample(self, sample_shape=Size()):
        refuse_integral(self.probs, "bernoulli")
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            probs = np.broadcast_to(self.probs._array, shape)
            drawn = _random._numpy_rng(None).random(shape) < probs
        return constant_like(drawn, self.probs)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        return x.exp().log1p()

    def enumerate_support(self, expand: bool = True):
        values = np.arange(2, dtype=self._param._array.dtype).reshape(
            (2,) + (1,) * len(self._batch_shape))
        if expand:
            values = np.broadcast_to(values, (2,) + tuple(self._batch_shape)).copy()
        return constant_like(values, self._param)
