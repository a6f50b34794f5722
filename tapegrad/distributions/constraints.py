"""Constraints: the sets a distribution's parameters and samples must lie in.

`check(value)` returns a bool tensor over the batch (event dimensions reduced), as PyTorch's does;
`_satisfied(value)`, the same answer as a numpy array, is what each constraint defines and what the
validation in Distribution reads (turning a False into PyTorch's ValueError).  The reprs are PyTorch's, since its
error messages quote them.
"""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core, _vmap

__all__ = ["Constraint", "MixtureSameFamilyConstraint", "boolean", "cat", "corr_cholesky",
           "dependent", "dependent_property", "greater_than", "greater_than_eq",
           "half_open_interval", "independent", "integer_interval", "interval", "is_dependent",
           "less_than", "lower_cholesky", "lower_triangular", "multinomial", "nonnegative",
           "nonnegative_integer", "one_hot", "positive", "positive_definite",
           "positive_integer", "positive_semidefinite", "real", "real_vector", "simplex",
           "square", "stack", "symmetric", "unit_interval"]


def _values(value) -> np.ndarray:
    # A vmap's BatchedTensor is checked whole: every sample of its batch (dim 0, before the
    # event dims the constraints reduce over) must hold, as each would un-mapped.
    while isinstance(value, _vmap.BatchedTensor):
        value = value.value
    return value._array if isinstance(value, _core.TensorBase) else np.asarray(value)


def _last_dim_sums(value, v: np.ndarray) -> np.ndarray:
    """value.sum(-1) as PyTorch computes it: a tensor's sum is tapegrad's, in the tensor's dtype
    (float16 and bfloat16 accumulate in float32 and round once: numpy's float16 sum rounds at
    every step, and a bfloat16 tensor's float32 storage would not be rounded at all, so
    normalised bfloat16 probabilities summing to 1.0019 in float32, 1 in bfloat16, would fail
    the simplex check that PyTorch passes)."""
    if isinstance(value, _core.TensorBase):
        return _values(value.detach().sum(-1))
    return v.sum(-1)


def _bound_repr(bound) -> str:
    # PyTorch formats bounds with str.format: a 0-d tensor prints its Python number (an
    # integer bound stays an integer), any other tensor its full repr, shape (1,) included.
    return "{}".format(bound)


class Constraint:
    """A region of valid values; `event_dim` trailing dimensions form one event."""

    is_discrete = False
    event_dim = 0

    def check(self, value):
        """A bool tensor that is True where ``value`` satisfies the constraint (one entry per
        event: ``event_dim`` trailing dims are reduced).
        """
        answer = np.asarray(self._quietly_satisfied(value), dtype=bool)
        return _core.wrap_array(answer if answer.flags.c_contiguous else answer.copy(), False)

    def _quietly_satisfied(self, value) -> np.ndarray:
        """_satisfied with numpy's floating-point warnings silenced: a value holding both inf
        and -inf (probs normalised by a zero sum) makes a simplex's sum warn "invalid value",
        where PyTorch answers False without a warning.  Every reader of _satisfied goes
        through here."""
        with np.errstate(all="ignore"):
            return self._satisfied(value)

    def _holds(self, value) -> bool:
        """Whether every entry of value satisfies the constraint (what validation asks)."""
        return bool(np.all(self._quietly_satisfied(value)))

    def _satisfied(self, value) -> np.ndarray:
        """check's answer as a numpy bool array, what tapegrad's own validation reads; each
        constraint below defines it.  A script's subclass defines check (PyTorch's extension
        point) and is read through it."""
        if type(self).check is Constraint.check:
            raise NotImplementedError
        return _values(self.check(value))

    def __repr__(self) -> str:
        return type(self).__name__.lstrip("_") + "()"


