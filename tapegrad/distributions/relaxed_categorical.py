"""RelaxedOneHotCategorical (the Concrete / Gumbel-softmax distribution) and
ExpRelaxedCategorical, its log: reparameterised relaxations of OneHotCategorical."""
from __future__ import annotations as _annotations

import math

from ..tensor import Size
from . import constraints
from ._categorical_backed import CategoricalBacked
from ._params import uniform_like
from ._relaxed import _RelaxedTransformed, _log_temperature
from .categorical import Categorical
from .transforms import ExpTransform
from .utils import clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(CategoricalBacked):
    """The log of a RelaxedOneHotCategorical: log_softmax((logits + Gumbel noise) / temperature)
    over the K categories."""

    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        self._init_from_categorical(Categorical(probs, logits, validate_args=validate_args),
                                    validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameters broadcast to ``batch_shape``."""
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        new.temperature = self.temperature
        return self._expand_categorical_into(new, batch_shape)

    def rsample(self, sample_shape=Size()):
        u = clamp_probs(uniform_like(self, sample_shape, self.logits))
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        log_scale = math.lgamma(k) + (k - 1) * _log_temperature(self.temperature)
        score = self.logits - value * self.temperature
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(_RelaxedTransformed):
    """exp of an ExpRelaxedCategorical: points of the simplex that approach one-hot samples as
    ``temperature`` goes to 0 (Gumbel-softmax); reparameterised."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)
