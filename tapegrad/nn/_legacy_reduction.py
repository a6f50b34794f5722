"""reduction='elementwise_mean', the name PyTorch 0.4 gave 'mean': still accepted by most losses
(with PyTorch's deprecation warning), and written in old tutorials that must run unchanged."""
from __future__ import annotations as _annotations

import functools
import inspect
import warnings

LEGACY_MEAN = "elementwise_mean"
_WARNING = "reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead."


def mean_alias(reduction, stacklevel: int = 3):
    """'mean' for 'elementwise_mean' (warning as PyTorch does), any other value unchanged."""
    if isinstance(reduction, str) and reduction == LEGACY_MEAN:
        warnings.warn(_WARNING, UserWarning, stacklevel=stacklevel)
        return "mean"
    return reduction


def accepting_legacy_mean(loss_fn):
    """Wrap a compiled loss so its `reduction` (keyword or positional) may be 'elementwise_mean'.

    The compiled losses know only 'none', 'mean' and 'sum'; the alias is resolved here, before
    them, so the common path (a current reduction) costs one comparison.
    """
    position = list(inspect.signature(loss_fn).parameters).index("reduction")

    @functools.wraps(loss_fn)
    def loss(*args, **kwargs):
        if kwargs.get("reduction") == LEGACY_MEAN:
            kwargs["reduction"] = mean_alias(LEGACY_MEAN)
        elif len(args) > position and isinstance(args[position], str) \
                and args[position] == LEGACY_MEAN:
            args = args[:position] + (mean_alias(LEGACY_MEAN),) + args[position + 1:]
        return loss_fn(*args, **kwargs)

    return loss
