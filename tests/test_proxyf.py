"""Names held-out PyTorch scripts import from torch's submodules (editors' auto-imports and custom
optimizers' annotations), checked against PyTorch."""
from __future__ import annotations

import importlib
import typing

import pytest

import tapegrad as tg


def _torch_submodule(torch, name):
    return importlib.import_module(name.replace("tapegrad", "torch", 1))


@pytest.mark.parametrize("module", ["tapegrad.nn.modules.module", "tapegrad.nn.modules.container"])
def test_module_type_variable_imports_like_pytorch(torch, module):
    # `from torch.nn.modules.container import T`, an IDE auto-import, must not stop a script.
    ours = importlib.import_module(module).T
    theirs = _torch_submodule(torch, module).T
    assert isinstance(ours, typing.TypeVar) and isinstance(theirs, typing.TypeVar)
    assert ours.__name__ == theirs.__name__ == "T"


def test_self_returning_module_methods_still_return_the_module():
    seq = tg.nn.Sequential(tg.nn.Linear(2, 2))
    assert seq.append(tg.nn.ReLU()) is seq
    assert seq.train() is seq and seq.eval() is seq and seq.to(tg.float64) is seq
    assert seq.requires_grad_(False) is seq and seq.apply(lambda m: None) is seq


def test_params_type_alias_annotates_a_custom_optimizer(torch):
    results = []
    for module in (tg, torch):
        ParamsT = _torch_submodule(torch, "tapegrad.optim.optimizer").ParamsT if module is torch \
            else importlib.import_module("tapegrad.optim.optimizer").ParamsT
        assert len(typing.get_args(ParamsT)) == 3

        class PlainSGD(module.optim.Optimizer):
            def __init__(self, params: ParamsT, lr: float = 0.1):
                super().__init__(params, {"lr": lr})

            @module.no_grad()
            def step(self):
                for group in self.param_groups:
                    for p in group["params"]:
                        p -= group["lr"] * p.grad

        w = module.tensor([1.0, -2.0], requires_grad=True)
        opt = PlainSGD([w])
        (w * w).sum().backward()
        opt.step()
        results.append(w.detach().tolist())
    assert results[0] == pytest.approx(results[1])


@pytest.mark.parametrize("convert", [
    float,
    lambda t, lib=None: (lib or tg).tensor([t, t]),
    lambda t, lib=None: (lib or tg).tensor([[t], [t]]),      # deeper inside torch.tensor's recursion
])
def test_scalar_of_grad_tensor_warning_names_the_users_line(torch, monkeypatch, convert):
    # `torch.tensor(losses)` of a list of graph tensors: the warning points at the script's line,
    # as PyTorch's does, not at tapegrad's creation code.
    import warnings
    monkeypatch.setattr(importlib.import_module("tapegrad.tensor"), "_warned_scalar_of_grad_tensor", False)
    for lib in (tg, torch):
        x = lib.tensor(2.0, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            convert(x * 3) if convert is float else convert(x * 3, lib)
        scalar_warnings = [w for w in caught if "requires_grad=True to a scalar" in str(w.message)]
        if lib is tg:
            assert len(scalar_warnings) == 1
        assert all(w.filename == __file__ for w in scalar_warnings), [w.filename for w in scalar_warnings]


def test_multiprocessing_spawn_runs_and_reports_children_as_pytorch(torch):
    # DDP-style scripts start workers with torch.multiprocessing.spawn(fn, args, nprocs).
    import operator
    import sys
    import time
    results = []
    for mp in (tg.multiprocessing, torch.multiprocessing):
        assert mp.spawn(time.sleep, nprocs=0) is None
        context = mp.spawn(time.sleep, args=(), nprocs=1, join=False)   # child 0 sleeps 0 s
        assert isinstance(context, mp.ProcessContext) and context.join() is True
        with pytest.raises(mp.ProcessRaisedException) as raised:
            mp.spawn(operator.truediv, args=(0,), nprocs=1)
        with pytest.raises(mp.ProcessExitedException) as exited:
            mp.spawn(sys.exit, nprocs=2)                                 # child 1 exits with 1
        results.append((raised.value.error_index, str(raised.value).splitlines()[2],
                        str(raised.value).splitlines()[-1], str(exited.value),
                        exited.value.exit_code, exited.value.error_index))
    assert results[0] == results[1]
    assert results[0][1] == "-- Process 0 terminated with the following error:"
