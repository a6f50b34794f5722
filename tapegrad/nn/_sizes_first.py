"""The first thing PyTorch's Python losses (mse, l1, smooth_l1, huber, binary cross entropy with
and without logits) do is compare ``target.size()`` with ``input.size()``: an argument that is
not a tensor fails right there, with Python's own error (a list: AttributeError "'list' object
has no attribute 'size'"), before any argument check of the compiled op.  Scripts meet it by
passing lists (a course notebook calls F.binary_cross_entropy(p, q) on lists on purpose)."""
from __future__ import annotations as _annotations

import functools

from .. import _core


def sizes_read_first(loss_fn):
    """Wrap a compiled loss taking (input, target, ...) so a non-tensor input or target fails as
    PyTorch's ``target.size() ... input.size()`` comparison does (target is read first)."""

    @functools.wraps(loss_fn)
    def loss(*args, **kwargs):
        operands = list(args[:2])
        for name in ("input", "target")[len(operands):]:
            if name in kwargs:
                operands.append(kwargs[name])
        if len(operands) == 2:
            input, target = operands
            for operand in (target, input):
                if not isinstance(operand, _core.TensorBase):
                    operand.size()      # raises as in PyTorch; a size() that works falls through
        return loss_fn(*args, **kwargs)

    return loss
