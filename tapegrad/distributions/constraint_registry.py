"""biject_to and transform_to: from a constraint to a transform that maps unconstrained reals
onto it, as torch.distributions.constraint_registry has them.

``biject_to(c)`` is a bijection (so log-densities can be pulled back: HMC, variational fits);
``transform_to(c)`` need not be one (softmax onto the simplex) and serves optimisation over a
constrained parameter: ``p = transform_to(c)(unconstrained)``.  Factories are registered per
constraint class; a factory receives the constraint instance (its bounds).
"""
from __future__ import annotations as _annotations

import numbers

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """A map from constraint types to factories ``constraint -> Transform``."""

    def __init__(self):
        self._registry: dict = {}

    def register(self, constraint, factory=None):
        """Register ``factory`` for ``constraint`` (a Constraint subclass, or an instance standing
        for its class); usable as a decorator when ``factory`` is omitted."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or instance, "
                            f"but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        """The transform the factory registered for ``type(constraint)`` builds."""
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(
                f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _both(constraint):
    def decorator(factory):
        biject_to.register(constraint, factory)
        transform_to.register(constraint, factory)
        return factory
    return decorator


@_both(constraints.real)
def _to_real(constraint):
    return transforms.identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint):
    base = biject_to(constraint.base_constraint)
    return transforms.IndependentTransform(base, constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint):
    base = transform_to(constraint.base_constraint)
    return transforms.IndependentTransform(base, constraint.reinterpreted_batch_ndims)


# positive and nonnegative are instances of the greater_than classes: as in PyTorch they map
# through the bound-generic factory (exp, then a shift by the bound).
@_both(constraints.greater_than)
@_both(constraints.greater_than_eq)
def _to_greater_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.lower_bound, 1)])


@_both(constraints.less_than)
def _to_less_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.upper_bound, -1)])


@_both(constraints.interval)
@_both(constraints.half_open_interval)
def _to_interval(constraint):
    low, high = constraint.lower_bound, constraint.upper_bound
    if (isinstance(low, numbers.Number) and isinstance(high, numbers.Number)
            and low == 0 and high == 1):
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform([transforms.SigmoidTransform(),
                                        transforms.AffineTransform(low, high - low)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint):
    return transforms.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint):
    return transforms.SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint):
    return transforms.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint):
    return transforms.PositiveDefiniteTransform()


@_both(constraints.corr_cholesky)
def _to_corr_cholesky(constraint):
    return transforms.CorrCholeskyTransform()


@biject_to.register(constraints.cat)
def _biject_to_cat(constraint):
    return transforms.CatTransform([biject_to(c) for c in constraint.cseq], constraint.dim,
                                   constraint.lengths)


@transform_to.register(constraints.cat)
def _transform_to_cat(constraint):
    return transforms.CatTransform([transform_to(c) for c in constraint.cseq], constraint.dim,
                                   constraint.lengths)


@biject_to.register(constraints.stack)
def _biject_to_stack(constraint):
    return transforms.StackTransform([biject_to(c) for c in constraint.cseq], constraint.dim)


@transform_to.register(constraints.stack)
def _transform_to_stack(constraint):
    return transforms.StackTransform([transform_to(c) for c in constraint.cseq], constraint.dim)
