"""Adagrad (PyTorch's single-tensor update, bit for bit in float32)."""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core
from .optimizer import (Optimizer, _check_not_differentiable, _filled_state, _real_view,
                        _step_tensor, _to_scalar, add_alpha, add_scalar, addcdiv, addcmul, neg,
                        sqrt)

__all__ = ["Adagrad", "adagrad"]


class Adagrad(Optimizer):
    """Implements the Adagrad algorithm, as torch.optim.Adagrad.

    Args:
        params: iterable of parameters or of dicts defining parameter groups
        lr (float): learning rate (default: 1e-2)
        lr_decay (float): learning rate decay (default: 0)
        weight_decay (float): weight decay (L2 penalty) (default: 0)
        initial_accumulator_value (float): initial value of the sums of squared gradients
            (default: 0)
        eps (float): term added to the denominator for numerical stability (default: 1e-10)
        maximize (bool): maximize the objective instead of minimizing it (default: False)
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False,
                 fused=None) -> None:
        if isinstance(lr, _core.TensorBase) and lr._array.size != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= _to_scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_not_differentiable(differentiable, foreach)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        # Adagrad creates the state of the constructor's parameters up front (as PyTorch does,
        # with the constructor's initial_accumulator_value); later groups get it lazily.
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, initial_accumulator_value)

    def _init_state(self, p, initial_accumulator_value) -> None:
        state = self.state[p]
        state["step"] = _step_tensor()
        state["sum"] = _filled_state(p, initial_accumulator_value)

    _GROUP_DEFAULTS = {"foreach": None, "maximize": False, "differentiable": False, "fused": None}
    _STEP_KEYS = ("step",)
    _STEPS_ARE_TENSORS = True

    def _update_group(self, group) -> None:
        lr = _to_scalar(group["lr"])
        lr_decay = group["lr_decay"]
        weight_decay = group["weight_decay"]
        eps = group["eps"]
        maximize = group["maximize"]
        sparse_grads = []
        for p, param, grad in self._params_with_grad(group, sparse_grads):
            _core._mark_written(p)      # in-place update: saved copies are now stale
            state = self.state[p]
            if len(state) == 0:
                self._init_state(p, self.defaults["initial_accumulator_value"])
            state_sum = _real_view(state["sum"]._array)
            step_t = state["step"]._array

            np.add(step_t, 1, out=step_t)
            step = step_t.item()
            if maximize:
                grad = neg(grad)
            if weight_decay != 0:
                grad = add_alpha(grad, param, weight_decay)

            clr = lr / (1 + (step - 1) * lr_decay)
            addcmul(state_sum, grad, grad, 1, out=state_sum)
            std = sqrt(state_sum)
            add_scalar(std, eps, out=std)
            addcdiv(param, grad, std, -clr, out=param)
        for p, grad in sparse_grads:
            self._sparse_update(p, grad, lr, lr_decay, weight_decay, eps, maximize)

    def _sparse_update(self, p, grad, lr, lr_decay, weight_decay, eps, maximize) -> None:
        """PyTorch's Adagrad step for a sparse gradient (embedding(sparse=True)): on the rows of
        the coalesced gradient only, the squared values added into the sum and the parameter
        moved by -clr * values / (sqrt(sum) + eps), PyTorch's operations in its order."""
        if p.is_sparse:
            raise NotImplementedError("tapegrad: Adagrad steps on sparse gradients of a sparse "
                                      "parameter are not supported")
        state = self.state[p]
        if len(state) == 0:
            self._init_state(p, self.defaults["initial_accumulator_value"])
        step_t = state["step"]._array
        np.add(step_t, 1, out=step_t)
        step = step_t.item()
        if maximize:
            grad = -grad
        if weight_decay != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        clr = lr / (1 + (step - 1) * lr_decay)
        grad = grad.coalesce()
        # one index array per sparse dimension: an embedding's gradient has one (rows), a
        # gradient made by to_sparse() has one per dimension (single elements)
        rows = tuple(grad._indices()._array)
        values = grad._values()._array
        state_sum = state["sum"]._array
        state_sum[rows] += values * values
        std = np.sqrt(state_sum[rows])
        std += p._array.dtype.type(eps)
        _core._mark_written(p)
        p._array[rows] += p._array.dtype.type(-clr) * (values / std)


# the functional form of the update (PyTorch's torch.optim.adagrad.adagrad), which runs the class's
from ._functional import adagrad  # noqa: E402,F401
