"""Adam and AdamW (PyTorch's single-tensor update, bit for bit in float32)."""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core
from .optimizer import (Optimizer, _filled_state, _is_tensor, _real_view,
                        _scalar_pow, _step_tensor, _to_scalar, add_alpha, add_scalar, addcdiv,
                        addcmul, div_scalar, lerp_scalar, mul_scalar, neg, sqrt)

__all__ = ["Adam", "AdamW", "adam"]


def _state_of(optimizer, p, amsgrad: bool) -> dict:
    """p's Adam state, created at its first step (PyTorch's lazy initialization): the step count
    and the zero moments (and their running maximum with amsgrad)."""
    state = optimizer.state[p]
    if len(state) == 0:
        state["step"] = _step_tensor()
        state["exp_avg"] = _filled_state(p)
        state["exp_avg_sq"] = _filled_state(p)
        if amsgrad:
            state["max_exp_avg_sq"] = _filled_state(p)
    return state


class Adam(Optimizer):
    """Implements the Adam algorithm, as torch.optim.Adam.

    Args:
        params: iterable of parameters or of dicts defining parameter groups
        lr (float): learning rate (default: 1e-3)
        betas (tuple[float, float]): coefficients of the running averages of the gradient and its
            square (default: (0.9, 0.999))
        eps (float): term added to the denominator for numerical stability (default: 1e-8)
        weight_decay (float): weight decay (L2 penalty) (default: 0)
        amsgrad (bool): use the AMSGrad variant (default: False)
        maximize (bool): maximize the objective instead of minimizing it (default: False)
        decoupled_weight_decay (bool): decay the weights directly, as AdamW (default: False)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False) -> None:
        if isinstance(lr, _core.TensorBase):
            if foreach and not capturable:
                raise ValueError(_tensor_hyper_with_foreach("lr"))
            if lr._array.size != 1:
                raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= _to_scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= _to_scalar(betas[0]) < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= _to_scalar(betas[1]) < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        b0_tensor = isinstance(betas[0], _core.TensorBase)
        b1_tensor = isinstance(betas[1], _core.TensorBase)
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (b0_tensor and b1_tensor)):
            raise ValueError("betas must be either both floats or both Tensors")
        for i, beta in enumerate(betas):
            if isinstance(beta, _core.TensorBase):
                if foreach and not capturable:
                    raise ValueError(_tensor_hyper_with_foreach(f"betas[{i}]"))
                if beta._array.size != 1:
                    raise ValueError(f"Tensor betas[{i}] must be 1-element")
        if fused and differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        # Tensor betas stay (0-d) tensors in the group, as PyTorch keeps them (a state dict
        # shows them so), and the update computes with them in their dtype.
        betas = tuple(b.reshape(()) if isinstance(b, _core.TensorBase) else b for b in betas)

        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    _GROUP_DEFAULTS = {"amsgrad": False, "maximize": False, "foreach": None, "capturable": False,
                       "differentiable": False, "decoupled_weight_decay": False, "fused": None}
    _STEP_KEYS = ("step",)
    _STEPS_ARE_TENSORS = True

    def _refuse_sparse_grad(self) -> None:
        raise RuntimeError("Adam does not support sparse gradients, please consider SparseAdam "
                           "instead")

    def _update_group(self, group) -> None:
        if group["foreach"] and not group["capturable"]:
            _refuse_tensor_hypers_for_foreach(group)
        if group["differentiable"]:
            self._update_group_differentiable(group)
            return
        beta1, beta2 = (_to_scalar(b) for b in group["betas"])
        lr = _to_scalar(group["lr"])
        weight_decay = group["weight_decay"]
        eps = group["eps"]
        amsgrad = group["amsgrad"]
        maximize = group["maximize"]
        decoupled = group["decoupled_weight_decay"]
        for p, param, grad in self._params_with_grad(group):
            _core._mark_written(p)      # in-place update: saved copies are now stale
            state = _state_of(self, p, amsgrad)
            exp_avg = _real_view(state["exp_avg"]._array)
            exp_avg_sq = _real_view(state["exp_avg_sq"]._array)
            step_t = state["step"]._array

            if maximize:
                grad = neg(grad)
            np.add(step_t, 1, out=step_t)

            if weight_decay != 0:
                if decoupled:
                    mul_scalar(param, 1 - lr * weight_decay, out=param)
                else:
                    grad = add_alpha(grad, param, weight_decay)

            # (PyTorch casts a tensor beta1 to the parameter's dtype for this one operation)
            lerp_scalar(exp_avg, grad, 1 - (param.dtype.type(beta1)
                                            if isinstance(beta1, np.generic) else beta1),
                        out=exp_avg)
            mul_scalar(exp_avg_sq, beta2, out=exp_avg_sq)
            addcmul(exp_avg_sq, grad, grad, 1 - beta2, out=exp_avg_sq)

            step = step_t.item()
            bias_correction1 = 1 - _scalar_pow(beta1, step)
            bias_correction2 = 1 - _scalar_pow(beta2, step)
            if isinstance(bias_correction1, np.generic) and not isinstance(lr, np.generic):
                # (tensor betas) PyTorch divides a Python number by a 0-d tensor as the number
                # times the tensor's reciprocal, each rounded to the tensor's dtype
                step_size = lr * (1 / bias_correction1)
            else:
                step_size = lr / bias_correction1
            bias_correction2_sqrt = bias_correction2 ** 0.5

            if amsgrad:
                max_sq = _real_view(state["max_exp_avg_sq"]._array)
                np.maximum(max_sq, exp_avg_sq, out=max_sq)
                denom = sqrt(max_sq)
            else:
                denom = sqrt(exp_avg_sq)
            div_scalar(denom, bias_correction2_sqrt, out=denom)
            add_scalar(denom, eps, out=denom)
            addcdiv(param, exp_avg, denom, -step_size, out=param)

    def _update_group_differentiable(self, group) -> None:
        """PyTorch's differentiable=True step: the update in recorded tensor operations
        (Optimizer.step runs it with grad mode on), in the form PyTorch's differentiable
        (capturable) branch computes it, so the new parameters and moments have gradients
        towards the old ones, the gradients, and a tensor lr, betas or weight_decay that
        requires grad."""
        lr, (beta1, beta2) = group["lr"], group["betas"]
        weight_decay, eps = group["weight_decay"], group["eps"]
        amsgrad = group["amsgrad"]

        def needs_grad(x):
            return _is_tensor(x) and x.requires_grad

        # PyTorch updates a complex parameter through its view_as_real views; tapegrad's tape
        # does not record in-place writes through a view of a tensor that requires grad, so a
        # complex parameter is refused before anything is updated.
        if any(p.grad is not None and p.is_complex() for p in group["params"]):
            raise NotImplementedError(f"tapegrad: {type(self).__name__}(differentiable=True) does "
                                      "not support complex parameters")
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.grad.is_sparse:
                self._refuse_sparse_grad()
            state = _state_of(self, p, amsgrad)
            grad = -p.grad if group["maximize"] else p.grad
            step_t = state["step"]
            step_t += 1
            if weight_decay != 0:
                if group["decoupled_weight_decay"]:
                    p.mul_(1 - lr * weight_decay)
                elif needs_grad(weight_decay):
                    grad = grad.addcmul_(p.clone(), weight_decay)
                else:
                    grad = grad.add(p, alpha=weight_decay)
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            max_sq = state.get("max_exp_avg_sq")
            # (PyTorch casts a tensor beta1 to the parameter's dtype for this one operation)
            exp_avg.lerp_(grad, 1 - (beta1.to(dtype=p.dtype) if _is_tensor(beta1) else beta1))
            if needs_grad(beta2):
                exp_avg_sq.lerp_(grad.square(), 1 - beta2)
            else:
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=float(1 - beta2))
            if not group["differentiable"]:
                # (the route of a group holding bfloat16 parameters, Optimizer's
                # _update_bfloat16_group): PyTorch's plain single-tensor step, its bias
                # corrections Python numbers and each tensor op rounded to the parameter's dtype
                step = step_t.item()
                step_size = _to_scalar(lr) / (1 - _to_scalar(beta1) ** step)
                bias_correction2_sqrt = (1 - _to_scalar(beta2) ** step) ** 0.5
                if amsgrad:
                    max_sq.copy_(max_sq.maximum(exp_avg_sq))
                denom = ((max_sq if amsgrad else exp_avg_sq).sqrt() / bias_correction2_sqrt
                         ).add_(eps)
                p.addcdiv_(exp_avg, denom, value=-step_size)
                continue
            step = step_t
            bias_correction1 = 1 - beta1 ** (step.clone() if needs_grad(beta1) else step)
            bias_correction2 = 1 - beta2 ** (step.clone() if needs_grad(beta2) else step)
            step_size_neg = (lr / bias_correction1).neg()
            bias_correction2_sqrt = bias_correction2.sqrt()
            if amsgrad:
                max_sq.copy_(max_sq.clone().maximum(exp_avg_sq))
                second = max_sq
            else:
                second = exp_avg_sq
            denom = (second.sqrt() / (bias_correction2_sqrt * step_size_neg)).add_(
                eps / step_size_neg)
            p.addcdiv_(exp_avg.clone(), denom)


def _tensor_hyper_with_foreach(name: str) -> str:
    return f"{name} as a Tensor is not supported for capturable=False and foreach=True"


def _refuse_tensor_hypers_for_foreach(group) -> None:
    """PyTorch's multi-tensor Adam takes a tensor lr or betas only when capturable: a group
    given one after construction (a scheduler or a script writing group["lr"]) is refused at
    the step, the lr while gathering the parameters (a RuntimeError), the betas in the update."""
    if not any(p.grad is not None for p in group["params"]):
        return
    if _is_tensor(group["lr"]):
        raise RuntimeError(_tensor_hyper_with_foreach("lr"))
    for name, beta in zip(("beta1", "beta2"), group["betas"]):
        if _is_tensor(beta):
            raise ValueError(_tensor_hyper_with_foreach(name))


class AdamW(Adam):
    """Implements AdamW (Adam with decoupled weight decay), as torch.optim.AdamW.

    Same arguments as Adam, except that weight_decay defaults to 1e-2 and is applied to the
    parameters directly (`param *= 1 - lr * weight_decay`) rather than added to the gradient.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


# the functional form of the update (PyTorch's torch.optim.adam.adam), which runs the class's
from ._functional import adam  # noqa: E402,F401
