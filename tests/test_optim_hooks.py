"""Optimizer hooks: step pre/post hooks (per optimizer and global), state_dict and load_state_dict
pre/post hooks, their order, what they may return, and their removal; each scenario runs under
tapegrad and under PyTorch (when installed) and both must log the same events and values."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.optim.optimizer as tg_optimizer

torch = pytest.importorskip("torch")
import torch.optim.optimizer as torch_optimizer  # noqa: E402

LIBS = [(tg, tg_optimizer), (torch, torch_optimizer)]


def _params(lib):
    w = lib.tensor(np.array([1.0, -2.0, 3.0], dtype=np.float32), requires_grad=True)
    b = lib.tensor(np.array([0.5], dtype=np.float32), requires_grad=True)
    return [w, b]


def _backward(lib, params):
    loss = (params[0] ** 2).sum() + params[1].sum()
    loss.backward()
    return loss


def _step_hooks(lib, optmod):
    log = []
    params = _params(lib)
    opt = lib.optim.SGD(params, lr=0.1, momentum=0.9)
    g_pre = optmod.register_optimizer_step_pre_hook(lambda o, a, k: log.append(("gpre", len(a), dict(k))))
    g_post = optmod.register_optimizer_step_post_hook(lambda o, a, k: log.append(("gpost",)))
    try:
        h_pre = opt.register_step_pre_hook(lambda o, a, k: log.append(("pre", o is opt)))
        opt.register_step_post_hook(lambda o, a, k: log.append(("post", round(o.param_groups[0]["lr"], 3))))

        def closure():
            opt.zero_grad()
            log.append("closure")
            return _backward(lib, params)

        # a pre-hook that hands step() a closure through its kwargs
        h_args = opt.register_step_pre_hook(lambda o, a, k: (a, {"closure": closure}))
        loss = opt.step()
        log.append(("loss", round(float(loss), 4)))
        h_args.remove()
        h_pre.remove()
        _backward(lib, params)
        opt.step()
        g_pre.remove()
        g_post.remove()
        opt.step()
    finally:
        g_pre.remove()
        g_post.remove()
    log.append([p.detach().numpy().round(5).tolist() for p in params])
    return log


def test_step_hooks_order_arguments_and_removal():
    assert _step_hooks(*LIBS[0]) == _step_hooks(*LIBS[1])


def _subclass_step(lib, optmod):
    log = []

    class Halve(lib.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 0.5})

        def step(self, closure=None):
            log.append("own step")
            with lib.no_grad():
                for group in self.param_groups:
                    for p in group["params"]:
                        p.mul_(group["lr"])

    params = _params(lib)
    opt = Halve(params)
    opt.register_step_pre_hook(lambda o, a, k: log.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: log.append("post"))
    opt.step()
    second = Halve(_params(lib))  # the class is wrapped once, not once per instance
    second.step()
    log.append(getattr(Halve.step, "hooked", None))
    log.append(Halve.step.__name__)
    log.append(params[0].detach().numpy().tolist())
    return log


def test_a_subclass_own_step_runs_the_hooks():
    assert _subclass_step(*LIBS[0]) == _subclass_step(*LIBS[1])


def _bad_pre_hook(lib, optmod):
    opt = lib.optim.SGD(_params(lib), lr=0.1)
    opt.register_step_pre_hook(lambda o, a, k: 3)
    with pytest.raises(RuntimeError) as info:
        opt.step()
    message = str(info.value)
    return message[message.index(" must return"):]


def test_a_pre_hook_returning_something_else_raises():
    assert _bad_pre_hook(*LIBS[0]) == _bad_pre_hook(*LIBS[1])


def _state_dict_hooks(lib, optmod):
    log = []
    params = _params(lib)
    opt = lib.optim.Adam(params, lr=0.01)
    _backward(lib, params)
    opt.step()
    opt.register_state_dict_pre_hook(lambda o: log.append("sd pre A"))
    opt.register_state_dict_pre_hook(lambda o: log.append("sd pre B"), prepend=True)

    def add_key(o, sd):
        log.append(("sd post", sorted(sd)))
        sd = dict(sd)
        sd["extra"] = 7
        return sd

    opt.register_state_dict_post_hook(add_key)
    opt.register_state_dict_post_hook(lambda o, sd: log.append(("sd post 2", sd.get("extra"))))
    sd = opt.state_dict()
    log.append(sorted(sd))

    def change_lr(o, sd):
        log.append(("load pre", sorted(sd)))
        sd["param_groups"] = [dict(g, lr=0.5) for g in sd["param_groups"]]
        return sd

    other = lib.optim.Adam(_params(lib), lr=0.01)
    h = other.register_load_state_dict_pre_hook(change_lr)
    other.register_load_state_dict_post_hook(lambda o: log.append(("load post", o.param_groups[0]["lr"])))
    other.register_load_state_dict_pre_hook(lambda o, sd: log.append("load pre first"), prepend=True)
    other.load_state_dict(sd)
    log.append(sd["param_groups"][0]["lr"])  # the caller's dict: its param_groups entry untouched
    h.remove()
    other.load_state_dict(sd)
    log.append(other.param_groups[0]["lr"])
    state = other.state_dict()["state"]
    log.append({k: sorted(v) for k, v in state.items()})
    return log


def test_state_dict_and_load_state_dict_hooks():
    assert _state_dict_hooks(*LIBS[0]) == _state_dict_hooks(*LIBS[1])


def _copies_and_names(lib, optmod):
    opt = lib.optim.SGD(_params(lib), lr=0.1)
    opt.register_step_pre_hook(lambda o, a, k: None)
    clone = copy.deepcopy(opt)  # hooks are not part of an optimizer's pickled state
    public = [n for n in dir(opt) if n.startswith("register_") or n == "profile_hook_step"]
    return (len(opt._optimizer_step_pre_hooks), len(clone._optimizer_step_pre_hooks), public,
            sorted(optmod.__all__))


def test_copies_leave_hooks_out_and_names_match():
    assert _copies_and_names(*LIBS[0]) == _copies_and_names(*LIBS[1])


def _scheduler_with_hooks(lib, optmod):
    log = []
    params = _params(lib)
    opt = lib.optim.SGD(params, lr=1.0)
    opt.register_step_post_hook(lambda o, a, k: log.append(o.param_groups[0]["lr"]))
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        _backward(lib, params)
        opt.step()
        sched.step()
    return log


def test_hooks_and_an_lr_scheduler_together():
    assert _scheduler_with_hooks(*LIBS[0]) == _scheduler_with_hooks(*LIBS[1]) == [1.0, 0.5, 0.25]
