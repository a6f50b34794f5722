"""Helpers the distributions share: broadcasting parameters, probs <-> logits, lazy properties."""
from __future__ import annotations

import numbers

import numpy as np

from .. import _core
from ..creation import _broadcast_shapes, tensor

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits"]


def broadcast_all(*values):
    """The arguments as tensors of one broadcast shape: numbers become tensors of the first
    tensor's dtype (float32 when there is none); tensors are expanded (gradients flow back)."""
    tensors = [v for v in values if isinstance(v, _core.TensorBase)]
    for v in values:
        if not isinstance(v, (_core.TensorBase, numbers.Number)):
            raise ValueError("Input arguments must all be instances of numbers.Number or "
                             "torch.tensor.")
    dtype = tensors[0].dtype if tensors else None     # None: float32, tensor()'s default
    out = [v if isinstance(v, _core.TensorBase) else tensor(float(v), dtype=dtype)
           for v in values]
    shape = ()
    for t in out:
        shape = _broadcast_shapes(shape, tuple(t.shape))
    return tuple(t if tuple(t.shape) == shape else t.expand(*shape) for t in out)


def _eps(t) -> float:
    return float(np.finfo(t._array.dtype).eps)


def clamp_probs(probs):
    """Probabilities kept inside (eps, 1 - eps), so their logs stay finite."""
    eps = _eps(probs)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary: bool = False):
    """log(p) for categorical probabilities, log(p / (1 - p)) for binary ones (clamped)."""
    clamped = clamp_probs(probs)
    if is_binary:
        return clamped.log() - (-clamped).log1p()
    return clamped.log()


def logits_to_probs(logits, is_binary: bool = False):
    """sigmoid(logits) for binary logits, softmax over the last dimension otherwise."""
    if is_binary:
        return logits.sigmoid()
    return logits.softmax(-1)


class lazy_property:
    """Computed on first access and cached in the instance (probs from logits and vice versa)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        # computed in grad mode, as PyTorch's: the cached value keeps its graph even when first
        # read under no_grad (probs of logits that require grad requires grad)
        from ..grad_mode import enable_grad
        with enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value
