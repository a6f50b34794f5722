"""What the session-12 proxy of public scripts (phlippe/uvadlc_notebooks, L1aoXingyu/pytorch-beginner,
bentrevett/pytorch-image-classification) touched that tapegrad lacked or did differently, each
checked against PyTorch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _same(ours, theirs):
    assert str(ours.dtype) == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


# -- creation functions take one-element tensors where PyTorch does -----------------------------

@pytest.mark.parametrize("args", [
    (("t", 3, "int64"),),
    (("t", 3.0, "float32"),),
    (("t", 3, "int32"),),
    (("t", 3.0, "float64"),),
    (0, ("t", 5, "int64"), ("t", 2, "int64")),
    (("t", 1, "int64"), 6),
    (("t", 1, "int64"), 6.0),
    (("t", 1.5, "float32"), 6),
])
def test_arange_reads_tensor_bounds_with_their_dtype(args):
    # torch.arange(torch.tensor(3)) is int64, as arange(3): a silent float result before
    def build(lib):
        return [lib.tensor(a[1], dtype=getattr(lib, a[2])) if isinstance(a, tuple) else a
                for a in args]
    _same(tg.arange(*build(tg)), torch.arange(*build(torch)))


@pytest.mark.parametrize("fn", ["linspace", "logspace"])
def test_steps_may_be_a_0d_integer_tensor(fn):
    for dtype in ("int64", "int32", "uint8"):
        _same(getattr(tg, fn)(0, 1, steps=tg.tensor(4, dtype=getattr(tg, dtype))),
              getattr(torch, fn)(0, 1, steps=torch.tensor(4, dtype=getattr(torch, dtype))))


@pytest.mark.parametrize("fn", ["linspace", "logspace"])
@pytest.mark.parametrize("steps", [4.0, [4], True])
def test_steps_rejects_float_bool_and_1d_tensors_as_torch(fn, steps):
    with pytest.raises(TypeError) as theirs:
        getattr(torch, fn)(0, 1, steps=torch.tensor(steps))
    with pytest.raises(TypeError, match="steps"):
        getattr(tg, fn)(0, 1, steps=tg.tensor(steps))
    assert "Tensor" in str(theirs.value)


# -- nn.init's deprecated names without the underscore ------------------------------------------

_DEPRECATED = {"uniform": (), "normal": (), "constant": (0.5,), "xavier_uniform": (),
               "xavier_normal": (), "kaiming_uniform": (), "kaiming_normal": (),
               "orthogonal": (), "sparse": (0.5,)}


@pytest.mark.parametrize("old", sorted(_DEPRECATED))
def test_nn_init_deprecated_names_warn_and_fill_as_the_new(old):
    assert callable(getattr(torch.nn.init, old))
    args = _DEPRECATED[old]
    w = tg.empty(6, 5)
    with pytest.warns(FutureWarning) as rec:
        out = getattr(tg.nn.init, old)(w, *args)
    assert out is w
    assert str(rec[0].message) == (f"`nn.init.{old}` is now deprecated in favor of "
                                   f"`nn.init.{old}_`.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tw = getattr(torch.nn.init, old)(torch.empty(6, 5), *args)
    # same distribution family: compare what does not depend on the random stream
    if old == "constant":
        _same(w, tw)
    elif old == "orthogonal":
        np.testing.assert_allclose(w.numpy() @ w.numpy().T if w.shape[0] <= w.shape[1]
                                   else w.numpy().T @ w.numpy(), np.eye(min(w.shape)), atol=1e-5)
    elif old == "sparse":
        assert ((w.numpy() == 0).sum(0) == (tw.numpy() == 0).sum(0)).all()
    assert getattr(tg.nn.init, old).__name__ == getattr(torch.nn.init, old).__name__ == old


# -- .data has a version counter of its own (uvadlc tutorial 12's masked convolution) -----------

def _data_versions(lib):
    x = lib.ones(3, requires_grad=True)
    with lib.no_grad():
        x.mul_(2)
    y = lib.zeros(3)
    for _ in range(3):
        y.add_(1)
    seen = [x._version, y._version]
    x.data = y                          # set_data keeps x's own counter
    seen += [x._version, y._version]
    y.add_(1)
    seen += [x._version, y._version, x.detach().tolist()]
    d = x.data                          # a fresh counter, not x's
    seen.append(d._version)
    d.add_(1)
    d[0:2].add_(1)                      # a view of .data shares .data's counter
    seen += [d._version, x._version]
    e = x.detach()                      # detach shares x's counter
    e.add_(1)
    seen += [e._version, x._version]
    return seen


def test_data_has_its_own_version_counter_and_set_data_keeps_ours():
    assert _data_versions(tg) == _data_versions(torch)


def _masked_conv_receptive_field(lib):
    # the tutorial's MaskedConvolution: `conv.weight.data *= mask` on every forward, then
    # backward(retain_graph=True) through graphs that saved the weight before the write
    inp = lib.zeros(1, 1, 7, 7, requires_grad=True)
    conv = lib.nn.Conv2d(1, 1, (1, 3), padding=(0, 1))
    conv.weight.data.fill_(1)
    conv.bias.data.fill_(0)
    mask = lib.tensor([[[[1.0, 1.0, 0.0]]]])
    h = inp
    grads = []
    for _ in range(3):
        conv.weight.data *= mask
        h = conv(h) + h
        h[0, :, 3, 3].sum().backward(retain_graph=True)
        grads.append(inp.grad.clone())
        inp.grad.zero_()
    conv.weight.data.mul_(2)            # untracked: the saved weight is read as it is now
    h[0, :, 3, 3].sum().backward()
    grads.append(inp.grad.clone())
    return [g.numpy() for g in grads], conv.weight._version


def test_writes_through_data_between_forward_and_backward_are_untracked_as_in_torch():
    ours, our_version = _masked_conv_receptive_field(tg)
    theirs, their_version = _masked_conv_receptive_field(torch)
    assert our_version == their_version
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_in_place_write_through_detach_is_still_caught():
    for lib in (tg, torch):
        w = lib.ones(3, requires_grad=True)
        y = (w * w).sum()
        w.detach().mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()


@pytest.mark.parametrize("init", ["uniform_", "normal_", "zeros_", "xavier_uniform_", "kaiming_normal_",
                                  "orthogonal_", "trunc_normal_", "eye_"])
def test_nn_init_counts_as_an_in_place_write(init):
    # a graph that saved the weight must refuse it after re-initialisation (it read the new
    # values silently before), and the version moves as PyTorch's does
    for lib in (tg, torch):
        w = lib.ones(4, 3, requires_grad=True)
        y = (w * w).sum()
        getattr(lib.nn.init, init)(w)
        assert w._version >= 1
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()
    assert tg.nn.Linear(3, 2).weight._version == torch.nn.Linear(3, 2).weight._version


def test_corpus_hook_loads_this_repos_tapegrad_for_a_script_outside_the_repo(tmp_path):
    # `PYTHONPATH=tools/corpus_hook python /elsewhere/script.py` silently ran the installed PyTorch
    # (the script's directory, not the repo, leads sys.path), so a proxy compared torch with torch
    import os
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[1]
    script = tmp_path / "script.py"
    script.write_text("import torch, torch.nn.functional\nprint(torch.__name__, torch.__file__)\n")
    env = dict(os.environ, PYTHONPATH=str(repo / "tools" / "corpus_hook"))
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    assert out.split()[1] == str(repo / "tapegrad" / "__init__.py")
