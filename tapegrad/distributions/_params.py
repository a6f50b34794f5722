"""Shared by the location-scale families: expand() that broadcasts named parameters, and
reparameterised draws from the global stream."""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core, _random
from ..creation import _make
from ..tensor import Size
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits


def expand_params(dist, cls, names, batch_shape, instance):
    """A copy of `dist` (of class cls) whose parameters `names` are broadcast to batch_shape."""
    new = dist._get_checked_instance(cls, instance)
    batch_shape = Size(batch_shape)
    for name in names:
        setattr(new, name, getattr(dist, name).expand(*batch_shape))
    Distribution.__init__(new, batch_shape, dist.event_shape, validate_args=False)
    new._validate_args = dist._validate_args
    return new


def expand_probs_or_logits(dist, new, batch_shape, param_shape):
    """`new` (from dist._get_checked_instance) given dist's probs and logits, those already
    computed, broadcast to param_shape (the given one, or the logits when both are, as its
    `_param`) and the batch shape batch_shape: the expand() of the probs-or-logits families."""
    for name in ("probs", "logits"):
        if name in dist.__dict__:
            expanded = getattr(dist, name).expand(*param_shape)
            setattr(new, name, expanded)
            new._param = expanded
    Distribution.__init__(new, Size(batch_shape), validate_args=False)
    new._validate_args = dist._validate_args
    return new


# What PyTorch's sampling kernels raise when the parameters (and so the draw) are of an
# integral dtype: Normal(torch.tensor([1, 2]), 1.) constructs, then its sample() raises.  numpy
# draws in float and casts, so without this check such a sample came back as integers, silently.
_INTEGRAL_REFUSALS = {
    "normal": (NotImplementedError, "\"normal_kernel_cpu\" not implemented for '{scalar}'"),
    "uniform": (NotImplementedError, "\"check_uniform_bounds\" not implemented for '{scalar}'"),
    "gamma": (NotImplementedError, "\"gamma_cpu\" not implemented for '{scalar}'"),
    "dirichlet": (NotImplementedError, "\"dirichlet\" not implemented for '{scalar}'"),
    "bernoulli": (NotImplementedError,
                  "\"bernoulli_tensor_cpu_p_\" not implemented for '{scalar}'"),
    "exponential": (RuntimeError, "Exponential distribution is a continuous probability "
                                  "distribution. dtype must be a floating point but you "
                                  "specified {scalar}"),
    "cauchy": (RuntimeError, "Cauchy distribution is a continuous probability distribution. "
                             "dtype must be a floating point but you specified {ctype}"),
    # (Laplace and Geometric ask torch.finfo of the dtype for their clamp first)
    "finfo": (TypeError, "torch.finfo() requires a floating point input type. Use torch.iinfo "
                         "to handle 'torch.finfo'"),
}


def refuse_integral(like, sampler: str) -> None:
    """Raise what PyTorch's `sampler` kernel raises when `like` (the parameter whose dtype the
    draw takes) is not floating point."""
    if like._array.dtype.kind in "biu":
        exc, message = _INTEGRAL_REFUSALS[sampler]
        # (PyTorch names the dtype by its ScalarType, 'Long', except cauchy_'s C type 'long int')
        dt = like._array.dtype
        raise exc(message.format(scalar=_core.scalar_type_name_of(dt),
                                 ctype=_core.c_type_name_of(dt)))


def uniform_like(dist, sample_shape, like, low: float = 0.0, sampler: str = "uniform"):
    """U[low, 1) draws of shape sample_shape + batch_shape + event_shape in like's dtype (a
    constant tensor: gradients flow through what is built from it).  `sampler` names the
    PyTorch kernel the family draws with, whose refusal of an integral dtype is raised."""
    refuse_integral(like, sampler)
    shape = tuple(dist._extended_shape(sample_shape))
    u = _random._uniform01(_random._numpy_rng(None), shape, like._array.dtype)
    if low:
        u = u * (1 - low) + low
    return constant_like(u, like)


def standard_normal_like(dist, sample_shape, like):
    """N(0, 1) draws of shape sample_shape + batch_shape + event_shape in like's dtype."""
    refuse_integral(like, "normal")
    shape = tuple(dist._extended_shape(sample_shape))
    return constant_like(_random._standard_normal(_random._numpy_rng(None), shape,
                                                  like._array.dtype), like)


def numpy_draw(dist, sample_shape, like, draw):
    """A non-differentiable sample: draw(rng, shape) from numpy's stream behind tapegrad's,
    for shape sample_shape + batch_shape + event_shape, in like's dtype."""
    shape = tuple(dist._extended_shape(sample_shape))
    values = draw(_random._numpy_rng(None), shape)
    return constant_like(values, like)


def constant_like(values: np.ndarray, like):
    """values (draws, an enumerated support) as a constant tensor of like's dtype.  numpy has no
    bfloat16: a bfloat16 tensor's storage is float32, so values made in the storage's dtype are
    cast (rounded) to bfloat16 here; left float32, they would promote every sample, log_prob and
    straight-through output built from them to float32."""
    t = _make(np.asarray(values, dtype=like._array.dtype), False)
    return t.to(like.dtype) if like.dtype is _core.bfloat16 else t


class LocationScale(Distribution):
    """Shared by Normal, Laplace and Cauchy: real-valued, parameterised by ``loc`` and a positive
    ``scale`` broadcast together, reparameterised, with its mode at ``loc``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mode(self):
        return self.loc


def set_probs_or_logits(dist, probs, logits, *others):
    """Store whichever of probs / logits is given (exactly one must be) on `dist`, broadcast
    with `others`; returns (that parameter, the broadcast others)."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    name, value = ("probs", probs) if probs is not None else ("logits", logits)
    param, *rest = broadcast_all(value, *others)
    setattr(dist, name, param)
    return param, rest


class BinaryParameter:
    """Mixin for families of one success probability given as probs or logits: whichever was
    not given is derived on first use."""

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)
