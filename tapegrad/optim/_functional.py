"""PyTorch's functional optimizer API (torch.optim._functional, torch.optim.adam.adam, ...): one
update step of an algorithm on lists of parameters, gradients and state tensors the caller keeps.

Research code calls these directly (federated and meta-learning loops, optimizers that keep their
state outside an Optimizer, copies of torch.optim's classes).  Each function runs the very update
of the corresponding tapegrad optimizer class: a bare instance of the class whose state for each
parameter *is* the caller's tensors (so the in-place updates land in them), the gradients given
instead of ``.grad``, and a parameter group made of the class's defaults and the given
hyper-parameters.  No second copy of any algorithm exists.
"""
from __future__ import annotations as _annotations

import importlib

from .. import _core
from ..grad_mode import is_grad_enabled, no_grad

__all__ = ["adadelta", "adagrad", "adam", "adamax", "adamw", "asgd", "nadam", "radam", "rmsprop",
           "rprop", "sgd"]

_BARE: dict = {}     # class name -> its defaults (made once, from a throwaway instance)


def _bare(module: str, cls_name: str):
    cls = getattr(importlib.import_module(f".{module}", __package__), cls_name)
    defaults = _BARE.get(cls_name)
    if defaults is None:
        from ..nn.parameter import Parameter
        from .. import zeros
        defaults = _BARE[cls_name] = dict(cls([Parameter(zeros(1))]).defaults)
    opt = cls.__new__(cls)
    opt.defaults = dict(defaults)
    return opt


def _step(module, cls_name, params, grads, state_lists, hyper, differentiable=False):
    """Run `cls_name`'s update once: `state_lists` maps a state key to the caller's list of
    tensors (one per parameter; a None entry is state not made yet), `hyper` the group's
    hyper-parameters.  Returns the per-parameter states (SGD hands new momentum buffers back)."""
    params, grads = list(params), list(grads)
    if len(grads) != len(params):
        raise ValueError(f"expected {len(params)} gradients, got {len(grads)}")
    for key, values in state_lists.items():
        if len(values) != len(params):
            raise ValueError(f"expected {len(params)} tensors in the {key} list, got {len(values)}")
    if differentiable:
        raise NotImplementedError("tapegrad: the functional optimizer API does not support "
                                  "differentiable=True; use the optimizer class")
    if "step" in state_lists and not all(isinstance(s, _core.TensorBase)
                                         for s in state_lists["step"]):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of "
                           "singleton tensors")
    if is_grad_enabled() and any(p.requires_grad and p.is_leaf for p in params):
        # the in-place update of a leaf that requires grad, outside no_grad, as PyTorch refuses it
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    opt = _bare(module, cls_name)
    states = [{key: values[i] for key, values in state_lists.items() if values[i] is not None}
              for i in range(len(params))]
    opt.state = {p: s for p, s in zip(params, states)}
    given = list(zip(params, grads))

    def params_with_grad(group, sparse_grads=None):
        from .optimizer import _real_view
        return [(p, _real_view(p._array), _real_view(g._array)) for p, g in given]
    opt._params_with_grad = params_with_grad
    group = dict(opt.defaults, **hyper)
    group["params"] = params
    with no_grad(), _core.IeeeResults():
        opt._update_group(group)
    return states


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None,
         capturable=False, differentiable=False, fused=None, grad_scale=None, found_inf=None,
         has_complex=False, decoupled_weight_decay=False, *, amsgrad, beta1, beta2, lr,
         weight_decay, eps, maximize) -> None:
    """Functional API that performs Adam algorithm computation (see tapegrad.optim.Adam)."""
    lists = {"exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs, "step": state_steps}
    if amsgrad:
        lists["max_exp_avg_sq"] = max_exp_avg_sqs
    _step("adam", "Adam", params, grads, lists,
          dict(amsgrad=amsgrad, betas=(beta1, beta2), lr=lr, weight_decay=weight_decay, eps=eps,
               maximize=maximize, decoupled_weight_decay=decoupled_weight_decay), differentiable)


def adamw(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None,
          capturable=False, differentiable=False, fused=None, grad_scale=None, found_inf=None,
          has_complex=False, *, amsgrad, beta1, beta2, lr, weight_decay, eps, maximize) -> None:
    """Functional API that performs AdamW algorithm computation (see tapegrad.optim.AdamW)."""
    adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
         differentiable=differentiable, decoupled_weight_decay=True, amsgrad=amsgrad,
         beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps, maximize=maximize)


def sgd(params, d_p_list, momentum_buffer_list, has_sparse_grad=False, foreach=None, fused=None,
        grad_scale=None, found_inf=None, *, weight_decay, momentum, lr, dampening, nesterov,
        maximize) -> None:
    """Functional API that performs SGD algorithm computation (see tapegrad.optim.SGD).  A None
    entry of `momentum_buffer_list` is replaced by the new buffer, as PyTorch does."""
    states = _step("sgd", "SGD", params, d_p_list, {"momentum_buffer": momentum_buffer_list},
                   dict(weight_decay=weight_decay, momentum=momentum, lr=lr, dampening=dampening,
                        nesterov=nesterov, maximize=maximize))
    if momentum != 0:
        for i, s in enumerate(states):
            momentum_buffer_list[i] = s.get("momentum_buffer")


def rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps,
            foreach=None, maximize=False, differentiable=False, capturable=False,
            has_complex=False, *, lr, alpha, eps, weight_decay, momentum, centered) -> None:
    """Functional API that performs RMSprop algorithm computation (see tapegrad.optim.RMSprop)."""
    lists = {"square_avg": square_avgs, "step": state_steps}
    if momentum > 0:
        lists["momentum_buffer"] = momentum_buffer_list
    if centered:
        lists["grad_avg"] = grad_avgs
    _step("rmsprop", "RMSprop", params, grads, lists,
          dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
               centered=centered, maximize=maximize), differentiable)


def adagrad(params, grads, state_sums, state_steps, fused=None, grad_scale=None, found_inf=None,
            has_sparse_grad=False, foreach=None, differentiable=False, has_complex=False, *, lr,
            weight_decay, lr_decay, eps, maximize) -> None:
    """Functional API that performs Adagrad algorithm computation (see tapegrad.optim.Adagrad)."""
    _step("adagrad", "Adagrad", params, grads, {"sum": state_sums, "step": state_steps},
          dict(lr=lr, weight_decay=weight_decay, lr_decay=lr_decay, eps=eps, maximize=maximize),
          differentiable)


def adadelta(params, grads, square_avgs, acc_deltas, state_steps, capturable=False, foreach=None,
             differentiable=False, has_complex=False, *, lr, rho, eps, weight_decay,
             maximize) -> None:
    """Functional API that performs Adadelta algorithm computation (see tapegrad.optim.Adadelta)."""
    _step("adadelta", "Adadelta", params, grads,
          {"square_avg": square_avgs, "acc_delta": acc_deltas, "step": state_steps},
          dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize),
          differentiable)


def adamax(params, grads, exp_avgs, exp_infs, state_steps, foreach=None, maximize=False,
           differentiable=False, capturable=False, has_complex=False, *, eps, beta1, beta2, lr,
           weight_decay) -> None:
    """Functional API that performs Adamax algorithm computation (see tapegrad.optim.Adamax)."""
    _step("adamax", "Adamax", params, grads,
          {"exp_avg": exp_avgs, "exp_inf": exp_infs, "step": state_steps},
          dict(eps=eps, betas=(beta1, beta2), lr=lr, weight_decay=weight_decay,
               maximize=maximize), differentiable)


def radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, decoupled_weight_decay=False,
          foreach=None, differentiable=False, capturable=False, has_complex=False,
          maximize=False, *, beta1, beta2, lr, weight_decay, eps) -> None:
    """Functional API that performs RAdam algorithm computation (see tapegrad.optim.RAdam)."""
    _step("radam", "RAdam", params, grads,
          {"exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs, "step": state_steps},
          dict(betas=(beta1, beta2), lr=lr, weight_decay=weight_decay, eps=eps,
               decoupled_weight_decay=decoupled_weight_decay, maximize=maximize), differentiable)


def nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps,
          decoupled_weight_decay=False, foreach=None, capturable=False, differentiable=False,
          has_complex=False, maximize=False, *, beta1, beta2, lr, weight_decay, momentum_decay,
          eps) -> None:
    """Functional API that performs NAdam algorithm computation (see tapegrad.optim.NAdam)."""
    _step("nadam", "NAdam", params, grads,
          {"exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs, "mu_product": mu_products,
           "step": state_steps},
          dict(betas=(beta1, beta2), lr=lr, weight_decay=weight_decay,
               momentum_decay=momentum_decay, eps=eps,
               decoupled_weight_decay=decoupled_weight_decay, maximize=maximize), differentiable)


def asgd(params, grads, axs, mus, etas, state_steps, foreach=None, maximize=False,
         differentiable=False, capturable=False, has_complex=False, *, lambd, lr, t0, alpha,
         weight_decay) -> None:
    """Functional API that performs ASGD algorithm computation (see tapegrad.optim.ASGD)."""
    _step("asgd", "ASGD", params, grads,
          {"ax": axs, "mu": mus, "eta": etas, "step": state_steps},
          dict(lambd=lambd, lr=lr, t0=t0, alpha=alpha, weight_decay=weight_decay,
               maximize=maximize, foreach=foreach), differentiable)


def rprop(params, grads, prevs, step_sizes, state_steps, foreach=None, capturable=False,
          maximize=False, differentiable=False, has_complex=False, *, step_size_min,
          step_size_max, etaminus, etaplus) -> None:
    """Functional API that performs Rprop algorithm computation (see tapegrad.optim.Rprop)."""
    _step("rprop", "Rprop", params, grads,
          {"prev": prevs, "step_size": step_sizes, "step": state_steps},
          dict(step_sizes=(step_size_min, step_size_max), etas=(etaminus, etaplus),
               maximize=maximize), differentiable)
