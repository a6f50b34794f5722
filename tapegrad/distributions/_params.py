"""Shared by the location-scale families: expand() that broadcasts named parameters, and
reparameterised draws from the global stream."""
from __future__ import annotations

from .. import random as _random
from ..creation import _make
from ..tensor import Size
from .distribution import Distribution


def expand_params(dist, cls, names, batch_shape, instance):
    """A copy of `dist` (of class cls) whose parameters `names` are broadcast to batch_shape."""
    new = dist._get_checked_instance(cls, instance)
    batch_shape = Size(batch_shape)
    for name in names:
        setattr(new, name, getattr(dist, name).expand(*batch_shape))
    Distribution.__init__(new, batch_shape, dist.event_shape, validate_args=False)
    new._validate_args = dist._validate_args
    return new


def uniform_like(dist, sample_shape, like, low: float = 0.0):
    """U[low, 1) draws of shape sample_shape + batch_shape + event_shape in like's dtype (a
    constant tensor: gradients flow through what is built from it)."""
    shape = tuple(dist._extended_shape(sample_shape))
    u = _random._uniform01(_random._numpy_rng(None), shape, like._array.dtype)
    if low:
        u = u * (1 - low) + low
    return _make(u, False)


def standard_normal_like(dist, sample_shape, like):
    """N(0, 1) draws of shape sample_shape + batch_shape + event_shape in like's dtype."""
    shape = tuple(dist._extended_shape(sample_shape))
    return _make(_random._standard_normal(_random._numpy_rng(None), shape, like._array.dtype),
                 False)


def numpy_draw(dist, sample_shape, like, draw):
    """A non-differentiable sample: draw(rng, shape) from numpy's stream behind tapegrad's,
    for shape sample_shape + batch_shape + event_shape, in like's dtype."""
    shape = tuple(dist._extended_shape(sample_shape))
    values = draw(_random._numpy_rng(None), shape)
    return _make(values.astype(like._array.dtype), False)