class _Dependent(Constraint):
    """A constraint that depends on other parameters: not checked by itself.  Its is_discrete
    and event_dim are known only where given (reading an unknown one raises PyTorch's
    NotImplementedError); ``dependent(is_discrete=..., event_dim=...)`` gives them."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    @property
    def is_discrete(self):
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self):
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        return _Dependent(
            is_discrete=self._is_discrete if is_discrete is NotImplemented else is_discrete,
            event_dim=self._event_dim if event_dim is NotImplemented else event_dim)

    def _satisfied(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint) -> bool:
    """Whether ``constraint`` depends on other parameters (so validation skips it)."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property whose value is a constraint computed from the instance (``support`` of a
    distribution whose bounds are parameters); on the class it reads as a dependent constraint."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn, doc=getattr(fn, "__doc__", None))
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


dependent_property = _DependentProperty


class _Real(Constraint):
    def _satisfied(self, value):
        v = _values(value)
        return v == v                  # everything but nan


class _Boolean(Constraint):
    is_discrete = True

    def _satisfied(self, value):
        v = _values(value)
        return (v == 0) | (v == 1)


# The class tree follows PyTorch's, where scripts and registries test constraints with
# isinstance: greater_than_eq is not a greater_than, a half-open or integer interval not an
# interval, a positive (semi)definite constraint is a symmetric and square one.  The private
# bases below hold the shared state only.
class _LowerBound(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound


class _GreaterThan(_LowerBound):
    """The constraint ``value > lower_bound`` (``positive`` is ``greater_than(0.)``)."""
    def _satisfied(self, value):
        return _values(value) > _values(self.lower_bound)

    def __repr__(self):
        return f"GreaterThan(lower_bound={_bound_repr(self.lower_bound)})"


class _GreaterThanEq(_LowerBound):
    """The constraint ``value >= lower_bound`` (``nonnegative`` is ``greater_than_eq(0.)``)."""
    def _satisfied(self, value):
        return _values(value) >= _values(self.lower_bound)

    def __repr__(self):
        return f"GreaterThanEq(lower_bound={_bound_repr(self.lower_bound)})"


class _IntegerGreaterThan(Constraint):
    """The constraint: ``value`` is an integer (in value) ``>= lower_bound``."""
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def _satisfied(self, value):
        v = _values(value)
        return (v % 1 == 0) & (v >= self.lower_bound)

    def __repr__(self):
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


def _is_symmetric(v):
    """Per trailing square matrix of v: whether it equals its transpose to 1e-6."""
    return np.isclose(v, np.swapaxes(v, -1, -2), atol=1e-6).all(axis=(-2, -1))


def _symmetric_and_smallest_eigenvalue(v):
    """Per trailing square matrix of v: whether it is symmetric (to 1e-6), and its smallest
    eigenvalue (a zero matrix's where it is not symmetric, so eigvalsh sees only symmetric ones)."""
    if v.shape[-1] != v.shape[-2]:
        # not square, so not symmetric: False as in PyTorch (comparing v with its transpose
        # would fail to broadcast)
        return np.zeros(v.shape[:-2], dtype=bool), np.zeros(v.shape[:-2])
    symmetric = _is_symmetric(v)
    with np.errstate(invalid="ignore"):
        smallest = np.linalg.eigvalsh(np.where(symmetric[..., None, None], v, 0)).min(-1)
    return symmetric, smallest


def _matrices(value):
    """value's array, refused as PyTorch's tril (which its matrix constraints call first)
    refuses fewer than two dims: numpy's triu would read a vector as a matrix's row and
    answer silently."""
    v = _values(value)
    if np.ndim(v) < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return v


class _LowerCholesky(Constraint):
    """The constraint: each trailing square matrix is lower triangular with a positive diagonal."""
    event_dim = 2

    def _satisfied(self, value):
        v = _matrices(value)
        lower = (np.triu(v, 1) == 0).all(axis=(-2, -1))
        return lower & (np.diagonal(v, axis1=-2, axis2=-1) > 0).all(-1)


class _Square(Constraint):
    """The constraint: the trailing two dims are equal (square matrices)."""
    event_dim = 2

    def _satisfied(self, value):
        v = _values(value)
        return np.full(v.shape[:-2], v.shape[-1] == v.shape[-2], dtype=bool)


class _Symmetric(_Square):
    """The constraint: each trailing matrix is square and equal to its transpose."""

    def _satisfied(self, value):
        v = _values(value)
        if v.shape[-1] != v.shape[-2]:
            return np.zeros(v.shape[:-2], dtype=bool)
        return _is_symmetric(v)


def _cholesky_succeeds(v):
    """Per trailing square matrix of v: whether LAPACK's Cholesky factorisation (of the lower
    triangle) succeeds, PyTorch's test of positive definiteness (cholesky_ex's info == 0).  It
    differs from "smallest eigenvalue > 0" at the rounding edge: a singular [[2, 2], [2, 2]]
    factors (its last pivot rounds positive)."""
    from ..linalg import _lapack_cholesky
    n = v.shape[-1]
    flat = v.reshape(-1, n, n)
    try:
        _lapack_cholesky(flat)
        return np.ones(v.shape[:-2], dtype=bool)
    except np.linalg.LinAlgError:
        pass
    answer = np.ones(len(flat), dtype=bool)
    for i, matrix in enumerate(flat):
        try:
            _lapack_cholesky(matrix)
        except np.linalg.LinAlgError:
            answer[i] = False
    return answer.reshape(v.shape[:-2])


class _PositiveDefinite(_Symmetric):
    """The constraint: each trailing square matrix is symmetric and has a Cholesky factor."""

    def _satisfied(self, value):
        v = _values(value)
        symmetric = super()._satisfied(v)
        if not symmetric.any():
            return symmetric
        # only symmetric matrices are factored (the others are replaced by the identity)
        eye = np.broadcast_to(np.eye(v.shape[-1], dtype=v.dtype), v.shape)
        return symmetric & _cholesky_succeeds(np.where(symmetric[..., None, None], v, eye))


class _PositiveSemidefinite(_Symmetric):
    """The constraint: each trailing square matrix is symmetric with non-negative eigenvalues."""

    def _satisfied(self, value):
        symmetric, smallest = _symmetric_and_smallest_eigenvalue(_values(value))
        return symmetric & (smallest >= 0)


class _LowerTriangular(Constraint):
    """The constraint: each trailing square matrix is lower triangular."""
    event_dim = 2

    def _satisfied(self, value):
        return (np.triu(_matrices(value), 1) == 0).all(axis=(-2, -1))


class _CorrCholesky(Constraint):
    """The constraint: lower Cholesky factors of correlation matrices (positive diagonal,
    each row of unit Euclidean norm)."""
    event_dim = 2

    def _satisfied(self, value):
        v = _values(value)
        if np.ndim(v) == 0:     # (PyTorch's row norm over dim -1 comes first)
            raise IndexError("Dimension specified as -1 but tensor has no dimensions")
        tol = np.finfo(v.dtype).eps * v.shape[-1] * 10 if v.dtype.kind == "f" else 1e-6
        unit_rows = (np.abs(np.linalg.norm(v, axis=-1) - 1) <= tol).all(-1)
        return _LowerCholesky()._satisfied(value) & unit_rows


class _LessThan(Constraint):
    """The constraint ``value < upper_bound``."""
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def _satisfied(self, value):
        return _values(value) < _values(self.upper_bound)

    def __repr__(self):
        return f"LessThan(upper_bound={_bound_repr(self.upper_bound)})"


class _TwoBounds(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound

    def _within(self, value):
        v = _values(value)
        return (_values(self.lower_bound) <= v) & (v <= _values(self.upper_bound))

    def __repr__(self):
        return (f"{type(self).__name__.lstrip('_')}(lower_bound={_bound_repr(self.lower_bound)}, "
                f"upper_bound={_bound_repr(self.upper_bound)})")


class _Interval(_TwoBounds):
    """The constraint ``lower_bound <= value <= upper_bound`` (``unit_interval`` is
    ``interval(0., 1.)``).
    """
    def _satisfied(self, value):
        return self._within(value)


class _HalfOpenInterval(_TwoBounds):
    """The constraint ``lower_bound <= value < upper_bound``."""
    def _satisfied(self, value):
        v = _values(value)
        return (_values(self.lower_bound) <= v) & (v < _values(self.upper_bound))


class _IntegerInterval(_TwoBounds):
    """The constraint: ``value`` is an integer (in value) with ``lower_bound <= value <=
    upper_bound``.
    """
    is_discrete = True

    def _satisfied(self, value):
        v = _values(value)
        return (v % 1 == 0) & self._within(value)


class _Simplex(Constraint):
    event_dim = 1

    def _satisfied(self, value):
        v = _values(value)
        return np.all(v >= 0, axis=-1) & (np.abs(_last_dim_sums(value, v) - 1) < 1e-6)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def _satisfied(self, value):
        v = _values(value)
        return np.all((v == 0) | (v == 1), axis=-1) & (v.sum(-1) == 1)


class _Multinomial(Constraint):
    """Count vectors: non-negative entries summing to at most ``upper_bound``."""
    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def _satisfied(self, value):
        v = _values(value)
        return np.all(v >= 0, axis=-1) & (v.sum(-1) <= self.upper_bound)


class _Cat(Constraint):
    """Constraints ``cseq`` applied to consecutive slices (of ``lengths``) along ``dim``."""

    def __init__(self, cseq, dim=0, lengths=None):
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError("cseq and lengths must have the same length")
        self.dim = dim

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def _satisfied(self, value):
        v = _values(value)
        pieces, start = [], 0
        for constraint, length in zip(self.cseq, self.lengths):
            part = np.take(v, np.arange(start, start + length), axis=self.dim)
            pieces.append(constraint._satisfied(part))
            start += length
        return np.concatenate(pieces, axis=self.dim)


class _Stack(Constraint):
    """Constraints ``cseq`` applied to the slices ``value.select(dim, i)``."""

    def __init__(self, cseq, dim=0):
        self.cseq = list(cseq)
        self.dim = dim

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        dim = max(c.event_dim for c in self.cseq)
        return dim + 1 if self.dim + dim < 0 else dim

    def _satisfied(self, value):
        v = _values(value)
        return np.stack([c._satisfied(np.take(v, i, axis=self.dim)) for i, c in enumerate(self.cseq)],
                        axis=self.dim)


class MixtureSameFamilyConstraint(Constraint):
    """The support of a MixtureSameFamily: its component's support, checked per batch member
    (the mixture dimension reduced)."""

    def __init__(self, base_constraint):
        self.base_constraint = base_constraint

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim

    def _satisfied(self, value):
        v = _values(value)
        if v.ndim < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {v.ndim}")
        # a mixture dim of size 1 goes back in before the event, as the component expects; the
        # component's answer broadcasts it to the number of components (its parameters, such as
        # a Binomial's per-component total_count, may vary along it), and a value is valid
        # where it is inside every component's support (PyTorch's reduction)
        ok = np.asarray(self.base_constraint._satisfied(np.expand_dims(v, v.ndim - self.event_dim)))
        if not ok.ndim:
            return ok
        keep = v.ndim - self.event_dim
        return np.all(ok.reshape(ok.shape[:keep] + (-1,)), axis=-1)

    def __repr__(self):
        return f"MixtureSameFamilyConstraint({self.base_constraint!r})"


class _IndependentConstraint(Constraint):
    """`base_constraint` over `reinterpreted_batch_ndims` more trailing dimensions."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        self.is_discrete = base_constraint.is_discrete
        self.event_dim = base_constraint.event_dim + reinterpreted_batch_ndims

    def _satisfied(self, value):
        ok = self.base_constraint._satisfied(value)
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
positive_integer = _IntegerGreaterThan(1)
positive_definite = _PositiveDefinite()
positive_semidefinite = _PositiveSemidefinite()
square = _Square()
symmetric = _Symmetric()
lower_triangular = _LowerTriangular()
corr_cholesky = _CorrCholesky()
cat = _Cat
stack = _Stack
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
