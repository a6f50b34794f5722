"""NAdam (PyTorch's single-tensor update, operation for operation)."""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core
from .optimizer import (Optimizer, _check_betas, _check_lr, _check_not_differentiable,
                        _filled_state, _real_view, _step_tensor, _to_scalar, add_alpha, add_scalar,
                        addcdiv, addcmul, div_scalar, lerp_scalar, mul_scalar, neg, sqrt)

__all__ = ["NAdam", "nadam"]


class NAdam(Optimizer):
    """Implements NAdam (Adam with Nesterov momentum), as torch.optim.NAdam.

    Args:
        params: iterable of parameters or of dicts defining parameter groups
        lr (float): learning rate (default: 2e-3)
        betas (tuple[float, float]): coefficients of the running averages of the gradient and
            its square (default: (0.9, 0.999))
        eps (float): term added to the denominator for numerical stability (default: 1e-8)
        weight_decay (float): weight decay (L2 penalty) (default: 0)
        momentum_decay (float): momentum decay psi (default: 4e-3)
        decoupled_weight_decay (bool): decay the weights directly, as AdamW (default: False)
        maximize (bool): maximize the objective instead of minimizing it (default: False)
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False) -> None:
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        _check_not_differentiable(differentiable, foreach)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    _CAPTURABLE_STATE = "params, mu_products and state_steps"   # (PyTorch's refusal names it)
    _GROUP_DEFAULTS = {"maximize": False, "foreach": None, "capturable": False,
                       "differentiable": False, "decoupled_weight_decay": False}
    _STEP_KEYS = ("step", "mu_product")
    _STEPS_ARE_TENSORS = True

    def _update_group(self, group) -> None:
        beta1, beta2 = group["betas"]
        lr = _to_scalar(group["lr"])
        eps, weight_decay = group["eps"], group["weight_decay"]
        momentum_decay = group["momentum_decay"]
        decoupled, maximize = group["decoupled_weight_decay"], group["maximize"]
        for p, param, grad in self._params_with_grad(group):
            _core._mark_written(p)      # in-place update: saved copies are now stale
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _step_tensor()
                state["mu_product"] = _step_tensor(1.0)
                state["exp_avg"] = _filled_state(p)
                state["exp_avg_sq"] = _filled_state(p)
            exp_avg = _real_view(state["exp_avg"]._array)
            exp_avg_sq = _real_view(state["exp_avg_sq"]._array)
            mu_product_t = state["mu_product"]._array      # a scalar of _get_scalar_dtype(), as PyTorch's
            step_t = state["step"]._array

            if maximize:
                grad = neg(grad)
            np.add(step_t, 1, out=step_t)
            step = step_t.item()
            bias_correction2 = 1 - beta2 ** step
            if weight_decay != 0:
                if decoupled:
                    mul_scalar(param, 1 - lr * weight_decay, out=param)
                else:
                    grad = add_alpha(grad, param, weight_decay)

            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
            mul_scalar(mu_product_t, mu, out=mu_product_t)
            mu_product = mu_product_t.item()

            lerp_scalar(exp_avg, grad, 1 - beta1, out=exp_avg)
            mul_scalar(exp_avg_sq, beta2, out=exp_avg_sq)
            addcmul(exp_avg_sq, grad, grad, 1 - beta2, out=exp_avg_sq)
            denom = sqrt(div_scalar(exp_avg_sq, bias_correction2))
            mu_product_next = mu_product * mu_next
            add_scalar(denom, eps, out=denom)
            addcdiv(param, grad, denom, -lr * (1.0 - mu) / (1.0 - mu_product), out=param)
            addcdiv(param, exp_avg, denom, (-lr * mu_next) / (1.0 - mu_product_next), out=param)


# the functional form of the update (PyTorch's torch.optim.nadam.nadam), which runs the class's
from ._functional import nadam  # noqa: E402,F401
