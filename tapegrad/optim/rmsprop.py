"""RMSprop (PyTorch's single-tensor update, bit for bit in float32)."""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core
from .optimizer import (Optimizer, _check_not_differentiable, _filled_state, _real_view,
                        _step_tensor, _to_scalar, add_alpha, add_scalar, addcdiv, addcmul,
                        lerp_scalar, mul_scalar, neg, sqrt)

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(Optimizer):
    """Implements the RMSprop algorithm, as torch.optim.RMSprop.

    Args:
        params: iterable of parameters or of dicts defining parameter groups
        lr (float): learning rate (default: 1e-2)
        alpha (float): smoothing constant (default: 0.99)
        eps (float): term added to the denominator for numerical stability (default: 1e-8)
        weight_decay (float): weight decay (L2 penalty) (default: 0)
        momentum (float): momentum factor (default: 0)
        centered (bool): normalize the gradient by an estimate of its variance (default: False)
        maximize (bool): maximize the objective instead of minimizing it (default: False)
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False) -> None:
        if isinstance(lr, _core.TensorBase) and lr._array.size != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= _to_scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        _check_not_differentiable(differentiable, foreach)

        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    _GROUP_DEFAULTS = {"momentum": 0, "centered": False, "foreach": None, "maximize": False,
                       "differentiable": False, "capturable": False}
    _STEP_KEYS = ("step",)
    _STEPS_ARE_TENSORS = True

    def _update_group(self, group) -> None:
        lr = _to_scalar(group["lr"])
        alpha = group["alpha"]
        eps = group["eps"]
        weight_decay = group["weight_decay"]
        momentum = group["momentum"]
        centered = group["centered"]
        maximize = group["maximize"]
        for p, param, grad in self._params_with_grad(group):
            _core._mark_written(p)      # in-place update: saved copies are now stale
            state = self.state[p]
            if len(state) == 0:         # lazy state initialization
                state["step"] = _step_tensor()
                state["square_avg"] = _filled_state(p)
                if momentum > 0:
                    state["momentum_buffer"] = _filled_state(p)
                if centered:
                    state["grad_avg"] = _filled_state(p)
            square_avg = _real_view(state["square_avg"]._array)
            step_t = state["step"]._array

            if maximize:
                grad = neg(grad)
            np.add(step_t, 1, out=step_t)
            if weight_decay != 0:
                grad = add_alpha(grad, param, weight_decay)

            mul_scalar(square_avg, alpha, out=square_avg)
            addcmul(square_avg, grad, grad, 1 - alpha, out=square_avg)

            if centered:
                grad_avg = _real_view(state["grad_avg"]._array)
                lerp_scalar(grad_avg, grad, 1 - alpha, out=grad_avg)
                avg = addcmul(square_avg, grad_avg, grad_avg, -1)
                sqrt(avg, out=avg)
            else:
                avg = sqrt(square_avg)
            add_scalar(avg, eps, out=avg)

            if momentum > 0:
                buf = _real_view(state["momentum_buffer"]._array)
                mul_scalar(buf, momentum, out=buf)
                addcdiv(buf, grad, avg, out=buf)
                add_alpha(param, buf, -lr, out=param)
            else:
                addcdiv(param, grad, avg, -lr, out=param)


# the functional form of the update (PyTorch's torch.optim.rmsprop.rmsprop), which runs the class's
from ._functional import rmsprop  # noqa: E402,F401
