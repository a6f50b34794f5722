"""``inplace=True`` on an activation whose input is part of a graph (``F.relu(x, inplace=True)``,
``nn.ReLU(inplace=True)`` inside a model being trained, ``F.relu_(h)``).

The compiled activations cannot record a write into their own input, and the composed ones save
the input they would overwrite.  PyTorch's result is reproduced exactly by composition: the
activation of a copy of the input, written back into the input with ``copy_`` (a recorded
in-place write, so the input's later uses see the new values and the gradient flows through
the activation, as PyTorch's in-place kernel does).  The leaf rule is ``copy_``'s own: a leaf
that requires grad is refused with PyTorch's message.
"""
from __future__ import annotations

import functools
import inspect

from ..grad_mode import is_grad_enabled


def recording_inplace(activation):
    """Wrap `activation(input, ..., inplace=...)` so inplace=True works on a graph tensor."""
    position = list(inspect.signature(activation).parameters).index("inplace")

    @functools.wraps(activation)
    def wrapper(input, *args, **kwargs):
        if "inplace" in kwargs:
            inplace = kwargs["inplace"]
        else:
            inplace = len(args) >= position and args[position - 1]
        if not (inplace and getattr(input, "requires_grad", False) and is_grad_enabled()):
            return activation(input, *args, **kwargs)
        if "inplace" in kwargs:
            kwargs["inplace"] = False
        else:
            args = args[:position - 1] + (False,) + args[position:]
        return input.copy_(activation(input.clone(), *args, **kwargs))

    return wrapper
