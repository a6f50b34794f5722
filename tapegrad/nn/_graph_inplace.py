"""``inplace=True`` on an activation whose input is part of a graph (``F.relu(x, inplace=True)``,
``nn.ReLU(inplace=True)`` inside a model being trained, ``F.relu_(h)``).

The compiled activations cannot record a write into their own input, and the composed ones save
the input they would overwrite.  PyTorch's result is reproduced exactly by composition: the
activation of a copy of the input, whose record the input then adopts (as the in-place unary
ops do: the input becomes the activation's output), or, where that does not apply (a view), is
written back with ``copy_``; either way the input's later uses see the new values and the
gradient flows through the activation, as with PyTorch's in-place kernel.  The leaf rule is ``copy_``'s own: a leaf
that requires grad is refused with PyTorch's message.
"""
from __future__ import annotations as _annotations

import functools
import inspect

from .. import _core
from .._shift_ops import _become_result
from ..grad_mode import is_grad_enabled


# PyTorch's node of a compiled activation run in place on a graph tensor, where it is not the
# out-of-place one (which the adopted record already shows): keyed by the activation's __name__
# (the composed ones name theirs through recording_inplace's `node`)
_INPLACE_NODES = {"elu": "EluBackward1", "leaky_relu": "LeakyReluBackward1"}
# The activations whose in-place node saves its result (which is the input, overwritten): a
# later write into the input must make backward raise PyTorch's version error, as it does for
# the in-place unary ops (EluBackward1, for celu_ and selu_ too; LeakyReluBackward1,
# RreluWithNoiseBackward1).  tapegrad's copy-based form saved a copy, and silently gave a
# gradient (fuzz 67200000 series).
_SAVES_RESULT = frozenset(("elu", "selu", "celu", "leaky_relu", "rrelu"))


def activation_in_graph(activation, input, args=(), kwargs=None):
    """The in-place activation of `input` (which requires grad, grad mode on), where
    ``activation(x, *args, **kwargs)`` is its out-of-place call (inplace=False among the
    arguments): the activation of a copy, adopted by (or written back into) input.  The compiled
    activations (relu, leaky_relu, elu, silu) call this themselves on that path only, so their
    plain call stays one compiled function."""
    result = activation(_core._in_place_operand(input), *args, **(kwargs or {}))
    # input becomes the activation's output (its grad_fn, the output it saves), as the
    # in-place unary ops do; through a plain copy_ a second derivative reaching the saved
    # output would bypass input, and input's retained .grad would miss it
    out = _become_result(input, result)
    name = getattr(activation, "__name__", None)
    if name in _SAVES_RESULT:
        if out._base is not None:
            from ..autograd.function import _saved_result_becomes
            _saved_result_becomes(result, out)
        _core._guard_saved_version(out, out)
    inplace_node = _INPLACE_NODES.get(name)
    return out if inplace_node is None else _core._name_grad_fn(out, inplace_node)


def recording_inplace(activation=None, *, node: str = None):
    """Wrap a composed `activation(input, ..., inplace=...)` so inplace=True works on a graph
    tensor.  `node`: PyTorch's grad_fn name for the in-place form where it differs from the
    out-of-place one (selu_'s EluBackward1); given to the input when it adopted the result's
    record (not to a view, whose node PyTorch names after the view)."""
    if activation is None:
        return functools.partial(recording_inplace, node=node)
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
        result = activation_in_graph(activation, input, args, kwargs)
        if node is not None and result._base is None:
            _core._name_grad_fn(result, node)
        return result

    return wrapper
