"""Transforms of random variables, as torch.distributions.transforms has them: y = T(x), the
inverse x = T.inv(y) and log |det dy/dx|, each made of recorded ops (so TransformedDistribution's
log_prob and rsample train).

A transform acts on events of `domain.event_dim` dims and yields events of `codomain.event_dim`
dims; its log_abs_det_jacobian has the batch shape (the event dims reduced).  With cache_size=1 a
transform remembers its last (x, y) pair, so `T.inv(T(x))` returns x itself (PyTorch's caching,
which TransformedDistribution.log_prob of its own rsample relies on for exactness).
"""
from __future__ import annotations as _annotations

import math
import numbers
import operator
from functools import reduce


from .._extra_ops import broadcast_shapes
from ..nn import functional as F
from ..tensor import Size
from . import constraints
from .utils import _finfo_of, _sum_rightmost, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
           "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
           "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
           "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform",
           "Transform", "identity_transform"]


def _clipped_sigmoid(x):
    """sigmoid(x) kept inside [tiny, 1 - eps]: its log and log(1 - .) stay finite."""
    fi = _finfo_of(x)
    return x.sigmoid().clamp(min=float(fi.tiny), max=1.0 - float(fi.eps))


class Transform:
    """An invertible (or at least computable) map y = T(x) between the constraint sets
    ``domain`` and ``codomain``.

    Subclasses give ``_call`` (and ``_inverse`` when invertible) and ``log_abs_det_jacobian``.
    ``cache_size=1`` keeps the latest (x, y) pair, so ``T.inv(T(x))`` is ``x`` itself.
    """

    bijective = False
    # The constraint the inputs x satisfy (its event_dim: the dims one event has), and the one
    # the outputs y = T(x) satisfy.  Declared, not defaulted, as in PyTorch: a subclass sets them
    # as class attributes, properties, or plain instance attributes in __init__ (Dreamer's
    # TanhBijector does `self.domain = constraints.real`), which a base-class property would forbid.
    domain: constraints.Constraint
    codomain: constraints.Constraint

    def __init__(self, cache_size: int = 0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y = (None, None)
        self._inv = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_inv"] = None
        return state

    @property
    def event_dim(self) -> int:
        """The number of trailing dims forming one event (domain's and codomain's agree)."""
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        """The inverse transform (``T.inv(y)`` is the x with ``T(x) == y``); cached on T."""
        inv = self.__dict__.get("_inv")
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = inv
        return inv

    @property
    def sign(self):
        """+1 or -1: whether a monotone elementwise transform increases or decreases."""
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1):
        """This transform with the given cache size (itself when it already has it)."""
        if self.__dict__.get("_cache_size", 0) == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x):
        """y = T(x) (the cached y when x is the last input and caching is on)."""
        if self.__dict__.get("_cache_size", 0) == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y):
        if self.__dict__.get("_cache_size", 0) == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        """log |det dy/dx| for y = T(x), one value per event (event dims reduced)."""
        raise NotImplementedError

    def forward_shape(self, shape):
        """The shape of T(x) for x of shape ``shape``."""
        return shape

    def inverse_shape(self, shape):
        """The shape of T.inv(y) for y of shape ``shape``."""
        return shape

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    """The inverse of a transform: forward is its _inverse, with the negated log-det."""

    def __init__(self, transform):
        super().__init__(cache_size=transform.__dict__.get("_cache_size", 0))
        self._inv = transform

    @property
    def domain(self):
        """The constraint the inputs x satisfy."""
        return self._inv.codomain

    @property
    def codomain(self):
        """The constraint the outputs y = T(x) satisfy."""
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self):
        return f"{type(self).__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """The transforms ``parts`` applied in order (``ComposeTransform([])`` is the identity); the
    log-det sums the parts', each reduced over the event dims the chain has at that point."""

    def __init__(self, parts, cache_size: int = 0):
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self):
        """The constraint the inputs x satisfy."""
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim = max(event_dim + part.domain.event_dim - part.codomain.event_dim,
                            part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self):
        """The constraint the outputs y = T(x) satisfy."""
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim = max(event_dim + part.codomain.event_dim - part.domain.event_dim,
                            part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self):
        inv = self.__dict__.get("_inv")
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = inv
            inv._inv = self
        return inv

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return x * 0
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms = []
        event_dim = self.domain.event_dim
        for part, xi, yi in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(_sum_rightmost(part.log_abs_det_jacobian(xi, yi),
                                        event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return reduce(operator.add, terms)

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{type(self).__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """``base_transform`` with ``reinterpreted_batch_ndims`` more trailing dims counted as one
    event: the log-det is summed over them."""

    def __init__(self, base_transform, reinterpreted_batch_ndims: int, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @property
    def domain(self):
        """The constraint the inputs x satisfy."""
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        """The constraint the outputs y = T(x) satisfy."""
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                              self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class ReshapeTransform(Transform):
    """Reshapes the rightmost ``in_shape`` dims of an event to ``out_shape`` (same number of
    elements); the log-det is zero."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size: int = 0):
        self.in_shape = Size(in_shape)
        self.out_shape = Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self):
        """The constraint the inputs x satisfy."""
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self):
        """The constraint the outputs y = T(x) satisfy."""
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch + tuple(self.out_shape))

    def _inverse(self, y):
        batch = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.new_zeros(batch)

    def _reshaped(self, shape, source, target):
        # Slices and concatenation act on the shape object given, as in PyTorch: a tuple in
        # gives a torch.Size out (Size.__radd__), a list never equals the Size `source`.
        if len(shape) < len(source):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(source)
        if shape[cut:] != source:
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {source}")
        return shape[:cut] + target

    def forward_shape(self, shape):
        return self._reshaped(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._reshaped(shape, self.out_shape, self.in_shape)


class _ParameterlessTransform(Transform):
    """A transform without parameters: any two of its kind are equal.

    "Its kind" is the class that derives from this one directly (torch's
    ``isinstance(other, ExpTransform)``), so an instance of a user's subclass of ExpTransform
    still equals a plain ExpTransform, both ways round.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if _ParameterlessTransform in cls.__bases__:
            cls._equality_kind = cls

    def __eq__(self, other):
        return isinstance(other, self._equality_kind)

    __hash__ = object.__hash__


class ExpTransform(_ParameterlessTransform):
    """y = exp(x)."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """y = x ** exponent on positive numbers."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        from .utils import broadcast_all
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        if not isinstance(other, PowerTransform):
            return False
        return bool((self.exponent == other.exponent).all().item())

    __hash__ = object.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        # (torch.broadcast_shapes itself: a mismatch raises its RuntimeError and message)
        return broadcast_shapes(shape, getattr(self.exponent, "shape", ()))

    def inverse_shape(self, shape):
        return self.forward_shape(shape)


class SigmoidTransform(_ParameterlessTransform):
    """y = sigmoid(x), kept inside (0, 1) at the dtype's precision."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def _call(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        fi = _finfo_of(y)
        y = y.clamp(min=float(fi.tiny), max=1.0 - float(fi.eps))
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x) - F.softplus(x)


class SoftplusTransform(_ParameterlessTransform):
    """y = log(1 + exp(x)), onto the positive numbers."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x)


class TanhTransform(_ParameterlessTransform):
    """y = tanh(x), the squashing of SAC-style policies; log |dy/dx| computed stably as
    2 (log 2 - x - softplus(-2x))."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        # atanh itself, as PyTorch's (unclamped: +-1 give +-inf); the log1p form of the same
        # function rounded differently in a quarter of float32 inputs
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class AbsTransform(_ParameterlessTransform):
    """y = |x| (not injective: the inverse returns the positive preimage)."""

    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """y = loc + scale * x (loc and scale numbers or broadcastable tensors), over events of
    ``event_dim`` dims."""

    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        """The constraint the inputs x satisfy."""
        if self._event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self._event_dim)

    @property
    def codomain(self):
        """The constraint the outputs y = T(x) satisfy."""
        return self.domain

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
                if a != b:
                    return False
            elif not bool((a == b).all().item()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = tuple(x.shape)
        if isinstance(self.scale, numbers.Real):
            result = x.new_full(shape, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self._event_dim:
            result = _sum_rightmost(result, self._event_dim)
            shape = shape[:len(shape) - self._event_dim]
        return result.expand(*shape)

    def forward_shape(self, shape):
        # (torch.broadcast_shapes itself: a mismatch raises its RuntimeError and message)
        return broadcast_shapes(shape, getattr(self.loc, "shape", ()),
                                getattr(self.scale, "shape", ()))

    def inverse_shape(self, shape):
        return self.forward_shape(shape)


class SoftmaxTransform(_ParameterlessTransform):
    """x -> softmax(x) over the last dim (onto the simplex; not injective: the inverse is log)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        probs = (x - x.max(-1, True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    inverse_shape = forward_shape


def _ones_cumsum(x, n):
    """1, 2, ..., n in x's dtype (a constant)."""
    return x.new_ones(n).cumsum(-1)


class StickBreakingTransform(_ParameterlessTransform):
    """Maps a real vector of length K - 1 onto the K-simplex by stick breaking (a bijection,
    unlike softmax): the basis of biject_to(simplex)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _call(self, x):
        k = x.shape[-1]
        offset = (k + 1) - _ones_cumsum(x, k)
        z = _clipped_sigmoid(x - offset.log())
        z_cumprod = (1 - z).cumprod(-1)
        ones = x.new_ones(tuple(x.shape[:-1]) + (1,))
        from .. import cat
        return cat([z, ones], -1) * cat([ones, z_cumprod], -1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        k = y_crop.shape[-1]
        offset = y.shape[-1] - _ones_cumsum(y, k)
        sf = (1 - y_crop.cumsum(-1)).clamp(min=float(_finfo_of(y).tiny))
        return y_crop.log() - sf.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        k = x.shape[-1]
        offset = (k + 1) - _ones_cumsum(x, k)
        x = x - offset.log()
        return (-x + F.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        # (on the shape object given: a tuple stays a tuple, a Size a Size, as in PyTorch)
        return shape[:-1] + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape[:-1] + (shape[-1] - 1,)


class LowerCholeskyTransform(_ParameterlessTransform):
    """An unconstrained square matrix -> a lower-triangular one with positive diagonal (the
    strictly lower part kept, the diagonal exponentiated)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(_ParameterlessTransform):
    """An unconstrained square matrix -> L L^T with L its LowerCholeskyTransform (positive
    definite)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        lower = LowerCholeskyTransform()(x)
        return lower @ lower.mT

    def _inverse(self, y):
        from .. import linalg
        return LowerCholeskyTransform().inv(linalg.cholesky(y))


class CorrCholeskyTransform(_ParameterlessTransform):
    """A real vector of length D(D-1)/2 -> the Cholesky factor of a D x D correlation matrix
    (lower triangular, positive diagonal, rows of unit norm), by a signed stick breaking of
    tanh(x) row by row."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        from .. import cat, eye
        x = x.tanh()
        eps = float(_finfo_of(x).eps)
        x = x.clamp(min=-1 + eps, max=1 - eps)
        r = vec_to_tril_matrix(x, diag=-1)
        # y = sign(r) sqrt(z * prod(1 - z) of the earlier entries) = r * sqrt(prod(1 - r^2))
        remaining = (1 - r.pow(2)).sqrt().cumprod(-1)
        r = r + eye(r.shape[-1], dtype=r.dtype)
        ones = r.new_ones(tuple(r.shape[:-1]) + (1,))
        return r * cat([ones, remaining[..., :-1]], -1)

    def _inverse(self, y):
        from .. import cat
        y_cumsum = 1 - (y * y).cumsum(-1)
        ones = y.new_ones(tuple(y.shape[:-1]) + (1,))
        shifted = cat([ones, y_cumsum[..., :-1]], -1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(shifted, diag=-1).sqrt()
        return (t.log1p() - (-t).log1p()) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        # ``intermediates`` is in PyTorch's signature and unused there too: everything needed
        # is recomputed from x and y
        y1m_cumsum = 1 - (y * y).cumsum(-1)
        stick_breaking = 0.5 * tril_matrix_to_vec(y1m_cumsum, diag=-2).log().sum(-1)
        tanh_part = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking + tanh_part

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return shape[:-1] + (d, d)          # (the given shape's type, as StickBreaking's)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return shape[:-2] + (d * (d - 1) // 2,)


def _check_cat_dim(z, dim, size, name, expected):
    """Cat/StackTransform's input check, with PyTorch's AssertionError and messages."""
    if not -z.dim() <= dim < z.dim():
        raise AssertionError(f"dim {dim} out of range for tensor with {z.dim()} dimensions")
    if z.shape[dim] != size:
        raise AssertionError(f"{name}.size({dim}) = {z.shape[dim]} must equal {expected}")


class CatTransform(Transform):
    """Transforms ``tseq`` applied to consecutive slices (of ``lengths``, default 1 each) of the
    input along ``dim``, concatenated back (the functional analogue of torch.cat)."""

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise ValueError("tseq must be a sequence of Transforms")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError("lengths must have one entry per transform")
        self.dim = dim

    @property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self):
        """The total length along ``dim`` the transforms cover."""
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _check(self, z, name):
        # PyTorch checks with AssertionError (``name`` is x for an input, y for an output)
        _check_cat_dim(z, self.dim, self.length, name, f"length {self.length}")

    def _map(self, x, fn, name):
        from .. import cat
        self._check(x, name)
        pieces, start = [], 0
        for t, length in zip(self.transforms, self.lengths):
            pieces.append(fn(t, x.narrow(self.dim, start, length)))
            start += length
        return cat(pieces, dim=self.dim)

    def _call(self, x):
        return self._map(x, lambda t, xs: t(xs), "x")

    def _inverse(self, y):
        return self._map(y, lambda t, ys: t.inv(ys), "y")

    def log_abs_det_jacobian(self, x, y):
        from .. import cat
        self._check(x, "x")
        self._check(y, "y")
        pieces, start = [], 0
        for t, length in zip(self.transforms, self.lengths):
            xs = x.narrow(self.dim, start, length)
            ys = y.narrow(self.dim, start, length)
            lad = t.log_abs_det_jacobian(xs, ys)
            if t.event_dim < self.event_dim:
                lad = _sum_rightmost(lad, self.event_dim - t.event_dim)
            pieces.append(lad)
            start += length
        dim = self.dim
        if dim >= 0:
            dim = dim - x.dim()
        dim = dim + self.event_dim
        if dim < 0:
            return cat(pieces, dim=dim)
        return reduce(operator.add, pieces)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        """The constraint the inputs x satisfy."""
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self):
        """The constraint the outputs y = T(x) satisfy."""
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Transforms ``tseq`` applied to the slices ``x.select(dim, i)``, stacked back (the
    functional analogue of torch.stack)."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise ValueError("tseq must be a sequence of Transforms")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, z, name):
        # PyTorch checks with AssertionError (``name`` is x for an input, y for an output)
        n = len(self.transforms)
        _check_cat_dim(z, self.dim, n, name, f"len(transforms) {n}")
        return [z.select(self.dim, i) for i in range(z.shape[self.dim])]

    def _call(self, x):
        from .. import stack
        return stack([t(xs) for xs, t in zip(self._slices(x, "x"), self.transforms)], dim=self.dim)

    def _inverse(self, y):
        from .. import stack
        return stack([t.inv(ys) for ys, t in zip(self._slices(y, "y"), self.transforms)],
                     dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        from .. import stack
        pieces = [t.log_abs_det_jacobian(xs, ys) for xs, ys, t in
                  zip(self._slices(x, "x"), self._slices(y, "y"), self.transforms)]
        return stack(pieces, dim=self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        """The constraint the inputs x satisfy."""
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self):
        """The constraint the outputs y = T(x) satisfy."""
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """x -> distribution.cdf(x), onto the unit interval (a copula-style transform); the
    log-det is the distribution's log density."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        """The constraint the inputs x satisfy."""
        return self.distribution.support

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return type(self)(self.distribution, cache_size=cache_size)

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)
