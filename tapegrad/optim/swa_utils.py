"""Stochastic weight averaging and exponential moving averages of a model's weights, as
torch.optim.swa_utils has them: AveragedModel, the SWALR schedule, update_bn and the averaging
functions (SWA's running mean, EMA)."""
from __future__ import annotations as _annotations

import copy
import itertools
import math

from .. import _core
from ..creation import tensor as _tensor
from ..grad_mode import no_grad
from ..nn.modules.module import Module
from ..nn.modules.normalization import _BatchNorm
from .lr_scheduler import LRScheduler, _per_group, _warn_get_lr_called_within_step

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


# -- averaging functions ---------------------------------------------------------------------------

def _check_decay(decay) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] "
                         "range.")


def get_ema_avg_fn(decay: float = 0.999):
    """``avg_fn(averaged, current, num_averaged)`` of an exponential moving average:
    ``decay * averaged + (1 - decay) * current``."""
    _check_decay(decay)
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """``avg_fn(averaged, current, num_averaged)`` of the running mean (SWA):
    ``averaged + (current - averaged) / (num_averaged + 1)``."""
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


def get_ema_multi_avg_fn(decay: float = 0.999):
    """``multi_avg_fn(averaged_list, current_list, num_averaged)`` updating each averaged tensor
    in place towards its current one by ``1 - decay``."""
    _check_decay(decay)
    @no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        for ema, current in zip(ema_param_list, current_param_list):
            ema.copy_(ema + (current - ema) * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """``multi_avg_fn(averaged_list, current_list, num_averaged)`` of the running mean, in
    place."""
    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        n = float(num_averaged.item()) if isinstance(num_averaged, _core.TensorBase) \
            else float(num_averaged)
        for averaged, current in zip(averaged_param_list, current_param_list):
            averaged.copy_(averaged + (current - averaged) / (n + 1))
    return swa_update


# -- AveragedModel ---------------------------------------------------------------------------------

class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and buffers, with ``use_buffers=True``) are the
    average of the model's over the calls of ``update_parameters(model)``: the running mean by
    default (SWA), or ``avg_fn`` / ``multi_avg_fn`` (e.g. ``get_ema_multi_avg_fn()``).  Without
    use_buffers the copy's buffers follow the model's (``update_bn`` recomputes BatchNorm
    statistics for the averaged weights).  Calling it runs the averaged copy."""

    def __init__(self, model: Module, device=None, avg_fn=None, multi_avg_fn=None,
                 use_buffers=False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _tensor(0, dtype=_core.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _averaged_tensors(self, model: Module):
        if self.use_buffers:
            return (list(itertools.chain(self.module.parameters(), self.module.buffers())),
                    list(itertools.chain(model.parameters(), model.buffers())))
        return list(self.parameters()), list(model.parameters())

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current parameters into the average (the first call copies them)."""
        mine, theirs = self._averaged_tensors(model)
        with no_grad():
            mine = [p.detach() for p in mine]
            theirs = [p.detach() for p in theirs]
            count = int(self.n_averaged.item())
            if count == 0:
                for averaged, current in zip(mine, theirs):
                    averaged.copy_(current)
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn(mine, theirs, self.n_averaged)
            else:
                avg_fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
                for averaged, current in zip(mine, theirs):
                    averaged.copy_(avg_fn(averaged, current, self.n_averaged))
            if not self.use_buffers:
                # The copy's buffers (BatchNorm statistics) stay in step with the model's.
                for b_mine, b_theirs in zip(self.module.buffers(), model.buffers()):
                    b_mine.detach().copy_(b_theirs.detach())
            self.n_averaged.add_(1)


# -- update_bn -------------------------------------------------------------------------------------

def update_bn(loader, model: Module, device=None) -> None:
    """Recompute the BatchNorm running statistics of ``model`` with one pass over ``loader``
    (batches, or (input, ...) tuples/lists whose first element is the input): the statistics
    are reset and averaged cumulatively over the pass (momentum None), the model's momenta and
    training mode are restored afterwards."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm) and module.running_mean is not None:
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


# -- SWALR -----------------------------------------------------------------------------------------

class SWALR(LRScheduler):
    """Anneal each group's learning rate to ``swa_lr`` (a float or one per group) over
    ``anneal_epochs`` steps, by a cosine (``anneal_strategy='cos'``) or linear ramp, then hold
    it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1) -> None:
        swa_lrs = _per_group("swa_lr", optimizer, swa_lr)   # tensors copied, never aliased
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        # the state keeps the strategy's name, not the function: it is saved and loaded
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" \
            else self._linear_anneal

    def state_dict(self) -> dict:
        """The scheduler's state: every attribute except the optimizer and the anneal function
        (rebuilt from ``_anneal_strategy`` on load)."""
        return {key: value for key, value in self.__dict__.items()
                if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict) -> None:
        """Load the scheduler's state (an object returned by `state_dict()`)."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        # The learning rate the ramp started from, recovered from the current one.
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list:
        """The annealed learning rate of each param group for the current step."""
        _warn_get_lr_called_within_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]

