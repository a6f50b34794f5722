"""What the session-15 proxy of small modern-model repositories (llama from scratch, mamba.py,
minRF, hkproj's transformer, tiny-diffusion, ...) found tapegrad doing differently from PyTorch,
each checked against torch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg


# -- torch.where(condition) of any dtype is nonzero(condition, as_tuple=True) (mamba.py's Jamba --
# -- MoE router: torch.where(expert_mask[i]) on an int64 one-hot mask) ---------------------------

_CONDITIONS = [
    ("int64", [[0, 2], [3, 0]]),
    ("float32", [0.0, 1.5, float("nan"), -0.0]),
    ("uint8", [0, 1, 0, 7]),
    ("bool", [True, False, True]),
    ("complex64", [1 + 0j, 0j, 1j]),
    ("int64", []),
    ("int64", 5),
    ("int64", 0),
    ("float64", [[[0.0, 1.0]], [[2.0, 0.0]]]),
]


def _where_single(lib, dtype, data):
    x = lib.tensor(data, dtype=getattr(lib, dtype))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = lib.where(x)
    return [o.tolist() for o in out], [str(o.dtype) for o in out], [str(w.message) for w in caught]


@pytest.mark.parametrize("dtype,data", _CONDITIONS)
def test_where_single_argument_any_dtype_is_nonzero(dtype, data):
    got = _where_single(tg, dtype, data)
    x = tg.tensor(data, dtype=getattr(tg, dtype))
    assert got[0] == [o.tolist() for o in x.nonzero(as_tuple=True)]
    assert got[2] == []


@pytest.mark.parametrize("dtype,data", _CONDITIONS)
def test_where_single_argument_matches_torch(dtype, data):
    torch = pytest.importorskip("torch")
    assert _where_single(tg, dtype, data) == _where_single(torch, dtype, data)


def test_where_three_arguments_still_refuses_a_non_bool_condition():
    torch = pytest.importorskip("torch")
    msgs = []
    for lib in (tg, torch):
        with pytest.raises(RuntimeError) as e:
            lib.where(lib.tensor([0.0, 2.0]), lib.ones(2), lib.zeros(2))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_where_moe_routing_gradient_matches_torch():
    """Jamba's sparse MoE: the rows torch.where picks from an int64 one-hot mask index the
    hidden states; the gradient flows through that indexing only."""
    torch = pytest.importorskip("torch")
    x0 = np.random.RandomState(0).standard_normal((5, 3))
    mask = np.array([[1, 0, 1, 0, 0], [0, 1, 0, 1, 1]])
    grads = []
    for lib in (tg, torch):
        x = lib.tensor(x0, requires_grad=True)
        total = 0
        for e in range(2):
            (idx,) = lib.where(lib.tensor(mask[e]))
            total = total + (x[idx] * (e + 1.0)).square().sum()
        total.backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


# -- torch.has_mps & co.: PyTorch's deprecated build flags (hkproj's train.py picks its device ---
# -- with `torch.has_mps or torch.backends.mps.is_available()`) -----------------------------------

_DEPRECATED = {"has_mps": "torch.backends.mps.is_built()", "has_cuda": "torch.backends.cuda.is_built()",
               "has_cudnn": "torch.backends.cudnn.is_available()",
               "has_mkldnn": "torch.backends.mkldnn.is_available()"}


@pytest.mark.parametrize("name", sorted(_DEPRECATED))
def test_deprecated_build_flags_warn_and_answer_from_backends(name):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = getattr(tg, name)
    assert [(w.category, str(w.message), w.filename) for w in caught] == [
        (UserWarning, f"'{name}' is deprecated, please use '{_DEPRECATED[name]}'", __file__)]
    backend, function = _DEPRECATED[name][len("torch.backends."):-2].split(".")
    assert value is getattr(getattr(tg.backends, backend), function)()


@pytest.mark.parametrize("name", ["has_mps", "has_cuda", "has_cudnn"])
def test_deprecated_build_flags_match_torch(name):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings(record=True) as caught_torch:
        warnings.simplefilter("always")
        expected = getattr(torch, name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = getattr(tg, name)
    assert got == expected
    assert [str(w.message) for w in caught] == [str(w.message) for w in caught_torch]


def test_plain_build_flags_exist_and_agree_with_backends():
    assert tg.has_lapack is True and tg.has_spectral is True
    assert tg.has_openmp is tg.backends.openmp.is_available()
    assert tg.has_mkl is tg.backends.mkl.is_available()
    with pytest.raises(AttributeError, match="has no attribute 'has_gpu'"):
        tg.has_gpu  # noqa: B018


# -- torch.functional.F is torch.nn.functional (llama3-from-scratch's torch.functional.F.silu) ----

def test_torch_functional_F_is_nn_functional():
    import tapegrad.functional
    import tapegrad.nn.functional
    assert tapegrad.functional.F is tapegrad.nn.functional
    torch = pytest.importorskip("torch")
    import torch.functional
    assert torch.functional.F is torch.nn.functional
    x = np.linspace(-3, 3, 7)
    got, expected = tg.functional.F.silu(tg.tensor(x)), torch.functional.F.silu(torch.tensor(x))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)


# -- @torch.compile() on a method, and a compiled block called inside another compiled block -----
# -- (minRF's MMDiT decorates its blocks' forward methods) ----------------------------------------

def _blocks(lib, compile_=None):
    compile_ = compile_ or lib.compile

    class Inner(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 3)

        @compile_()
        def forward(self, x):
            return lib.nn.functional.silu(self.lin(x))

    class Outer(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()
            self.out = lib.nn.Linear(3, 2)

        @compile_()
        def forward(self, x):
            return self.out(self.inner(x) + x)

    return Outer()


def _set_weights(model, lib):
    rs = np.random.RandomState(1)
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(rs.standard_normal(tuple(p.shape))))


def test_compiled_method_binds_and_nests():
    model = _blocks(tg).double()
    _set_weights(model, tg)
    x = tg.tensor(np.random.RandomState(2).standard_normal((4, 3)), requires_grad=True)
    for _ in range(3):     # capture, then replays
        y = model(x)
    eager = model.out.forward(model.inner.lin(x).sigmoid() * model.inner.lin(x) + x)
    np.testing.assert_allclose(y.detach().numpy(), eager.detach().numpy(), rtol=1e-12)
    assert type(model).forward.__get__(None, type(model)) is type(model).forward


def test_compiled_method_matches_torch_forward_and_gradient():
    torch = pytest.importorskip("torch")
    # PyTorch's reference is its eager result (torch.compile needs a C compiler here)
    results = []
    for lib, compile_ in ((tg, None), (torch, lambda: (lambda f: f))):
        model = _blocks(lib, compile_).double()
        _set_weights(model, lib)
        x = lib.tensor(np.random.RandomState(2).standard_normal((4, 3)), requires_grad=True)
        for _ in range(2):
            y = model(x)
        y.square().sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy(), model.inner.lin.weight.grad.numpy()))
    for got, expected in zip(*results):
        np.testing.assert_allclose(got, expected, rtol=1e-10)
