"""Gamma, Beta, Dirichlet and StudentT: log densities, moments and entropies from lgamma and
digamma (recorded, so they train); reparameterised samples built on Gamma(alpha, 1) draws whose
gradient in alpha is implicit (_standard_gamma; Beta and Dirichlet through _dirichlet), as
PyTorch's."""
from __future__ import annotations as _annotations

import math

from .. import _core, arange, as_tensor, digamma, lgamma, stack, tensor, where, xlogy
from ..tensor import Size
from . import constraints
from ._dirichlet import sample_dirichlet
from ._params import expand_params, refuse_integral, standard_normal_like
from ._standard_gamma import regularized_gamma_p, standard_gamma
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Beta", "Dirichlet", "Gamma", "StudentT"]


# Python's numbers, as PyTorch's torch.types._Number (np.float64, a float subclass, included)
_NUMBER = (int, float, bool)


def _tiny(t) -> float:
    import numpy as np
    return float(np.finfo(t._array.dtype).tiny)


class Gamma(ExponentialFamily):
    """Gamma(concentration, rate): density rate^a x^(a-1) exp(-rate x) / Gamma(a) on x > 0."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def expand(self, batch_shape, _instance=None):
        """A Gamma with its parameters broadcast to ``batch_shape``."""
        return expand_params(self, Gamma, ("concentration", "rate"), batch_shape, _instance)

    def rsample(self, sample_shape=Size()):
        refuse_integral(self.concentration, "gamma")
        shape = tuple(self._extended_shape(sample_shape))
        value = standard_gamma(self.concentration, shape) / self.rate.expand(*shape)
        return value.clamp(min=_tiny(value))

    def log_prob(self, value):
        # PyTorch reads the value in the parameters' dtype (a list, a float64 value of a
        # float32 Gamma); xlogy makes 0 log 0 = 0, so concentration 1 has density rate at 0
        value = as_tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration, self.rate
        return xlogy(a, b) + xlogy(a - 1, value) - b * value - lgamma(a)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # PyTorch's node is its gammainc's (this one is also differentiable in the concentration)
        return _core._name_grad_fn(regularized_gamma_p(self.concentration, self.rate * value),
                                   "IgammaBackward0")

    def entropy(self):
        a = self.concentration
        return a - self.rate.log() + lgamma(a) + (1.0 - a) * digamma(a)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return lgamma(x + 1) + (x + 1) * (-y.reciprocal()).log()


def _simplex_mode(concentration):
    """The Dirichlet mode over the last dim, by PyTorch's rule: (c - 1)+ normalised; a row whose
    concentrations are all below 1 (a density unbounded at every corner) puts its whole mass on
    the argmax of the 0/0 row, which is its first entry. Beta's mode is this rule's first entry
    for (concentration1, concentration0)."""
    shifted = (concentration - 1).clamp(min=0.0)
    mode = shifted / shifted.sum(-1, True)
    all_below_one = (concentration < 1).all(-1, keepdim=True)
    corner = (mode.argmax(-1, keepdim=True) == arange(concentration.shape[-1])).to(mode.dtype)
    return where(all_below_one, corner, mode)


class Dirichlet(ExponentialFamily):
    """Dirichlet(concentration): distributions over the simplex of the last dim's size."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(Size(shape[:-1]), Size(shape[-1:]), validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        return _simplex_mode(self.concentration)

    @property
    def variance(self):
        total = self.concentration.sum(-1, True)
        return self.concentration * (total - self.concentration) / (total.pow(2) * (total + 1))

    def expand(self, batch_shape, _instance=None):
        """A Dirichlet with its concentration broadcast to ``batch_shape``."""
        new = self._get_checked_instance(Dirichlet, _instance)
        batch = tuple(Size(batch_shape))
        new.concentration = self.concentration.expand(*(batch + tuple(self.event_shape)))
        Distribution.__init__(new, Size(batch), self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=Size()):
        # PyTorch's draw (clamped inside the simplex's open interior) and implicit gradient
        refuse_integral(self.concentration, "dirichlet")
        return sample_dirichlet(self.concentration, self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        # xlogy: a concentration of 1 puts no weight on a zero coordinate (0 log 0 = 0)
        return xlogy(c - 1, value).sum(-1) + lgamma(c.sum(-1)) - lgamma(c).sum(-1)

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        total = c.sum(-1)
        return (lgamma(c).sum(-1) - lgamma(total) - (k - total) * digamma(total)
                - ((c - 1.0) * digamma(c)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return lgamma(x).sum(-1) - lgamma(x.sum(-1))


class Beta(ExponentialFamily):
    """Beta(concentration1, concentration0) on (0, 1): density x^(a-1) (1-x)^(b-1) / B(a, b).

    As PyTorch's, it is a two-coordinate Dirichlet of the stacked pair (concentration1,
    concentration0): the pair is a copy, so an in-place update of the tensors it was built
    from (an optimizer step on learnable concentrations) leaves it unchanged, and its
    concentrations are views of that copy (SelectBackward0 when they require grad)."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if isinstance(concentration1, _NUMBER) and isinstance(concentration0, _NUMBER):
            pair = tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            pair = stack([concentration1, concentration0], -1)
        # a bad concentration is reported by this Dirichlet ("parameter concentration (Tensor
        # of shape (..., 2)) of distribution Dirichlet"), as PyTorch's
        self._dirichlet = Dirichlet(pair, validate_args=validate_args)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    def __repr__(self) -> str:
        # the parameters live in the inner Dirichlet (properties here): PyTorch's repr lists
        # none, "Beta()"
        return "Beta()"

    @property
    def concentration1(self):
        """The first concentration (alpha): a view of the inner Dirichlet's pair."""
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        """The second concentration (beta): a view of the inner Dirichlet's pair."""
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def expand(self, batch_shape, _instance=None):
        """A Beta whose inner Dirichlet is broadcast to ``batch_shape``."""
        new = self._get_checked_instance(Beta, _instance)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, Size(batch_shape), validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=Size()):
        # the first coordinate of a Dirichlet(concentration1, concentration0) draw (its clamp
        # keeps it off 0 and 1; its implicit gradient)
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # the Dirichlet's density of (value, 1 - value): xlogy keeps 0 log 0 = 0 at the ends
        # and promotes a low-precision value to the parameters' dtype before the log
        return self._dirichlet.log_prob(stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return lgamma(x) + lgamma(y) - lgamma(x + y)


class StudentT(Distribution):
    """Student's t with `df` degrees of freedom, shifted by loc and scaled by scale."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        # PyTorch's StudentT builds an inner Chi2(df) first, without passing validate_args: a
        # bad df is reported by that Chi2, even when validate_args=False.
        from .chi2 import Chi2  # chi2 imports this module
        Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    @property
    def mean(self):
        m = self.loc.clone()
        m[self.df <= 1] = math.nan
        return m

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        # The formula only where it holds (df > 2), as PyTorch writes it: computed everywhere and
        # masked after, df == 2 divided by zero and its gradient was 0 * inf = nan (SILENT).
        m = self.df.clone()
        finite = self.df > 2
        m[finite] = self.scale[finite].pow(2) * self.df[finite] / (self.df[finite] - 2)
        m[(self.df <= 2) & (self.df > 1)] = math.inf
        m[self.df <= 1] = math.nan
        return m

    def expand(self, batch_shape, _instance=None):
        """A StudentT with its parameters broadcast to ``batch_shape``."""
        return expand_params(self, StudentT, ("df", "loc", "scale"), batch_shape, _instance)

    def rsample(self, sample_shape=Size()):
        # X / sqrt(Z / df) with X standard normal and Z ~ Chi2(df) = Gamma(df / 2, 1 / 2)
        shape = tuple(self._extended_shape(sample_shape))
        x = standard_normal_like(self, sample_shape, self.df)
        z = standard_gamma(0.5 * self.df, shape) * 2
        z = z.clamp(min=_tiny(z))
        return self.loc + self.scale * x * (z / self.df).rsqrt()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + lgamma(0.5 * self.df) - lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * (y.pow(2) / self.df).log1p() - z

    def entropy(self):
        half_df = 0.5 * self.df
        lbeta = lgamma(half_df) + math.lgamma(0.5) - lgamma(half_df + 0.5)
        return (self.scale.log() + (half_df + 0.5) * (digamma(half_df + 0.5) - digamma(half_df))
                + 0.5 * self.df.log() + lbeta)
