"""autograd.Variable: the pre-0.4 wrapper, which PyTorch keeps as a constructor of tensors.

`Variable(t, requires_grad=...)` returns a new tensor sharing t's storage, detached from t's
graph, with the requested requires_grad; `isinstance(x, Variable)` holds for every tensor."""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import warnings

from .. import _core


class _VariableMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, _core.TensorBase)

    def __call__(cls, data=None, requires_grad: bool = False, volatile: bool = False, **kwargs):
        if kwargs:
            raise TypeError(f"'{next(iter(kwargs))}' is an invalid keyword argument for this "
                            f"function")
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "torch.no_grad():` instead.", UserWarning, stacklevel=2)
            if requires_grad:
                raise ValueError("Variable can't be volatile and require_grad at the same time!")
        if data is None:
            from ..creation import empty
            data = empty(0)
        elif not isinstance(data, _core.TensorBase):
            raise TypeError(f"Variable data has to be a tensor, but got {_type_name(data)}")
        result = data.detach()
        if requires_grad:
            if not result.is_floating_point():
                raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                                   "gradients")
            result.requires_grad_(True)
        return result


class _EngineBase:
    """The autograd engine as scripts reach it, Variable._execution_engine (PyTorch's
    torch._C._EngineBase): queue_callback, and run_backward, the call behind backward / grad."""

    def queue_callback(self, callback) -> None:
        """Run callback() when the backward pass running on this thread ends (a hook's way to
        act once all gradients are in: bucketing, logging); outside a backward, PyTorch's
        RuntimeError."""
        _core._queue_backward_callback(callback)

    def run_backward(self, tensors, grad_tensors, keep_graph, create_graph, inputs=(),
                     allow_unreachable=True, accumulate_grad=True):
        """One backward pass: into .grad (accumulate_grad) or returning the gradients of
        `inputs`, as torch.autograd.backward / grad call it."""
        from . import backward, grad
        if accumulate_grad:
            backward(tensors, grad_tensors, retain_graph=keep_graph, create_graph=create_graph,
                     inputs=tuple(inputs) or None)
            return ()
        return grad(tensors, inputs, grad_tensors, retain_graph=keep_graph,
                    create_graph=create_graph, allow_unused=allow_unreachable)


class Variable(metaclass=_VariableMeta):
    """Variable(data=None, requires_grad=False): a tensor (see the module docstring)."""

    _execution_engine = _EngineBase()
