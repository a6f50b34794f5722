"""The part Multinomial and OneHotCategorical share: both are a Categorical seen through another
event (count vectors, one-hot vectors), so their parameters, shapes and expand() are its."""
from __future__ import annotations as _annotations

from ..tensor import Size
from . import constraints
from .categorical import Categorical
from .distribution import Distribution


class CategoricalBacked(Distribution):
    """A distribution whose parameters live in an inner ``Categorical`` (``self._categorical``):
    batch shape is the Categorical's, the event is one vector over its K categories."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    _categorical: Categorical

    def _init_from_categorical(self, categorical: Categorical, validate_args) -> None:
        self._categorical = categorical
        Distribution.__init__(self, categorical.batch_shape, categorical.param_shape[-1:],
                              validate_args=validate_args)

    def _expand_categorical_into(self, new, batch_shape):
        # `new` comes from _get_checked_instance and already holds the subclass's own fields.
        batch_shape = Size(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        """The class probabilities, shape ``batch_shape + (num_classes,)``, normalised to sum to 1."""
        return self._categorical.probs

    @property
    def logits(self):
        """The log-probabilities of the classes (normalised: ``logsumexp`` over the last dim is 0)."""
        return self._categorical.logits

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter given at construction: ``batch_shape + (num_classes,)``."""
        return self._categorical.param_shape
