"""Findings of the equivariant / geometric deep learning proxy corpus (EGNN, SchNet, DimeNet,
group CNNs, spherical harmonics, rotations), each compared with PyTorch."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _lib(name):
    return tg if name == "tg" else torch


# -- factories with out=: out's requires_grad set to the call's ------------------------------

_FACTORIES = {
    "arange": lambda L, p: L.arange(1, 4, out=p),
    "range": lambda L, p: L.range(1, 3, out=p),
    "linspace": lambda L, p: L.linspace(0, 1, 3, out=p),
    "logspace": lambda L, p: L.logspace(0, 1, 3, out=p),
    "zeros": lambda L, p: L.zeros(3, out=p),
    "ones": lambda L, p: L.ones(3, out=p),
    "full": lambda L, p: L.full((3,), 2.0, out=p),
    "rand": lambda L, p: L.rand(3, out=p),
    "randint": lambda L, p: L.randint(0, 5, (3,), out=p),
    "randperm": lambda L, p: L.randperm(3, out=p),
    "normal": lambda L, p: L.normal(0.0, 1.0, (3,), out=p),
    "fftfreq": lambda L, p: L.fft.fftfreq(3, out=p),
}


@pytest.mark.filterwarnings("ignore:torch.range is deprecated")
@pytest.mark.parametrize("name", sorted(_FACTORIES))
@pytest.mark.parametrize("as_parameter", [True, False])
def test_factory_out_clears_requires_grad_under_no_grad(name, as_parameter):
    # DimeNet's BesselBasisLayer: torch.arange(1, n + 1, out=self.freq).mul_(PI) under no_grad
    # leaves the parameter frozen in PyTorch (tapegrad kept it trainable)
    seen = []
    for L in (tg, torch):
        p = L.nn.Parameter(L.zeros(3)) if as_parameter else L.zeros(3, requires_grad=True)
        with L.no_grad():
            r = _FACTORIES[name](L, p)
        seen.append((r is p, p.requires_grad, p.is_leaf, type(p).__name__))
    assert seen[0] == seen[1]
    assert seen[1][1] is False


@pytest.mark.parametrize("name", ["arange", "zeros", "linspace", "rand"])
def test_factory_out_requires_grad_argument_applies(name):
    calls = {"arange": lambda L, o: L.arange(3.0, out=o, requires_grad=True),
             "zeros": lambda L, o: L.zeros(3, out=o, requires_grad=True),
             "linspace": lambda L, o: L.linspace(0, 1, 3, out=o, requires_grad=True),
             "rand": lambda L, o: L.rand(3, out=o, requires_grad=True)}
    flags = []
    for L in (tg, torch):
        o = L.zeros(3)
        calls[name](L, o)
        flags.append((o.requires_grad, o.is_leaf))
    assert flags[0] == flags[1] == (True, True)


def test_factory_out_requires_grad_on_integer_out_refused():
    for L in (tg, torch):
        with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex"):
            L.arange(3, out=L.zeros(3, dtype=L.long), requires_grad=True)


def test_factory_out_keeps_graph_result_requiring_grad():
    flags = []
    for L in (tg, torch):
        x = L.ones(3, requires_grad=True)
        y = x * 2
        with L.no_grad():
            L.zeros(3, out=y)
        flags.append((y.requires_grad, y.is_leaf))
    assert flags[0] == flags[1] == (True, False)


@pytest.mark.filterwarnings("ignore:torch.range is deprecated")
@pytest.mark.parametrize("name", ["arange", "zeros", "ones", "full", "linspace", "logspace",
                                  "range", "rand", "randint", "randperm", "normal", "fftfreq"])
def test_factory_out_autograd_refusal_names_aten_op(name):
    messages = []
    for L in (tg, torch):
        p = L.zeros(3, requires_grad=True)
        with pytest.raises(RuntimeError) as info:
            _FACTORIES[name](L, p)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert messages[1].startswith("aten::")


@pytest.mark.parametrize("grad_mode", [True, False])
def test_empty_and_randn_refuse_out_requiring_grad(grad_mode):
    for L in (tg, torch):
        for make in (lambda p: L.empty(3, out=p), lambda p: L.randn(3, out=p)):
            p = L.nn.Parameter(L.zeros(3))
            with L.set_grad_enabled(grad_mode):
                with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
                    make(p)


def test_sampling_ops_with_out_keep_out_requires_grad():
    # bernoulli and normal(Tensor, ...) are not factories: out's flag stays
    flags = []
    for L in (tg, torch):
        a, b = L.zeros(3, requires_grad=True), L.zeros(3, requires_grad=True)
        with L.no_grad():
            L.bernoulli(L.full((3,), 0.5), out=a)
            L.normal(L.zeros(3), 1.0, out=b)
        flags.append((a.requires_grad, b.requires_grad))
    assert flags[0] == flags[1] == (True, True)


def test_dimenet_bessel_frequencies_frozen_as_in_torch():
    grads = []
    for L in (tg, torch):
        freq = L.nn.Parameter(L.empty(4))
        with L.no_grad():
            L.arange(1, freq.numel() + 1, out=freq).mul_(math.pi)
        d = L.tensor([0.3, 0.7])
        out = (freq * d.unsqueeze(-1)).sin().sum()
        assert not out.requires_grad
        grads.append((freq.detach().numpy().copy(), freq.grad))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-6)
    assert grads[0][1] is None and grads[1][1] is None


# -- small batched matrix products: PyTorch's bmm loop, not BLAS ----------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_small_batched_matmul_bits_match_torch(dtype, n, torch_bits):
    rng = np.random.default_rng(n)
    A = rng.standard_normal((20, n, n)).astype(dtype)
    B = rng.standard_normal((20, n, n)).astype(dtype)
    for f in (lambda L, a, b: L.bmm(a, b), lambda L, a, b: a @ b,
              lambda L, a, b: L.matmul(a[:1], b), lambda L, a, b: a[0, 0] @ b):
        ours = f(tg, tg.tensor(A), tg.tensor(B)).numpy()
        theirs = f(torch, torch.from_numpy(A), torch.from_numpy(B)).numpy()
        torch_bits.assert_equal(ours, theirs)


def test_batched_rotation_gram_is_exact_as_in_torch(torch_bits):
    # R R^T of a batch of float32 rotations: PyTorch's small-bmm loop gives exact zeros off the
    # diagonal (BLAS left -1.2e-08, and the tensor printed in scientific format)
    R = [[[0.36, 0.48, -0.8], [-0.8, 0.6, 0.0], [0.48, 0.64, 0.6]]] * 2
    ours = tg.tensor(R) @ tg.tensor(R).transpose(1, 2)
    theirs = torch.tensor(R) @ torch.tensor(R).transpose(1, 2)
    torch_bits.assert_equal(ours.numpy(), theirs.numpy())
    if torch_bits.reproducible:
        assert repr(ours) == repr(theirs)


def test_small_batched_matmul_gradient(gradcheck):
    rng = np.random.default_rng(3)
    gradcheck(lambda a, b: tg.bmm(a, b) ** 2, rng.standard_normal((4, 3, 2)),
              rng.standard_normal((4, 2, 3)))
    gradcheck(lambda a, b: a @ b, rng.standard_normal((2, 1, 3, 3)),
              rng.standard_normal((5, 3, 2)))
