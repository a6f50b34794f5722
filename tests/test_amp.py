"""tapegrad.amp: GradScaler against torch.amp.GradScaler('cpu'), autocast on a CPU-only machine
(issue 15: AMP training loops from the recipes run unchanged)."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


def _train(lib, grads_to_poison=(), steps=6, growth_interval=2):
    lib.manual_seed(0)
    w = lib.nn.Parameter(lib.tensor([1.0, -2.0, 0.5]))
    opt = lib.optim.SGD([w], lr=0.1)
    scaler = lib.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=growth_interval)
    x = lib.tensor([0.5, 1.0, -1.5])
    history = []
    for step in range(steps):
        opt.zero_grad()
        loss = ((w * x).sum() - 1.0) ** 2
        scaler.scale(loss).backward()
        if step in grads_to_poison:
            w.grad[0] = float("inf")
        scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
        history.append((scaler.get_scale(), w.detach().numpy().copy()))
    return history, scaler.state_dict()


def test_grad_scaler_matches_torch_including_skipped_steps(torch):
    ours, our_state = _train(tg, grads_to_poison=(2,))
    theirs, their_state = _train(torch, grads_to_poison=(2,))
    for (s1, w1), (s2, w2) in zip(ours, theirs):
        assert s1 == s2
        np.testing.assert_allclose(w1, w2, rtol=1e-6)
    assert our_state == their_state


def test_grad_scaler_values():
    history, state = _train(tg, grads_to_poison=(2,))
    scales = [s for s, _ in history]
    # grows after 2 clean steps, halves on the poisoned one (and the weight does not move)
    assert scales == [1024.0, 2048.0, 1024.0, 1024.0, 2048.0, 2048.0]
    np.testing.assert_array_equal(history[2][1], history[1][1])
    assert state == {"scale": 2048.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                     "growth_interval": 2, "_growth_tracker": 1}


def test_grad_scaler_unscales_gradients():
    scaler = tg.amp.GradScaler("cpu")
    p = tg.nn.Parameter(tg.ones(2))
    opt = tg.optim.SGD([p], lr=1.0)
    loss = tg.tensor(2.0, requires_grad=True)
    scaled = scaler.scale(loss)
    assert scaled.shape == () and scaled.item() == 2.0 * 65536
    (scaled * p.sum()).backward()
    scaler.unscale_(opt)
    assert p.grad.tolist() == [2.0, 2.0]
    assert [t.item() for t in scaler.scale([tg.ones(1), (tg.ones(1),)])[1]] == [65536.0]


def test_grad_scaler_errors_match_torch(torch):
    for lib in (tg, torch):
        scaler = lib.amp.GradScaler("cpu")
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=1.0)
        scaler.scale(p.sum()).backward()
        scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
            scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
            scaler.step(opt, closure=lambda: 0)
        with pytest.raises(RuntimeError, match="The source state dict is empty"):
            scaler.load_state_dict({})
        with pytest.raises(ValueError, match="outputs must be a Tensor"):
            scaler.scale(3.0)
        fresh = lib.amp.GradScaler("cpu")
        with pytest.raises(AssertionError, match="Attempted update but _scale is None"):
            fresh.update()
        fresh.scale(lib.ones(1))
        with pytest.raises(AssertionError, match="No inf checks were recorded"):
            fresh.update()


def test_disabled_scaler_passes_through(torch):
    for lib in (tg, torch):
        scaler = lib.amp.GradScaler("cpu", enabled=False)
        loss = lib.tensor(3.0)
        assert scaler.scale(loss) is loss
        assert scaler.get_scale() == 1.0 and scaler.state_dict() == {} and not scaler.is_enabled()
        scaler.load_state_dict({})          # nothing to restore when disabled


def test_cuda_spellings_warn_and_disable(torch):
    for lib in (tg, torch):
        with pytest.warns(FutureWarning, match="torch.cuda.amp.GradScaler"), \
                pytest.warns(UserWarning, match="CUDA is not available"):
            scaler = lib.cuda.amp.GradScaler()
        assert not scaler.is_enabled()
        with pytest.warns(UserWarning, match="Disabling autocast"):
            with lib.autocast(device_type="cuda"):
                pass
        with pytest.warns(FutureWarning, match="torch.cuda.amp.autocast"), \
                pytest.warns(UserWarning, match="Disabling autocast"):
            ctx = lib.cuda.amp.autocast()
        with ctx:
            pass


def test_autocast_disabled_is_a_no_op_and_enabled_cpu_autocast_is_bfloat16():
    lin = tg.nn.Linear(3, 2)
    with tg.autocast(device_type="cpu", dtype=tg.float16, enabled=False):
        out = lin(tg.ones(1, 3))
    assert out.dtype == tg.float32

    @tg.amp.autocast("cpu", enabled=False)
    def forward(x):
        return lin(x)

    assert forward(tg.ones(1, 3)).dtype == tg.float32
    with tg.autocast(device_type="cpu"):      # bfloat16, PyTorch's CPU default
        assert lin(tg.ones(1, 3)).dtype == tg.bfloat16
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        tg.autocast("xyz")
    assert tg.amp.is_autocast_available("cpu")


def test_cuda_amp_imports_as_a_module():
    # `import torch.cuda.amp` and `from torch.cuda.amp import GradScaler` (nanoGPT-era AMP
    # scripts) need torch.cuda to be a package with an amp submodule, not an attribute.
    import importlib

    amp_module = importlib.import_module("tapegrad.cuda.amp")
    assert amp_module is tg.cuda.amp
    with pytest.warns(FutureWarning, match="torch.amp.GradScaler"):
        scaler = amp_module.GradScaler(enabled=False)
    assert scaler.is_enabled() is False
