"""ASGD, averaged SGD (PyTorch's single-tensor update, operation for operation)."""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core
from .optimizer import (Optimizer, _check_lr, _check_not_differentiable, _filled_state, _nd,
                        _real_view, _scalar_pow, _step_tensor, _to_scalar, add_alpha, addcmul,
                        mul_scalar, neg)

__all__ = ["ASGD", "asgd"]


class ASGD(Optimizer):
    """Implements averaged stochastic gradient descent, as torch.optim.ASGD.

    Args:
        params: iterable of parameters or of dicts defining parameter groups
        lr (float): learning rate (default: 1e-2)
        lambd (float): decay term (default: 1e-4)
        alpha (float): power for the eta update (default: 0.75)
        t0 (float): the step at which averaging starts (default: 1e6)
        weight_decay (float): weight decay (L2 penalty) (default: 0)
        maximize (bool): maximize the objective instead of minimizing it (default: False)

    The running average of the parameters is `state['ax']`.
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False) -> None:
        _check_lr(lr)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_not_differentiable(differentiable, foreach)
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    _CAPTURABLE_STATE = "params, mus, etas, and state_steps"   # (PyTorch's refusal names it)
    _GROUP_DEFAULTS = {"foreach": None, "maximize": False, "differentiable": False,
                       "capturable": False}
    _STEP_KEYS = ("step", "eta", "mu")

    def _update_group(self, group) -> None:
        lr = _to_scalar(group["lr"])
        lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
        weight_decay, maximize = group["weight_decay"], group["maximize"]
        for p, param, grad in self._params_with_grad(group):
            _core._mark_written(p)      # in-place update: saved copies are now stale
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _step_tensor()
                state["eta"] = _step_tensor(lr)         # scalars as PyTorch keeps them
                state["mu"] = _step_tensor(1.0)
                state["ax"] = _filled_state(p)
            step_t = state["step"]._array
            eta_t, mu_t = state["eta"]._array, state["mu"]._array
            ax = _real_view(state["ax"]._array)

            if maximize:
                grad = neg(grad)
            np.add(step_t, 1, out=step_t)
            if weight_decay != 0:
                grad = add_alpha(grad, param, weight_decay)

            if group["foreach"]:
                self._foreach_update(param, grad, ax, step_t, eta_t, mu_t, lr, lambd, alpha, t0)
                continue
            eta = eta_t.item()
            mul_scalar(param, 1 - lambd * eta, out=param)      # decay term
            add_alpha(param, grad, -eta, out=param)
            mu = mu_t.item()
            if mu != 1:
                diff = _nd(np.subtract(param, ax))
                mul_scalar(diff, mu, out=diff)
                np.add(ax, diff, out=ax)
            else:
                np.copyto(ax, param)

            # PyTorch makes the new values tensors of the default dtype (torch.as_tensor of a
            # Python float) before copying them into the state, whose dtype may differ (a state
            # made under another default, or loaded from a checkpoint)
            step = step_t.item()
            rounded = _core.get_default_dtype().np_dtype.type
            eta_t[...] = rounded(lr / _scalar_pow(1 + lambd * lr * step, alpha))
            mu_t[...] = rounded(1 / max(1, step - t0))

    @staticmethod
    def _foreach_update(param, grad, ax, step_t, eta_t, mu_t, lr, lambd, alpha, t0) -> None:
        """PyTorch's foreach=True update, which it writes otherwise than its single-tensor one:
        param -= eta * (grad + lambd * param), the average always moved by mu, and the new eta
        and mu computed from the float32 step tensor in float32 (so eta rounds otherwise)."""
        dt = param.dtype.type
        decayed = add_alpha(grad, param, lambd)
        addcmul(param, decayed, dt(eta_t[()]), -1, out=param)
        addcmul(ax, _nd(np.subtract(param, ax)), dt(mu_t[()]), out=ax)
        step = step_t[()]                                   # a float32 scalar, as the tensor
        base = _scalar_pow(1 + lambd * lr * step, alpha)
        # (a Python lr divided by a 0-d tensor: PyTorch multiplies by the reciprocal)
        eta_t[...] = lr / base if isinstance(lr, np.generic) else lr * (1 / base)
        since_t0 = step - t0
        mu_t[...] = 1 / since_t0 if since_t0 > 1 else 1.0


# the functional form of the update (PyTorch's torch.optim.asgd.asgd), which runs the class's
from ._functional import asgd  # noqa: E402,F401
