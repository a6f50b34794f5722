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


# -- matrix_exp: PyTorch's degree-selected Taylor polynomials ----------------------------------

def _skew(v):
    x, y, z = v
    return [[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("scale", [1e-9, 1e-6, 1e-3, 0.03, 0.2, 0.5, 1.0, 3.0, 20.0])
def test_matrix_exp_bits_match_torch_each_degree(dtype, scale, torch_bits):
    # a single matrix takes the lowest Taylor degree its 1-norm allows, a batch degree 18
    rng = np.random.default_rng(int(scale * 1000) + 7)
    for n in (2, 3, 5):
        A = (rng.standard_normal((n, n)) * scale / n).astype(dtype)
        torch_bits.assert_equal(tg.linalg.matrix_exp(tg.tensor(A)).numpy(),
                                torch.linalg.matrix_exp(torch.from_numpy(A)).numpy())
        batch = (rng.standard_normal((4, n, n)) * scale / n).astype(dtype)
        torch_bits.assert_equal(tg.linalg.matrix_exp(tg.tensor(batch)).numpy(),
                                torch.linalg.matrix_exp(torch.from_numpy(batch)).numpy())


def test_matrix_exp_of_quarter_turn_prints_as_torch():
    K = [[0.0, -math.pi / 2], [math.pi / 2, 0.0]]
    assert repr(tg.linalg.matrix_exp(tg.tensor(K))) == repr(torch.linalg.matrix_exp(
        torch.tensor(K)))
    aa = _skew((0.0, 0.0, math.pi / 2))
    ours = tg.linalg.matrix_exp(tg.tensor(aa, dtype=tg.float64))
    theirs = torch.linalg.matrix_exp(torch.tensor(aa, dtype=torch.float64))
    assert repr(tg.round(ours, decimals=6)) == repr(torch.round(theirs, decimals=6))


def test_matrix_exp_complex_and_one_by_one_as_torch():
    z = [[[0.3 + 0.1j, -1.0j], [0.5, 0.2 - 0.4j]]]
    np.testing.assert_allclose(tg.linalg.matrix_exp(tg.tensor(z)).numpy(),
                               torch.linalg.matrix_exp(torch.tensor(z)).numpy(), rtol=1e-6)
    one = [[[0.7]], [[-2.0]]]
    np.testing.assert_array_equal(tg.linalg.matrix_exp(tg.tensor(one)).numpy(),
                                  torch.linalg.matrix_exp(torch.tensor(one)).numpy())


@pytest.mark.parametrize("scale", [1e-5, 0.02, 0.2, 0.6, 4.0])
def test_matrix_exp_gradient_finite_differences(scale, gradcheck):
    rng = np.random.default_rng(11)
    gradcheck(lambda a: tg.linalg.matrix_exp(a) * tg.tensor([[1.0, 2.0, 3.0]],
                                                             dtype=tg.float64),
              rng.standard_normal((3, 3)) * scale)
    gradcheck(lambda a: tg.linalg.matrix_exp(a), rng.standard_normal((2, 3, 3)) * scale)


def test_matrix_exp_gradient_matches_torch():
    rng = np.random.default_rng(5)
    A = rng.standard_normal((2, 3, 3))
    grads = []
    for L in (tg, torch):
        a = L.tensor(A, requires_grad=True)
        w = L.tensor(np.arange(9.0).reshape(3, 3))
        (L.linalg.matrix_exp(a) * w).sum().backward()
        grads.append(a.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)


def test_matrix_exp_nonfinite_and_half_kept():
    got = tg.linalg.matrix_exp(tg.tensor([[[float("nan"), 0.0], [0.0, 1.0]], [[0.0, 1.0],
                                                                              [0.0, 0.0]]]))
    assert np.isnan(got[0].numpy()).all()
    np.testing.assert_array_equal(got[1].numpy(), [[1.0, 1.0], [0.0, 1.0]])
    half = tg.linalg.matrix_exp(tg.eye(2, dtype=tg.float16))
    assert half.dtype == tg.float16
    np.testing.assert_allclose(half.float().numpy(), np.eye(2) * math.e, rtol=1e-3)
