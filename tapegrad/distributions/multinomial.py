"""Multinomial(total_count, probs | logits): counts of each of K categories in total_count draws."""
from __future__ import annotations as _annotations

import numpy as np

from .. import lgamma, tensor
from .. import _random
from ..creation import _make
from ..grad_mode import no_grad
from ..tensor import Size
from . import constraints
from ._categorical_backed import CategoricalBacked
from ._params import constant_like
from .categorical import Categorical
from ._count_families import Binomial
from .utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(CategoricalBacked):
    """How many of `total_count` independent draws from a Categorical land in each category.

    Samples are float count vectors over the last dimension of `probs` / `logits` (the event);
    the other dimensions are the batch.  `total_count` must be one int for the whole batch,
    as in PyTorch; `log_prob` alone accepts any count vector.
    """

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._init_from_categorical(Categorical(probs=probs, logits=logits), validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def expand(self, batch_shape, _instance=None):
        """A Multinomial with its parameter broadcast to ``batch_shape`` (no copy of the data)."""
        new = self._get_checked_instance(Multinomial, _instance)
        new.total_count = self.total_count
        return self._expand_categorical_into(new, batch_shape)

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))   # also refuses a bare int, as PyTorch
        k = shape[-1]
        with no_grad():
            probs = self.probs.reshape(-1, k)._array.astype(np.float64)
        rng = _random._numpy_rng(None)
        draws = int(np.prod(sample_shape, dtype=np.int64))
        counts = np.empty((draws, len(probs), k), dtype=np.float64)
        for row, p in enumerate(probs):
            # numpy wants the probabilities to sum to 1 up to rounding; Categorical normalised them.
            counts[:, row] = rng.multinomial(self.total_count, p / p.sum(), size=draws)
        return constant_like(counts.reshape(shape), self.probs)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # A category of probability 0 that was drawn 0 times contributes 0 * log 0 = 0.
        logits = logits.masked_fill((value == 0) & (logits == -float("inf")), 0.0)
        log_factorial_n = lgamma(value.sum(-1) + 1)
        log_factorial_xs = lgamma(value + 1).sum(-1)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)

    def entropy(self):
        # H = -log n! - n sum_i p_i log p_i + sum_i E[log X_i!], where X_i ~ Binomial(n, p_i).
        n = self.total_count
        probs = self.probs
        per_category = Binomial(n, probs, validate_args=False)
        counts = np.arange(n + 1, dtype=probs._array.dtype).reshape((n + 1,) + (1,) * probs.ndim)
        support = _make(counts, False)                        # (n + 1, 1, ..., 1)
        binomial_probs = per_category.log_prob(support).exp()   # (n + 1, *batch, K)
        expected_log_factorials = (lgamma(support + 1) * binomial_probs).sum(0).sum(-1)
        # log n! as PyTorch computes it: from an integer tensor, so in the default float dtype.
        log_factorial_n = lgamma(tensor(n + 1))
        return n * self._categorical.entropy() - log_factorial_n + expected_log_factorials
