"""einops-style research code (lucidrains idioms) on tapegrad, compared with PyTorch."""
import subprocess
import sys

import numpy as np
import pytest

import tapegrad as tg

einops = pytest.importorskip("einops")


def _det(T, *shape, scale=0.37):
    return T.sin(T.arange(int(np.prod(shape)), dtype=T.float64) * scale).reshape(*shape)


def _einops_workload(T):
    """rearrange / repeat / reduce / pack / unpack / einsum on one input; outputs and its grad."""
    from einops import einsum, pack, rearrange, reduce, repeat, unpack
    x = _det(T, 2, 3, 4, 6).requires_grad_()
    tokens = rearrange(x, "b c h (w p) -> b (h w) (p c)", p=2)
    pooled = reduce(x, "b c (h h2) w -> b c h w", "mean", h2=2)
    peak = reduce(x, "b c h w -> b w", "max")
    tiled = repeat(tokens, "b n d -> b n d k", k=3)
    packed, ps = pack([peak, tokens], "b * d")
    first, rest = unpack(packed * 2, ps, "b * d")
    sim = einsum(tokens, tokens, "b i d, b j d -> b i j")
    outs = (tokens, pooled, peak, tiled, packed, first, rest, sim)
    loss = sum((o * o).sum() for o in outs[1:4]) + rest.sum() + sim.softmax(-1).amax(-1).sum()
    loss.backward()
    return [o.detach().numpy() for o in outs] + [x.grad.numpy()], ps


def test_einops_works_on_tensors_of_tapegrad_imported_by_its_own_name(torch):
    # Here "torch" in sys.modules is PyTorch: einops' torch backend does not take our tensors,
    # and before tapegrad registered its own backend every call raised "Tensor type unknown".
    ours, ps_ours = _einops_workload(tg)
    theirs, ps_theirs = _einops_workload(torch)
    assert ps_ours == ps_theirs
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_einops_results_are_tapegrad_tensors_with_pytorch_grad_fns(torch):
    from einops import rearrange, reduce, repeat
    for T in (tg, torch):
        x = T.ones(2, 3, requires_grad=True)
        outs = (rearrange(x, "a b -> b a"), reduce(x, "a b -> a", "max"),
                repeat(x, "a b -> a b c", c=2))
        assert all(isinstance(o, T.Tensor) for o in outs)
        assert [type(o.grad_fn).__name__ for o in outs] == \
            ["PermuteBackward0", "AmaxBackward0", "ExpandBackward0"]


def test_einops_errors_match_pytorch(torch):
    from einops import EinopsError, rearrange, reduce
    for T in (tg, torch):
        x = T.arange(24).reshape(2, 3, 4)
        with pytest.raises(NotImplementedError, match="reduce_mean is not available for non-floating"):
            reduce(x, "b c w -> b", "mean")
        with pytest.raises(EinopsError, match="Error while processing rearrange-reduction"):
            rearrange(x, "b c w -> b c")
        assert reduce(x, "b c w -> b", "prod").tolist() == [0, 647647525324800]
    with pytest.raises(RuntimeError, match="Tensor type unknown to einops"):
        rearrange(object(), "a -> a")


def _run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.split()


def test_einops_backend_whichever_is_imported_first_and_without_pytorch():
    # einops imported before tapegrad (its backends module already loaded) and after it; in
    # neither order may the backend pull PyTorch in.
    body = ("x = tg.arange(6.).reshape(2, 3)\n"
            "print(tuple(rearrange(x, 'a b -> b a').shape), reduce(x, 'a b -> a', 'sum').tolist(),"
            " 'torch' in sys.modules)\n")
    after = _run("import sys, tapegrad as tg\nfrom einops import rearrange, reduce\n" + body)
    before = _run("import sys\nfrom einops import rearrange, reduce\nimport tapegrad as tg\n" + body)
    assert after == before == ["(3,", "2)", "[3.0,", "12.0]", "False"]


def test_amp_submodules_import_by_path_as_in_pytorch(torch):
    # torch.amp is a package: scripts import its objects from autocast_mode / grad_scaler.  Ours
    # is one module; `import tapegrad.amp.autocast_mode` stopped at "is not a package".
    import importlib
    for name in ("tapegrad", "torch"):
        mode = importlib.import_module(f"{name}.amp.autocast_mode")
        scaler = importlib.import_module(f"{name}.amp.grad_scaler")
        amp = importlib.import_module(f"{name}.amp")
        assert mode.autocast is amp.autocast and scaler.GradScaler is amp.GradScaler
        assert mode.is_autocast_available("cpu") is True
        assert {"autocast", "is_autocast_available", "custom_fwd", "custom_bwd"} <= set(mode.__all__)
    from tapegrad.amp.autocast_mode import autocast
    with autocast("cpu", dtype=tg.bfloat16):
        assert tg.mm(tg.ones(2, 2), tg.ones(2, 2)).dtype == tg.bfloat16


def test_amp_submodules_under_the_corpus_hook():
    import os
    hook = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "corpus_hook")
    code = ("import torch.amp.autocast_mode as m\nfrom torch.amp.grad_scaler import GradScaler\n"
            "import torch, sys\n"
            "print(m.autocast is torch.amp.autocast, GradScaler is torch.amp.GradScaler,"
            " torch.__name__)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([hook, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env).stdout.split()
    assert out == ["True", "True", "tapegrad"]
