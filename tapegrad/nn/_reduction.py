"""PyTorch's ``torch.nn._reduction``: the legacy ``size_average`` / ``reduce`` flags of the losses
read as a ``reduction`` name, and reduction names as the enum the C++ losses take.  Custom losses
copied from PyTorch's own (``_Reduction.legacy_get_string(size_average, reduce)``) import it; the
built-in losses read the flags through the same rule (_extra_losses._reduction)."""
from __future__ import annotations as _annotations

import warnings

from ._legacy_reduction import mean_alias

_FLAGS_WARNING = ("size_average and reduce args will be deprecated, please use "
                  "reduction='{}' instead.")
_ENUM = {"none": 0, "mean": 1, "sum": 2}


def legacy_string(size_average, reduce) -> str:
    """The reduction the legacy flags ask for (None means True for either): 'none' unless
    reduce, else 'mean' when size_average, else 'sum'."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "none" if not reduce else ("mean" if size_average else "sum")


def legacy_get_string(size_average, reduce, emit_warning: bool = True) -> str:
    """legacy_string, with PyTorch's deprecation warning (at the caller) unless told not to."""
    result = legacy_string(size_average, reduce)
    if emit_warning:
        warnings.warn(_FLAGS_WARNING.format(result), stacklevel=2)
    return result


def get_enum(reduction: str) -> int:
    """0, 1, 2 for 'none', 'mean' ('elementwise_mean' too, with its warning), 'sum'."""
    reduction = mean_alias(reduction, stacklevel=3)
    if reduction not in _ENUM:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _ENUM[reduction]


def legacy_get_enum(size_average, reduce, emit_warning: bool = True) -> int:
    """get_enum of legacy_get_string's answer."""
    result = legacy_string(size_average, reduce)
    if emit_warning:
        warnings.warn(_FLAGS_WARNING.format(result), stacklevel=2)
    return _ENUM[result]
