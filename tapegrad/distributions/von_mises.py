"""VonMises(loc, concentration): the circular normal distribution over angles."""
from __future__ import annotations as _annotations

import math

import numpy as np

from .. import where
from ..tensor import Size
from . import constraints
from ._params import expand_params, numpy_draw
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]

# Abramowitz & Stegun 9.8.1-9.8.4: polynomial approximations of the modified Bessel functions
# I0 and I1 below and above x = 3.75 (relative error under 2e-7).
_COEF_SMALL = (
    (1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2),
    (0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3),
)
_COEF_LARGE = (
    (0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1,
     0.2635537e-1, -0.1647633e-1, 0.392377e-2),
    (0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1,
     -0.2895312e-1, 0.1787654e-1, -0.420059e-2),
)


def _horner(y, coef):
    result = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def _log_modified_bessel_fn(x, order: int = 0):
    """log I_order(x) for x > 0 and order 0 or 1, from recorded ops (differentiable)."""
    if order not in (0, 1):
        raise ValueError(f"order must be 0 or 1, got {order}")
    small = _horner((x / 3.75).pow(2), _COEF_SMALL[order])
    if order == 1:
        small = x.abs() * small
    small = small.log()
    large = x - 0.5 * x.log() + _horner(3.75 / x, _COEF_LARGE[order]).log()
    return where(x < 3.75, small, large)


class VonMises(Distribution):
    """Density exp(concentration cos(x - loc)) / (2 pi I0(concentration)); ``loc`` and values
    are angles in radians (any real, read modulo 2 pi).  The mean and variance are the circular
    ones.  Samples (in [-pi, pi)) are drawn by numpy and not reparameterised, as PyTorch's."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A VonMises with its parameters broadcast to ``batch_shape``."""
        return expand_params(self, VonMises, ("loc", "concentration"), batch_shape, _instance)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * (value - self.loc).cos() - math.log(2 * math.pi)
                - _log_modified_bessel_fn(self.concentration, order=0))

    def sample(self, sample_shape=Size()):
        loc = self.loc._array.astype(np.float64)
        kappa = self.concentration._array.astype(np.float64)

        def draw(rng, shape):
            x = rng.vonmises(np.broadcast_to(loc, shape), np.broadcast_to(kappa, shape))
            return np.mod(x + math.pi, 2 * math.pi) - math.pi
        return numpy_draw(self, sample_shape, self.loc, draw)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return 1 - (_log_modified_bessel_fn(self.concentration, order=1)
                    - _log_modified_bessel_fn(self.concentration, order=0)).exp()
