"""RelaxedBernoulli (the binary Concrete / Gumbel-softmax distribution) and LogitRelaxedBernoulli,
its logit: continuous, reparameterised relaxations of Bernoulli at a temperature."""
from __future__ import annotations as _annotations

from ..tensor import Size
from . import constraints
from ._params import BinaryParameter, expand_params, set_probs_or_logits, uniform_like
from ._relaxed import _RelaxedTransformed, _log_temperature
from .distribution import Distribution
from .transforms import SigmoidTransform
from .utils import broadcast_all, clamp_probs

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(BinaryParameter, Distribution):
    """The logit of a RelaxedBernoulli: (logit(U) + logits) / temperature for U uniform."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        param, _ = set_probs_or_logits(self, probs, logits)
        self._param = param
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameter broadcast to ``batch_shape``."""
        new = self._get_checked_instance(LogitRelaxedBernoulli, _instance)
        new.temperature = self.temperature
        name = "probs" if "probs" in self.__dict__ else "logits"
        new = expand_params(self, LogitRelaxedBernoulli, (name,), batch_shape, new)
        new._param = getattr(new, name)
        return new

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter given at construction."""
        return self._param.shape

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        probs = clamp_probs(self.probs.expand(*shape))
        u = clamp_probs(uniform_like(self, sample_shape, self.probs))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return _log_temperature(self.temperature) + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(_RelaxedTransformed):
    """sigmoid of a LogitRelaxedBernoulli: values in (0, 1) that approach Bernoulli samples as
    ``temperature`` goes to 0; reparameterised."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)
