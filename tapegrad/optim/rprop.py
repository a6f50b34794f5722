"""Rprop (PyTorch's single-tensor update, operation for operation)."""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core
from .optimizer import (Optimizer, _check_lr, _check_not_differentiable, _filled_state, _real_view,
                        _step_tensor, _to_scalar, addcmul, neg)

__all__ = ["Rprop", "rprop"]


class Rprop(Optimizer):
    """Implements the resilient backpropagation algorithm, as torch.optim.Rprop.

    Each element keeps its own step size: multiplied by ``etaplus`` while the gradient keeps its
    sign, by ``etaminus`` when the sign flips (and that step is skipped), clamped to
    ``step_sizes``; the parameter moves by ``-sign(grad) * step_size``.

    Args:
        params: iterable of parameters or of dicts defining parameter groups
        lr (float): initial step size (default: 1e-2)
        etas (tuple[float, float]): (etaminus, etaplus), the multiplicative decrease and increase
            factors (default: (0.5, 1.2))
        step_sizes (tuple[float, float]): minimal and maximal step sizes (default: (1e-6, 50))
        maximize (bool): maximize the objective instead of minimizing it (default: False)
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False) -> None:
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        _check_not_differentiable(differentiable, foreach)
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    _GROUP_DEFAULTS = {"foreach": None, "maximize": False, "differentiable": False,
                       "capturable": False}
    _STEP_KEYS = ("step",)
    _STEPS_ARE_TENSORS = True

    def _update_group(self, group) -> None:
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        for p, param, grad in self._params_with_grad(group):
            _core._mark_written(p)      # in-place update: saved copies are now stale
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _step_tensor()
                state["prev"] = _filled_state(p)
                state["step_size"] = _filled_state(p, _to_scalar(group["lr"]))
            prev = _real_view(state["prev"]._array)
            step_size = _real_view(state["step_size"]._array)
            step_t = state["step"]._array
            if group["maximize"]:
                grad = neg(grad)
            np.add(step_t, 1, out=step_t)

            # The factor of each step size: etaplus where the gradient kept its sign, etaminus
            # where it flipped, 1 where either is zero (in the parameter's dtype, as PyTorch's
            # masked writes into the sign tensor).
            agreement = np.sign(grad * prev)
            factor = np.ones_like(agreement)
            factor[agreement > 0] = etaplus
            factor[agreement < 0] = etaminus
            np.multiply(step_size, factor, out=step_size)
            np.clip(step_size, step_size_min, step_size_max, out=step_size)

            grad = np.array(grad, copy=True)
            grad[factor == factor.dtype.type(etaminus)] = 0   # a flipped sign skips this step
            addcmul(param, np.sign(grad), step_size, value=-1, out=param)
            np.copyto(prev, grad)


# the functional form of the update (PyTorch's torch.optim.rprop.rprop), which runs the class's
from ._functional import rprop  # noqa: E402,F401
