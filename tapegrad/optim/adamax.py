"""Adamax (PyTorch's single-tensor update, operation for operation)."""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core
from .optimizer import (Optimizer, _check_betas, _check_lr, _check_not_differentiable,
                        _filled_state, _real_view, _step_tensor, _to_scalar, add_alpha, add_scalar,
                        addcdiv, lerp_scalar, mul_scalar, neg)

__all__ = ["Adamax", "adamax"]


class Adamax(Optimizer):
    """Implements Adamax (Adam with the infinity norm), as torch.optim.Adamax.

    Args:
        params: iterable of parameters or of dicts defining parameter groups
        lr (float): learning rate (default: 2e-3)
        betas (tuple[float, float]): coefficients of the running average of the gradient and of
            the decay of the infinity norm (default: (0.9, 0.999))
        eps (float): term added to the denominator for numerical stability (default: 1e-8)
        weight_decay (float): weight decay (L2 penalty) (default: 0)
        maximize (bool): maximize the objective instead of minimizing it (default: False)
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False,
                 capturable=False) -> None:
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_not_differentiable(differentiable, foreach)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    _GROUP_DEFAULTS = {"foreach": None, "maximize": False, "differentiable": False,
                       "capturable": False}
    _STEP_KEYS = ("step",)
    _STEPS_ARE_TENSORS = True

    def _update_group(self, group) -> None:
        beta1, beta2 = group["betas"]
        lr = _to_scalar(group["lr"])
        eps, weight_decay, maximize = group["eps"], group["weight_decay"], group["maximize"]
        for p, param, grad in self._params_with_grad(group):
            _core._mark_written(p)      # in-place update: saved copies are now stale
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _step_tensor()
                state["exp_avg"] = _filled_state(p)
                state["exp_inf"] = _filled_state(p)
            exp_avg = _real_view(state["exp_avg"]._array)
            exp_inf = _real_view(state["exp_inf"]._array)
            step_t = state["step"]._array

            if maximize:
                grad = neg(grad)
            np.add(step_t, 1, out=step_t)
            if weight_decay != 0:
                grad = add_alpha(grad, param, weight_decay)

            lerp_scalar(exp_avg, grad, 1 - beta1, out=exp_avg)
            mul_scalar(exp_inf, beta2, out=exp_inf)
            np.maximum(exp_inf, add_scalar(np.abs(grad), eps), out=exp_inf)
            clr = lr / (1 - beta1 ** step_t.item())
            addcdiv(param, exp_avg, exp_inf, -clr, out=param)


# the functional form of the update (PyTorch's torch.optim.adamax.adamax), which runs the class's
from ._functional import adamax  # noqa: E402,F401
