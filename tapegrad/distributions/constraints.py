"""Constraints: the sets a distribution's parameters and samples must lie in.

`check(value)` returns a boolean numpy array over the batch (event dimensions reduced), which the
validation in Distribution turns into PyTorch's ValueError.  The reprs are PyTorch's, since its
error messages quote them.
"""
from __future__ import annotations

import numpy as np

from .. import _core

__all__ = ["Constraint", "boolean", "dependent", "greater_than", "greater_than_eq",
           "half_open_interval", "independent", "integer_interval", "interval", "less_than",
           "nonnegative", "nonnegative_integer", "positive_definite", "lower_cholesky", "multinomial", "one_hot", "positive", "real", "real_vector", "simplex",
           "unit_interval"]


def _values(value) -> np.ndarray:
    return value._array if isinstance(value, _core.TensorBase) else np.asarray(value)


def _bound_repr(bound) -> str:
    if isinstance(bound, _core.TensorBase):
        return repr(float(bound.item())) if bound.numel() == 1 else repr(bound)
    return repr(float(bound)) if isinstance(bound, float) else repr(bound)


class Constraint:
    """A region of valid values; `event_dim` trailing dimensions form one event."""

    is_discrete = False
    event_dim = 0

    def check(self, value) -> np.ndarray:
        """A bool tensor (or array) that is True where ``value`` satisfies the constraint (one entry per
        event: ``event_dim`` trailing dims are reduced).
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__.lstrip("_") + "()"


class _Dependent(Constraint):
    """A constraint that depends on other parameters: not checked by itself."""

    def __init__(self, *, is_discrete=False, event_dim=0):
        self.is_discrete = is_discrete
        self.event_dim = event_dim

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


class _Real(Constraint):
    def check(self, value):
        v = _values(value)
        return v == v                  # everything but nan


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        v = _values(value)
        return (v == 0) | (v == 1)


class _GreaterThan(Constraint):
    """The constraint ``value > lower_bound`` (``positive`` is ``greater_than(0.)``)."""
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return _values(value) > _values(self.lower_bound)

    def __repr__(self):
        return f"GreaterThan(lower_bound={_bound_repr(self.lower_bound)})"


class _GreaterThanEq(_GreaterThan):
    """The constraint ``value >= lower_bound`` (``nonnegative`` is ``greater_than_eq(0.)``)."""
    def check(self, value):
        return _values(value) >= _values(self.lower_bound)

    def __repr__(self):
        return f"GreaterThanEq(lower_bound={_bound_repr(self.lower_bound)})"


class _IntegerGreaterThan(Constraint):
    """The constraint: ``value`` is an integer (in value) ``>= lower_bound``."""
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        v = _values(value)
        return (v % 1 == 0) & (v >= self.lower_bound)

    def __repr__(self):
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _PositiveDefinite(Constraint):
    """The constraint: each trailing square matrix is symmetric with positive eigenvalues."""
    event_dim = 2

    def check(self, value):
        v = _values(value)
        symmetric = np.isclose(v, np.swapaxes(v, -1, -2), atol=1e-6).all(axis=(-2, -1))
        with np.errstate(invalid="ignore"):
            positive = np.linalg.eigvalsh(np.where(symmetric[..., None, None], v, 0)).min(-1) > 0
        return symmetric & positive


class _LowerCholesky(Constraint):
    """The constraint: each trailing square matrix is lower triangular with a positive diagonal."""
    event_dim = 2

    def check(self, value):
        v = _values(value)
        lower = (np.triu(v, 1) == 0).all(axis=(-2, -1))
        return lower & (np.diagonal(v, axis1=-2, axis2=-1) > 0).all(-1)


class _LessThan(Constraint):
    """The constraint ``value < upper_bound``."""
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return _values(value) < _values(self.upper_bound)

    def __repr__(self):
        return f"LessThan(upper_bound={_bound_repr(self.upper_bound)})"


class _Interval(Constraint):
    """The constraint ``lower_bound <= value <= upper_bound`` (``unit_interval`` is
    ``interval(0., 1.)``).
    """
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound

    def check(self, value):
        v = _values(value)
        return (_values(self.lower_bound) <= v) & (v <= _values(self.upper_bound))

    def __repr__(self):
        return (f"{type(self).__name__.lstrip('_')}(lower_bound={_bound_repr(self.lower_bound)}, "
                f"upper_bound={_bound_repr(self.upper_bound)})")


class _HalfOpenInterval(_Interval):
    """The constraint ``lower_bound <= value < upper_bound``."""
    def check(self, value):
        v = _values(value)
        return (_values(self.lower_bound) <= v) & (v < _values(self.upper_bound))


class _IntegerInterval(_Interval):
    """The constraint: ``value`` is an integer (in value) with ``lower_bound <= value <=
    upper_bound``.
    """
    is_discrete = True

    def check(self, value):
        v = _values(value)
        return (v % 1 == 0) & super().check(value)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        v = _values(value)
        return np.all(v >= 0, axis=-1) & (np.abs(v.sum(-1) - 1) < 1e-6)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        v = _values(value)
        return np.all((v == 0) | (v == 1), axis=-1) & (v.sum(-1) == 1)


class _Multinomial(Constraint):
    """Count vectors: non-negative entries summing to at most ``upper_bound``."""
    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        v = _values(value)
        return np.all(v >= 0, axis=-1) & (v.sum(-1) <= self.upper_bound)


class _IndependentConstraint(Constraint):
    """`base_constraint` over `reinterpreted_batch_ndims` more trailing dimensions."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        self.is_discrete = base_constraint.is_discrete
        self.event_dim = base_constraint.event_dim + reinterpreted_batch_ndims

    def check(self, value):
        ok = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if n:
            ok = np.all(ok.reshape(ok.shape[:ok.ndim - n] + (-1,)), axis=-1)
        return ok

    def __repr__(self):
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


dependent = _Dependent()
real = _Real()
boolean = _Boolean()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
nonnegative_integer = _IntegerGreaterThan(0)
positive_definite = _PositiveDefinite()
lower_cholesky = _LowerCholesky()
unit_interval = _Interval(0.0, 1.0)
simplex = _Simplex()
one_hot = _OneHot()
real_vector = _IndependentConstraint(real, 1)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
interval = _Interval
half_open_interval = _HalfOpenInterval
integer_interval = _IntegerInterval
multinomial = _Multinomial
independent = _IndependentConstraint
