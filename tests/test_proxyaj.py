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
