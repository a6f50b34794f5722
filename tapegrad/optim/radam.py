"""RAdam (PyTorch's single-tensor update, operation for operation)."""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core
from .optimizer import (Optimizer, _check_betas, _check_lr, _check_not_differentiable,
                        _filled_state, _real_view, _step_tensor, _to_scalar, add_alpha, add_scalar,
                        addcmul, div_scalar, lerp_scalar, mul_scalar, neg, sqrt)

__all__ = ["RAdam", "radam"]


class RAdam(Optimizer):
    """Implements RAdam (rectified Adam), as torch.optim.RAdam.

    Args:
        params: iterable of parameters or of dicts defining parameter groups
        lr (float): learning rate (default: 1e-3)
        betas (tuple[float, float]): coefficients of the running averages of the gradient and
            its square (default: (0.9, 0.999))
        eps (float): term added to the denominator for numerical stability (default: 1e-8)
        weight_decay (float): weight decay (L2 penalty) (default: 0)
        decoupled_weight_decay (bool): decay the weights directly, as AdamW (default: False)
        maximize (bool): maximize the objective instead of minimizing it (default: False)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False) -> None:
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_not_differentiable(differentiable, foreach)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    _GROUP_DEFAULTS = {"foreach": None, "maximize": False, "differentiable": False,
                       "decoupled_weight_decay": False, "capturable": False}
    _STEP_KEYS = ("step",)
    _STEPS_ARE_TENSORS = True

    def _update_group(self, group) -> None:
        beta1, beta2 = group["betas"]
        lr = _to_scalar(group["lr"])
        eps, weight_decay = group["eps"], group["weight_decay"]
        decoupled, maximize = group["decoupled_weight_decay"], group["maximize"]
        for p, param, grad in self._params_with_grad(group):
            _core._mark_written(p)      # in-place update: saved copies are now stale
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _step_tensor()
                state["exp_avg"] = _filled_state(p)
                state["exp_avg_sq"] = _filled_state(p)
            exp_avg = _real_view(state["exp_avg"]._array)
            exp_avg_sq = _real_view(state["exp_avg_sq"]._array)
            step_t = state["step"]._array

            if maximize:
                grad = neg(grad)
            np.add(step_t, 1, out=step_t)
            step = step_t.item()
            if weight_decay != 0:
                if decoupled:
                    mul_scalar(param, 1 - lr * weight_decay, out=param)
                else:
                    grad = add_alpha(grad, param, weight_decay)

            lerp_scalar(exp_avg, grad, 1 - beta1, out=exp_avg)
            mul_scalar(exp_avg_sq, beta2, out=exp_avg_sq)
            addcmul(exp_avg_sq, grad, grad, 1 - beta2, out=exp_avg_sq)

            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            update = mul_scalar(div_scalar(exp_avg, bias_correction1), lr)
            # length of the approximated simple moving average; rectify once it exceeds 5
            rho_inf = 2 / (1 - beta2) - 1
            rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
            if rho_t > 5.0:
                rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                        / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                root = add_scalar(sqrt(exp_avg_sq), eps)
                # `c / tensor` is tensor.reciprocal() * c in PyTorch
                adaptive_lr = mul_scalar(np.reciprocal(root), bias_correction2 ** 0.5)
                np.multiply(update, adaptive_lr, out=update)
                mul_scalar(update, rect, out=update)
            add_alpha(param, update, -1.0, out=param)


# the functional form of the update (PyTorch's torch.optim.radam.radam), which runs the class's
from ._functional import radam  # noqa: E402,F401
