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
    # enabled, it would need bfloat16 matmuls: refused as tapegrad.amp refuses it
    with pytest.raises(NotImplementedError, match="autocast"):
        with ctx:
            pass
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
