"""OneHotCategorical(probs=|logits=): a Categorical whose samples are one-hot vectors."""
from __future__ import annotations as _annotations

import numpy as np

from ..tensor import Size
from . import constraints
from ._categorical_backed import CategoricalBacked
from ._params import constant_like
from .categorical import Categorical

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


class OneHotCategorical(CategoricalBacked):
    """Events are one-hot vectors of length K (event_shape (K,)), in the parameter's dtype."""

    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._init_from_categorical(Categorical(probs, logits, validate_args=validate_args),
                                    validate_args)

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        index = probs.argmax(dim=-1)._array
        return constant_like(np.eye(probs.shape[-1], dtype=probs._array.dtype)[index], probs)

    @property
    def variance(self):
        probs = self._categorical.probs
        return probs * (1 - probs)

    def expand(self, batch_shape, _instance=None):
        """A OneHotCategorical with the same parameters broadcast to ``batch_shape``."""
        return self._expand_categorical_into(
            self._get_checked_instance(OneHotCategorical, _instance), batch_shape)

    def sample(self, sample_shape=Size()):
        index = self._categorical.sample(sample_shape)._array
        n = self._categorical._num_events
        return constant_like(np.eye(n, dtype=self._param._array.dtype)[index], self._param)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # max, not argmax: a one-hot value may be a bool tensor, which argmax refuses
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True):
        n = self._categorical._num_events
        values = np.eye(n, dtype=self._param._array.dtype).reshape(
            (n,) + (1,) * len(self._batch_shape) + (n,))
        if expand:
            values = np.broadcast_to(values, (n,) + tuple(self._batch_shape) + (n,)).copy()
        return constant_like(values, self._param)

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """A OneHotCategorical whose ``rsample`` is the straight-through estimator: the forward value
    is a one-hot sample, the gradient that of the probabilities (Bengio et al., 2013)."""

    has_rsample = True

    def rsample(self, sample_shape=Size()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
