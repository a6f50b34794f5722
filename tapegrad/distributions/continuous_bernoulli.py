"""ContinuousBernoulli(probs | logits): the normalised density on [0, 1] proportional to
p^x (1 - p)^(1 - x) (Loaiza-Ganem & Cunningham, 2019), the likelihood of VAEs on [0, 1] data;
reparameterised through its inverse cdf.  Near p = 1/2 the closed forms are 0/0, so inside
``lims`` Taylor expansions are used, as PyTorch does."""
from __future__ import annotations as _annotations

import math
import numbers

import numpy as np

from .. import where
from ..grad_mode import no_grad
from ..nn import functional as F
from ..tensor import Size
from . import constraints
from ._params import expand_probs_or_logits, uniform_like
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli on [0, 1] with parameter ``probs`` (or ``logits``)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None and \
                    not self.arg_constraints["probs"]._holds(self.probs):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        scalar = isinstance(probs if probs is not None else logits, numbers.Number)
        self._lims = lims
        super().__init__(Size() if scalar else self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A ContinuousBernoulli with its parameter broadcast to ``batch_shape``."""
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        return expand_probs_or_logits(self, new, batch_shape, batch_shape)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter given at construction."""
        return self._param.shape

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        """probs, with the values inside the unstable region replaced by lims[0] (so the closed
        forms, whose results there are discarded, stay finite and their gradients too)."""
        return where(self._outside_unstable_region(), self.probs,
                     self.probs.new_full((), self._lims[0]))

    def _cont_bern_log_norm(self):
        """The log normalising constant log(C(p)) as a function of probs."""
        p = self._cut_probs()
        below = where(p <= 0.5, p, p.new_zeros(()))
        above = where(p >= 0.5, p, p.new_ones(()))
        log_norm = ((-p).log1p() - p.log()).abs().log() - where(
            p <= 0.5, (-2.0 * below).log1p(), (2.0 * above - 1.0).log())
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        p = self._cut_probs()
        mus = p / (2.0 * p - 1.0) + 1.0 / ((-p).log1p() - p.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        p = self._cut_probs()
        var = p * (p - 1.0) / (1.0 - 2.0 * p).pow(2) + 1.0 / ((-p).log1p() - p.log()).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return where(self._outside_unstable_region(), var, taylor)

    def sample(self, sample_shape=Size()):
        u = uniform_like(self, sample_shape, self.probs)
        with no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=Size()):
        return self.icdf(uniform_like(self, sample_shape, self.probs))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return (-F.binary_cross_entropy_with_logits(logits, value, reduction="none")
                + self._cont_bern_log_norm())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        p = self._cut_probs()
        cdfs = (p.pow(value) * (1.0 - p).pow(1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        unbounded = where(self._outside_unstable_region(), cdfs, value)
        return where(value <= 0.0, value * 0, where(value >= 1.0, value * 0 + 1, unbounded))

    def icdf(self, value):
        p = self._cut_probs()
        return where(self._outside_unstable_region(),
                     ((-p + value * (2.0 * p - 1.0)).log1p() - (-p).log1p())
                     / (p.log() - (-p).log1p()),
                     value)

    def entropy(self):
        log_probs0 = (-self.probs).log1p()
        log_probs1 = self.probs.log()
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """The log normaliser as a function of the natural parameter (the logits)."""
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = where(outside, x, x.new_full((), self._lims[0] - 0.5))
        log_norm = (cut.exp() - 1.0).abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return where(outside, log_norm, taylor)
