"""SGD: stochastic gradient descent with optional momentum (PyTorch's update, bit for bit)."""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core
from .optimizer import (Optimizer, _is_tensor, _real_view, _state_tensor, _to_scalar, add_alpha,
                        mul_scalar, neg)

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    """Implements stochastic gradient descent (optionally with momentum), as torch.optim.SGD.

    Args:
        params: iterable of parameters or of dicts defining parameter groups
        lr (float): learning rate (default: 1e-3)
        momentum (float): momentum factor (default: 0)
        dampening (float): dampening for momentum (default: 0)
        weight_decay (float): weight decay (L2 penalty) (default: 0)
        nesterov (bool): enables Nesterov momentum (default: False)
        maximize (bool): maximize the objective instead of minimizing it (default: False)
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None) -> None:
        if isinstance(lr, _core.TensorBase) and lr._array.size != 1:
            raise ValueError("Tensor lr must be 1-element")
        if _to_scalar(lr) < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if _to_scalar(weight_decay) < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        if fused and differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    _GROUP_DEFAULTS = {"nesterov": False, "maximize": False, "foreach": None,
                       "differentiable": False, "fused": False}

    def _refuse_foreach_autograd(self, group) -> None:
        """(PyTorch's multi-tensor SGD meets the in-place write into a leaf first: the update
        raises it)"""

    def _update_group(self, group) -> None:
        if group["differentiable"]:
            self._update_group_differentiable(group)
            return
        lr = _to_scalar(group["lr"])
        momentum = group["momentum"]
        dampening = group["dampening"]
        weight_decay = _to_scalar(group["weight_decay"])
        nesterov = group["nesterov"]
        maximize = group["maximize"]
        # The plain update, every parameter in one C call, reading each p.grad: not when the
        # gradients come from elsewhere (the functional sgd() sets its own _params_with_grad on
        # the instance: p.grad there is not the gradient)
        if (momentum == 0 and weight_decay == 0 and not maximize
                and "_params_with_grad" not in self.__dict__
                and _core._add_scaled_grads(group["params"], -lr)):
            return
        sparse_grads = []
        for p, param, grad in self._params_with_grad(group, sparse_grads):
            _core._mark_written(p)      # in-place update: saved copies are now stale
            if maximize:
                grad = neg(grad)
            if weight_decay != 0:
                grad = add_alpha(grad, param, weight_decay)
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = _state_tensor(np.array(grad, copy=True), p)
                    state["momentum_buffer"] = buf
                else:
                    b = _real_view(buf._array)
                    mul_scalar(b, momentum, out=b)                 # buf.mul_(momentum)
                    add_alpha(b, grad, 1 - dampening, out=b)
                if nesterov:
                    grad = add_alpha(grad, _real_view(buf._array), momentum)
                else:
                    grad = _real_view(buf._array)
            add_alpha(param, grad, -lr, out=param)
        for p, grad in sparse_grads:
            self._sparse_update(p, grad, lr, momentum, dampening, weight_decay, nesterov,
                                maximize)

    def _update_group_differentiable(self, group) -> None:
        """PyTorch's differentiable=True step: the same update in tensor operations, recorded
        (Optimizer.step runs it with grad mode on), so the new parameters and momentum buffers
        have gradients towards the old ones, the gradients, and a tensor lr or weight_decay
        that requires grad.  As in PyTorch, the first momentum buffer is a detached copy of the
        gradient, and a weight_decay that requires grad is folded into p.grad in place."""
        lr, weight_decay = group["lr"], group["weight_decay"]
        momentum, dampening = group["momentum"], group["dampening"]
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if group["maximize"]:
                grad = -grad
            if _is_tensor(weight_decay) and weight_decay.requires_grad:
                grad = grad.addcmul_(p.clone(), weight_decay)
            elif _to_scalar(weight_decay) != 0:
                grad = grad.add(p, alpha=float(_to_scalar(weight_decay)))
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = grad.detach().clone()
                    state["momentum_buffer"] = buf
                else:
                    buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
            if _is_tensor(lr) and lr.requires_grad:
                p.addcmul_(grad, lr, value=-1)
            else:
                p.add_(grad, alpha=-float(_to_scalar(lr)))

    def _sparse_update(self, p, grad, lr, momentum, dampening, weight_decay, nesterov,
                       maximize) -> None:
        """PyTorch's SGD step for a sparse gradient (embedding(sparse=True)), in its sparse
        operations: weight decay refused as ``grad.add(param)`` (sparse + dense) is, the
        momentum buffer a sparse tensor (only the rows the gradients had move), the parameter
        updated by ``param.add_(sparse, alpha=-lr)``."""
        if p.is_sparse:
            raise NotImplementedError("tapegrad: SGD steps on sparse gradients of a sparse "
                                      "parameter are not supported")
        if maximize:
            grad = -grad
        if weight_decay != 0:
            grad = grad.add(p, alpha=weight_decay)      # raises PyTorch's add(sparse, dense) error
        if momentum != 0:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = grad.clone()
                state["momentum_buffer"] = buf
            else:
                buf._replace_contents((buf * momentum).add(grad, alpha=1 - dampening))
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        p.add_(grad, alpha=-lr)


# the functional form of the update (PyTorch's torch.optim.sgd.sgd), which runs the class's
from ._functional import sgd  # noqa: E402,F401
