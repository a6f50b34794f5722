"""Idioms of computer-vision training scripts (proxy round proxyaj), against torch."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import tapegrad as tg


def _cpu_amp_step(lib):
    """One training step of the deprecated CPU AMP recipe, autocast guarded off."""
    w = lib.nn.Parameter(lib.tensor([1.0, -2.0, 0.5]))
    opt = lib.optim.SGD([w], lr=0.1)
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.GradScaler\(args...\)` is deprecated"):
        scaler = lib.cpu.amp.GradScaler(init_scale=256.0)
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"):
        ctx = lib.cpu.amp.autocast(enabled=False)
    with ctx:
        loss = ((w * lib.tensor([0.5, 1.0, -1.5])).sum() - 1.0) ** 2
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.step(opt)
    scaler.update()
    return scaler.is_enabled(), scaler.get_scale(), scaled.item(), w.detach().numpy().copy()


def test_cpu_amp_spellings_match_torch(torch):
    ours, theirs = _cpu_amp_step(tg), _cpu_amp_step(torch)
    assert ours[:3] == theirs[:3]
    np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-6)


def test_cpu_amp_imports_as_a_module():
    module = importlib.import_module("tapegrad.cpu.amp")
    assert module is tg.cpu.amp
    with pytest.warns(FutureWarning):
        ctx = module.autocast()
    with ctx:                                   # enabled: its matmuls are bfloat16 ones
        assert (tg.ones(2, 2) @ tg.ones(2, 2)).dtype == tg.bfloat16
    assert tg.cpu.get_device_module("cpu") is tg.cpu


_SUBMODULE_PROBE = r"""
import importlib, sys, types
import torch
torch_names = {}
for name, mod in list(sys.modules.items()):
    if mod is None or not (name == "torch" or name.startswith("torch.")):
        continue
    subs = [k for k, v in list(vars(mod).items())
            if isinstance(v, types.ModuleType) and getattr(v, "__name__", "") == name + "." + k
            and not k.startswith("_")]
    if subs:
        torch_names[name] = subs
sys.modules.pop("tapegrad", None)
import tapegrad
missing = []
for name, subs in sorted(torch_names.items()):
    ours = "tapegrad" + name[len("torch"):]
    try:
        parent = importlib.import_module(ours)
    except ImportError:
        continue
    for sub in subs:
        # reached as an attribute in a fresh interpreter, before anything imports it
        if hasattr(parent, sub):
            continue
        try:
            importlib.import_module(ours + "." + sub)
        except ImportError:
            continue   # a module tapegrad does not have at all: not this test's concern
        missing.append(ours + "." + sub)
print(missing)
"""


def test_submodules_torch_exposes_as_attributes_are_attributes(torch):
    # `torch.utils.data.distributed.DistributedSampler(...)` and
    # `torch.nn.modules.utils._pair(...)` work after a bare `import torch`; where tapegrad has
    # the module, reaching it as an attribute must work too (it raised AttributeError).
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _SUBMODULE_PROBE], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def _identity_function(lib, n_outputs=1):
    """A custom Function returning its inputs as-is (as a backward hook's Function does), whose
    backward scales: a write into its output bypassing that backward gives wrong gradients."""
    class Passthrough(lib.autograd.Function):
        @staticmethod
        def forward(ctx, *xs):
            return xs if n_outputs > 1 else xs[0]

        @staticmethod
        def backward(ctx, *grads):
            scaled = tuple(g * 3 for g in grads)
            return scaled if n_outputs > 1 else scaled[0]
    return Passthrough


@pytest.mark.parametrize("write", ["exp_", "relu_", "setitem", "view of it"])
def test_writing_into_a_custom_functions_returned_input_raises_as_torch(torch, write):
    # Before, tapegrad recorded the write as a view's history and the gradient skipped the
    # Function's backward (setitem: x.grad [0, 1, 1] instead of PyTorch's refusal): silent.
    for lib in (tg, torch):
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = _identity_function(lib).apply(x * 1)
        with pytest.raises(RuntimeError, match=r"is a view and is being modified inplace\. This "
                                               r"view was created inside a custom Function"):
            if write == "setitem":
                y[0] = 5.0
            elif write == "view of it":
                y[1:].add_(1)
            else:
                getattr(y, write)()


def test_custom_function_output_messages_name_the_function(torch):
    msgs = []
    for lib in (tg, torch):
        x = lib.ones(2, requires_grad=True)
        y = _identity_function(lib).apply(x)
        with pytest.raises(RuntimeError) as info:
            y.mul_(2)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
    assert msgs[0].startswith("Output 0 of Passthrough is a view")


def test_several_outputs_are_multi_output_views_as_torch(torch):
    for lib in (tg, torch):
        a = lib.ones(2, requires_grad=True) * 1
        b = lib.ones(2, requires_grad=True) * 1
        _, second = _identity_function(lib, 2).apply(a, b)
        with pytest.raises(RuntimeError, match="Output 1 of Passthrough is a view and is being "
                                               "modified inplace. This view is the output of a "
                                               "function that returns multiple views"):
            second.add_(1)


def test_a_write_into_the_base_refuses_the_output_later(torch):
    for lib in (tg, torch):
        a = lib.ones(2, requires_grad=True) * 1
        y = _identity_function(lib).apply(a)
        a.add_(1)
        with pytest.raises(RuntimeError, match="its base or another view of its base has been "
                                               "modified inplace. This view was created inside"):
            y.sum().backward()


def test_writes_torch_allows_stay_allowed(torch):
    for lib in (tg, torch):
        y = _identity_function(lib).apply(lib.ones(2))          # nothing recorded
        y.add_(1)
        z = _identity_function(lib).apply(lib.ones(2, requires_grad=True) * 1)
        z.detach().add_(1)
        with lib.no_grad():
            z.add_(1)
        assert z.detach().tolist() == [3.0, 3.0]


def test_grad_cam_hook_before_an_inplace_relu_raises_as_torch(torch):
    # A full backward hook wraps the module's output in a Function that returns it as-is: an
    # in-place ReLU after the hooked layer is refused (tapegrad gave a value before).
    for lib in (tg, torch):
        model = lib.nn.Sequential(lib.nn.Conv2d(1, 2, 3), lib.nn.ReLU(inplace=True))
        model[0].register_full_backward_hook(lambda module, grad_in, grad_out: None)
        with pytest.raises(RuntimeError, match="Output 0 of BackwardHookFunction is a view and "
                                               "is being modified inplace"):
            model(lib.ones(1, 1, 4, 4))


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_of_an_identity_written_in_place_as_torch(torch, use_reentrant):
    # The reentrant checkpoint is a custom Function in PyTorch (its as-is output refuses the
    # write); the non-reentrant one is not (the write is recorded, the gradient flows).
    results = []
    for lib in (tg, torch):
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = lib.utils.checkpoint.checkpoint(lambda t: t, x * 1, use_reentrant=use_reentrant)
        try:
            y.mul_(2)
        except RuntimeError as e:
            results.append(("refused", "created inside a custom Function" in str(e)))
            continue
        y.sum().backward()
        results.append(("grad", x.grad.tolist()))
    assert results[0] == results[1]
