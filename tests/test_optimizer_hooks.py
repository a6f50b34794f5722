"""Optimizer hooks as PyTorch's: step pre/post hooks (per optimizer and global, a pre hook may
replace the arguments), state_dict and load_state_dict pre/post hooks (a returned dict
replaces the dict), a script's own Optimizer subclass hooked too, hooks not copied."""
import copy
import importlib

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _story(lib):
    optimizer_module = importlib.import_module(lib.__name__ + ".optim.optimizer")
    w = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
    opt = lib.optim.SGD([w], lr=0.1)
    log = []
    first = opt.register_step_pre_hook(lambda o, a, k: log.append(("pre", len(a), sorted(k))))
    opt.register_step_post_hook(lambda o, a, k: log.append(("post", len(a), sorted(k))))
    every = optimizer_module.register_optimizer_step_pre_hook(
        lambda o, a, k: log.append(("global pre", type(o).__name__)))
    w.grad = lib.tensor([1.0, 1.0])
    opt.step()
    log.append(w.detach().numpy().round(6).tolist())
    first.remove()
    every.remove()
    opt.step(closure=None)
    swap = opt.register_step_pre_hook(lambda o, a, k: (a, {"closure": lambda: 7.0}))
    log.append(opt.step())
    swap.remove()
    bad = opt.register_step_pre_hook(lambda o, a, k: 5)
    with pytest.raises(RuntimeError, match=r"must return None or a tuple of \(new_args, "
                                           r"new_kwargs\), but got 5"):
        opt.step()
    bad.remove()
    opt.register_state_dict_pre_hook(lambda o: log.append("state_dict pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    sd = opt.state_dict()
    log.append(sorted(sd))
    opt.register_load_state_dict_pre_hook(
        lambda o, sd: {k: v for k, v in sd.items() if k != "extra"})
    opt.register_load_state_dict_post_hook(lambda o: log.append("load post 1"))
    opt.register_load_state_dict_post_hook(lambda o: log.append("load post 0"), prepend=True)
    opt.load_state_dict(sd)

    class Mine(lib.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 1.0})

        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    p.data.add_(-group["lr"])
            return 3
    mine = Mine([w])
    mine.register_step_post_hook(lambda o, a, k: log.append(("mine post", len(a))))
    log.append(mine.step())
    log.append(len(copy.deepcopy(opt)._optimizer_step_post_hooks))
    return log


def test_optimizer_hooks_as_torch():
    assert _story(tg) == _story(torch)


def test_optimizer_without_hooks_steps_as_before():
    w = tg.nn.Parameter(tg.tensor([1.0, 2.0], dtype=tg.float64))
    opt = tg.optim.Adam([w], lr=0.1)
    w.grad = tg.tensor([1.0, -1.0], dtype=tg.float64)
    opt.step()
    assert w.detach().numpy().round(6).tolist() == [0.9, 2.1]   # (float32, rounded)
    # The classes never change after they are made (stubs and introspection see one state).
    assert type(opt).step is tg.optim.Optimizer.step and tg.optim.Optimizer.step.hooked


def test_subclass_step_calling_super_runs_the_hooks_once():
    """PyTorch runs them once too while SGD itself was never instantiated in the process (it
    wraps each class's step at its first instance; after an SGD exists, twice): tapegrad's
    count does not depend on the process's history."""
    log = []

    class Damped(tg.optim.SGD):
        def step(self, closure=None):
            log.append("inner")
            return super().step(closure)
    tg.optim.SGD([tg.nn.Parameter(tg.ones(1))], lr=0.1)
    w = tg.nn.Parameter(tg.tensor([1.0]))
    opt = Damped([w], lr=0.5)
    opt.register_step_pre_hook(lambda o, a, k: log.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: log.append("post"))
    w.grad = tg.tensor([1.0])
    opt.step()
    assert log == ["pre", "inner", "post"] and w.item() == 0.5


def test_wrapper_optimizer_without_optimizer_init_steps_as_torch():
    """Lookahead/Ranger-style wrappers never call Optimizer.__init__ (no hook tables)."""
    results = []
    for lib in (tg, torch):
        class Lookahead(lib.optim.Optimizer):
            def __init__(self, base):
                self.optimizer, self.param_groups = base, base.param_groups
                self.state, self.defaults = base.state, base.defaults

            def step(self, closure=None):
                return self.optimizer.step(closure)
        w = lib.nn.Parameter(lib.tensor([1.0]))
        w.grad = lib.tensor([1.0])
        Lookahead(lib.optim.SGD([w], lr=0.5)).step()
        results.append(w.item())
    assert results == [0.5, 0.5]
