"""Adadelta (PyTorch's single-tensor update, operation for operation)."""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core
from .optimizer import (Optimizer, _check_lr, _check_not_differentiable, _filled_state, _real_view,
                        _step_tensor, _to_scalar, add_alpha, add_scalar, addcmul, complex_add_alpha,
                        mul_scalar, neg, sqrt)

__all__ = ["Adadelta", "adadelta"]


class Adadelta(Optimizer):
    """Implements the Adadelta algorithm, as torch.optim.Adadelta.

    Args:
        params: iterable of parameters or of dicts defining parameter groups
        lr (float): coefficient that scales delta before it is applied (default: 1.0)
        rho (float): coefficient of the running averages of the squared gradient and of the
            squared update (default: 0.9)
        eps (float): term added to the denominators for numerical stability (default: 1e-6)
        weight_decay (float): weight decay (L2 penalty) (default: 0)
        maximize (bool): maximize the objective instead of minimizing it (default: False)
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False) -> None:
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_not_differentiable(differentiable, foreach)
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    _CAPTURABLE_DEVICES = "['cuda', 'xpu', 'hpu', 'privateuseone']"   # (PyTorch's, no XLA)
    _GROUP_DEFAULTS = {"foreach": None, "maximize": False, "differentiable": False,
                       "capturable": False}
    _STEP_KEYS = ("step",)
    _STEPS_ARE_TENSORS = True

    def _update_group(self, group) -> None:
        lr = _to_scalar(group["lr"])
        rho, eps = group["rho"], group["eps"]
        weight_decay, maximize = group["weight_decay"], group["maximize"]
        for p, param, grad in self._params_with_grad(group):
            _core._mark_written(p)      # in-place update: saved copies are now stale
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _step_tensor()
                state["square_avg"] = _filled_state(p)
                state["acc_delta"] = _filled_state(p)
            square_avg = _real_view(state["square_avg"]._array)
            acc_delta = _real_view(state["acc_delta"]._array)
            step_t = state["step"]._array

            np.add(step_t, 1, out=step_t)
            if maximize:
                grad = neg(grad)
            # PyTorch's adadelta adds the weight decay and the step to a complex parameter as
            # complex numbers (its other updates go through the real views)
            add = complex_add_alpha if p._array.dtype.kind == "c" else add_alpha
            if weight_decay != 0:
                grad = add(grad, param, weight_decay)

            mul_scalar(square_avg, rho, out=square_avg)
            addcmul(square_avg, grad, grad, 1 - rho, out=square_avg)
            std = sqrt(add_scalar(square_avg, eps))
            delta = sqrt(add_scalar(acc_delta, eps))
            np.divide(delta, std, out=delta)
            np.multiply(delta, grad, out=delta)
            mul_scalar(acc_delta, rho, out=acc_delta)
            addcmul(acc_delta, delta, delta, 1 - rho, out=acc_delta)
            add(param, delta, -lr, out=param)


# the functional form of the update (PyTorch's torch.optim.adadelta.adadelta), which runs the class's
from ._functional import adadelta  # noqa: E402,F401
