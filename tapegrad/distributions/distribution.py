"""Distribution: the base class (shapes, argument and sample validation, sample via rsample)."""
from __future__ import annotations as _annotations

import warnings

import numpy as np

from ..grad_mode import no_grad
from ..tensor import Size
from . import constraints
from .utils import _is_tensor, lazy_property

__all__ = ["Distribution"]


class Distribution:
    """A probability distribution with `batch_shape` independent members, each over events of
    `event_shape`.  With validation on (the default, as in PyTorch), parameters are checked
    against `arg_constraints` at construction and values against `support` in log_prob."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = True

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument and sample validation on (the default) or off for every distribution created
        afterwards that is not given ``validate_args=``. ``value`` must be a bool.
        """
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        # Kept as given, as PyTorch does: a script's subclass passing a tuple reads a tuple back
        # from batch_shape (the built-in families all pass a torch.Size)
        self._batch_shape = batch_shape
        self._event_shape = event_shape
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                # a user subclass without them still constructs, as in PyTorch, with its warning
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              f"`arg_constraints = {{}}` or initialize the distribution with "
                              f"`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if isinstance(constraint, constraints._Dependent):
                    continue
                # Only the parameter given (probs or logits) is checked, not the lazy other one.
                if param not in self.__dict__ and isinstance(getattr(type(self), param, None),
                                                             lazy_property):
                    continue
                value = getattr(self, param)
                if not constraint._holds(value):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n"
                        f"{_shown(value)}")

    @property
    def batch_shape(self) -> Size:
        """The shape of the batch of independent distributions this object holds (``torch.Size``)."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of one sample of one member of the batch (``torch.Size([])`` for scalar
        distributions, ``(K,)`` for OneHotCategorical over K classes).
        """
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        """A dict mapping each parameter name to the constraint its values must satisfy, checked at
        construction when validation is on.
        """
        raise NotImplementedError

    @property
    def support(self):
        """The constraint describing the valid values of samples; ``log_prob`` checks its argument
        against it when validation is on.
        """
        raise NotImplementedError

    @property
    def mean(self):
        """The mean of each member of the batch, shape ``batch_shape + event_shape``."""
        raise NotImplementedError     # bare, as PyTorch's (only mode names the class)

    @property
    def mode(self):
        """The most likely value of each member of the batch, shape ``batch_shape + event_shape``."""
        raise NotImplementedError(f"{type(self)} does not implement mode")

    @property
    def variance(self):
        """The variance of each member of the batch, shape ``batch_shape + event_shape``."""
        raise NotImplementedError     # bare, as PyTorch's (only mode names the class)

    @property
    def stddev(self):
        """The standard deviation, ``variance.sqrt()``; differentiable in the parameters."""
        return self.variance.sqrt()

    def expand(self, batch_shape, _instance=None):
        """A distribution of the same family with its parameters broadcast to ``batch_shape``
        (no copy of the data); each family implements it."""
        raise NotImplementedError

    def sample(self, sample_shape=Size()):
        """Samples of shape sample_shape + batch_shape + event_shape, without gradient."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        """Reparameterised samples: differentiable with respect to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int):
        """``n`` samples: ``sample((n,))``, shape ``(n,) + batch_shape + event_shape``.  Deprecated
        in PyTorch, which warns (FutureWarning) on every call."""
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value):
        """The log of the probability density (or mass) at ``value``, differentiable in the parameters.

        ``value`` must be a tensor whose trailing dims match ``event_shape`` and that broadcasts
        with ``batch_shape``; the result has the broadcast batch shape (event dims reduced).
        With validation on, values outside ``support`` raise ``ValueError``.

        Examples
        --------
        >>> d = tapegrad.distributions.Normal(tapegrad.tensor(0.), tapegrad.tensor(1.))
        >>> round(d.log_prob(tapegrad.tensor(0.)).item(), 4)
        -0.9189
        """
        raise NotImplementedError

    def cdf(self, value):
        """The cumulative distribution function at ``value`` (same shape rules as ``log_prob``)."""
        raise NotImplementedError

    def icdf(self, value):
        """The inverse of ``cdf``: the value below which a fraction ``value`` of the mass lies."""
        raise NotImplementedError

    def entropy(self):
        """The entropy of each member of the batch (shape ``batch_shape``), in nats, differentiable in
        the parameters.
        """
        raise NotImplementedError

    def perplexity(self):
        """``exp(entropy())``, shape ``batch_shape``."""
        return self.entropy().exp()

    def enumerate_support(self, expand: bool = True):
        """Every value of a discrete distribution's support, along a new leading dimension.

        With ``expand=True`` the result has shape ``(n,) + batch_shape + event_shape``; with ``False``
        the batch dims are 1 (broadcastable). Only discrete distributions implement it.
        """
        raise NotImplementedError

    def _extended_shape(self, sample_shape=Size()) -> Size:
        if not isinstance(sample_shape, Size):
            sample_shape = Size(sample_shape)
        # (concatenated as given: a list batch shape raises TypeError there, as in PyTorch)
        return Size(sample_shape + self._batch_shape + self._event_shape)

    def _validate_sample(self, value) -> None:
        """PyTorch's checks of a log_prob argument: a tensor, event shape on the right,
        broadcastable with the batch, inside the support."""
        if not _is_tensor(value):
            raise ValueError("The value argument to log_prob must be a Tensor")
        actual = tuple(value.shape)
        event = tuple(self._event_shape)
        if actual[len(actual) - len(event):] != event:
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{Size(actual)} vs {Size(event)}.")
        expected = tuple(self._batch_shape) + event
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{Size(actual)} vs {Size(expected)}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          f"validation. Please initialize the distribution with "
                          f"`validate_args=False` to turn off validation.", stacklevel=2)
            return
        if not support._holds(value):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape "
                             f"{actual}) to be within the support ({support!r}) of the "
                             f"distribution {self!r}, but found invalid values:\n"
                             f"{_shown(value)}")

    def _get_checked_instance(self, cls, instance):
        if instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {type(self).__name__} of {cls.__name__} that "
                                      f"defines a custom __init__ method must also define a "
                                      f"custom .expand() method.")
        return cls.__new__(type(self)) if instance is None else instance

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        # One element shows as formatted (a 0-d tensor as its number, any other as the tensor).
        shown = ", ".join(f"{k}: {self.__dict__[k] if self.__dict__[k].numel() == 1 else self.__dict__[k].size()}"
                          for k in names)
        return f"{type(self).__name__}({shown})"


def _shown(value):
    """How PyTorch's messages show offending values: a number for one element, else the tensor."""
    return value.item() if value.numel() == 1 and value.ndim == 0 else value
