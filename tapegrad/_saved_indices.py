"""Index, mask and target tensors that Python-level ops save for backward, as PyTorch's nodes do.

A PyTorch node that reads an index tensor in its backward (scatter's, index_add's, a max pool's
returned indices, ctc_loss's targets, ...) saves it, so writing the tensor in place between
forward and backward raises "one of the variables needed for gradient computation has been
modified by an inplace operation".  The Python-level ops build their own numpy keys, which the
write cannot reach (or, for a pool's returned indices, the very array the write changes); these
decorators make the op's record save the tensor itself, version-checked (the core's
``_save_index_of``, record.pxi's save_index), so the write raises there too.
"""
from __future__ import annotations as _annotations

import functools
import inspect

from . import _core


def saves_index_args(*names: str):
    """For an op whose PyTorch node saves its arguments `names` (tensors, or a tuple / list of
    them as index_put's `indices`): its result's record saves them too."""
    def decorate(op):
        params = list(inspect.signature(op).parameters)
        at = [(params.index(name), name) for name in names]

        @functools.wraps(op)
        def saving(*args, **kwargs):
            result = op(*args, **kwargs)
            for position, name in at:
                index = args[position] if len(args) > position else kwargs.get(name)
                if isinstance(index, (tuple, list)):
                    _core._save_index_of(result, *index)
                else:
                    _core._save_index_of(result, index)
            return result
        return saving
    return decorate


def saves_returned_indices(pool):
    """For an op returning (values, indices) whose PyTorch node saves the indices it returns (a
    max pool): the values' record saves them.  Its backward reads them: writing them moved the
    gradient to the written positions, silently (adaptive_max_pool2d), or went unnoticed."""
    @functools.wraps(pool)
    def op(*args, **kwargs):
        result = pool(*args, **kwargs)
        if isinstance(result, tuple):
            _core._save_index_of(result[0], result[1])
        return result
    return op
