"""Bijective transforms of random variables (for TransformedDistribution): y = T(x), x = T.inv(y)
and log |dy/dx|, elementwise (event_dim 0), made of recorded ops."""
from __future__ import annotations

import math

from ..nn import functional as F
from . import constraints

__all__ = ["AffineTransform", "ExpTransform", "SigmoidTransform", "TanhTransform", "Transform"]


class Transform:
    """An invertible elementwise map; subclasses give _call, _inverse, log_abs_det_jacobian."""

    bijective = True
    domain = constraints.real
    codomain = constraints.real
    event_dim = 0

    def __call__(self, x):
        return self._call(x)

    @property
    def inv(self):
        """The inverse transform (``inv(y)`` computes x with ``T(x) == y``)."""
        return _Inverse(self)

    def log_abs_det_jacobian(self, x, y):
        """log |dy/dx| at each element of x (y = T(x))."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class _Inverse(Transform):
    def __init__(self, transform):
        self._transform = transform

    @property
    def inv(self):
        return self._transform

    def __call__(self, y):
        return self._transform._inverse(y)

    def log_abs_det_jacobian(self, x, y):
        return -self._transform.log_abs_det_jacobian(y, x)


class ExpTransform(Transform):
    """y = exp(x)."""
    codomain = constraints.positive

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class AffineTransform(Transform):
    """y = loc + scale * x (loc and scale numbers or broadcastable tensors)."""

    def __init__(self, loc, scale, event_dim: int = 0):
        self.loc, self.scale, self.event_dim = loc, scale, event_dim

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        if isinstance(self.scale, (int, float)):
            return x * 0 + math.log(abs(self.scale))
        return (x * 0 + self.scale.abs().log())


class TanhTransform(Transform):
    """y = tanh(x), the squashing of SAC-style policies; log |dy/dx| computed stably."""
    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return 0.5 * ((1 + y).log() - (1 - y).log())

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class SigmoidTransform(Transform):
    """y = sigmoid(x)."""
    codomain = constraints.unit_interval

    def _call(self, x):
        return x.sigmoid()

    def _inverse(self, y):
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x) - F.softplus(x)
