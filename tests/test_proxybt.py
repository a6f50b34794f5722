"""Proxy task proxybt (bio-inspired and self-organising models: spiking networks, RBMs and Gibbs
sampling, Hebbian rules, Hopfield networks, neural cellular automata, reservoirs): the autograd
nodes PyTorch records for samples drawn from tensors that require grad (an RBM's
torch.bernoulli(sigmoid(v @ W + b)) prints grad_fn=<BernoulliBackward0>), each compared with
PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

PROBS = np.array([[0.1, 0.8, 0.5], [0.3, 0.0, 1.0]], dtype=np.float32)


def _probs(lib):
    return lib.tensor(PROBS, requires_grad=True)


def _node(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


@pytest.mark.parametrize("draw", [
    lambda lib, p: lib.bernoulli(p),
    lambda lib, p: p.bernoulli(),
    lambda lib, p: lib.bernoulli(lib.sigmoid(p * 3)),
    lambda lib, p: lib.poisson(p * 4),
])
def test_sample_of_a_tensor_that_requires_grad_is_pytorchs_node(draw):
    # torch.bernoulli(probs) records BernoulliBackward0 (torch.poisson PoissonBackward0) with a
    # zero gradient to the probabilities; tapegrad named its node BernoulliBackward, so printing
    # an RBM's hidden sample showed grad_fn=<BernoulliBackward>
    results = {}
    for lib in (torch, tg):
        p = _probs(lib)
        sample = draw(lib, p)
        (sample * 2).sum().backward()
        results[lib] = (_node(sample), sample.requires_grad, sample.is_leaf, p.grad.numpy(),
                        [type(f).__name__ for f, _ in sample.grad_fn.next_functions],
                        repr(sample).split("grad_fn=")[1])
    t, g = results[torch], results[tg]
    assert g[:3] == t[:3]
    np.testing.assert_array_equal(g[3], t[3])
    assert g[4] == t[4]
    assert g[5] == t[5]


def test_bernoulli_with_a_number_p_has_no_derivative():
    # torch.bernoulli(input, p): derivatives.yaml has no formula for this overload: the result
    # requires grad through a NotImplemented node whose backward raises (tapegrad gave a zero
    # gradient silently)
    for lib in (torch, tg):
        p = _probs(lib)
        sample = lib.bernoulli(p, 0.25)
        assert sample.requires_grad and _node(sample) == "NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::bernoulli is not "
                                               "implemented"):
            sample.sum().backward()
        with lib.no_grad():
            assert not lib.bernoulli(p, 0.25).requires_grad
        assert lib.bernoulli(p.detach(), 0.25).grad_fn is None


@pytest.mark.parametrize("fill", [
    lambda lib, r: r.bernoulli_(0.5),
    lambda lib, r: r.bernoulli_(lib.tensor([0.2, 0.9, 0.4])),
    lambda lib, r: r.exponential_(),
    lambda lib, r: r.geometric_(0.4),
    lambda lib, r: r.log_normal_(),
    lambda lib, r: r.cauchy_(),
    lambda lib, r: r.random_(0, 5),
    lambda lib, r: r.random_(7),
    lambda lib, r: r.random_(to=7),
    lambda lib, r: r.random_(),
])
def test_in_place_samplers_record_pytorchs_nodes(fill):
    # each in-place sampler's node is its own (BernoulliBackward2 for a number p, 1 for a tensor
    # p, ExponentialBackward0, RandomBackward0/1/2 by overload, ...); tapegrad recorded all but
    # normal_/uniform_ as FillBackward2.  The gradient to the overwritten values is zero.
    nodes, grads = [], []
    for lib in (torch, tg):
        p = _probs(lib)
        r = p * 1
        out = fill(lib, r)
        assert out is r
        (out * 3).sum().backward()
        nodes.append((_node(out), out.requires_grad))
        grads.append(p.grad.numpy())
    assert nodes[1] == nodes[0]
    np.testing.assert_array_equal(grads[1], grads[0])


def test_rbm_gibbs_step_prints_and_backpropagates_as_pytorch():
    # one contrastive-divergence step as the RBM scripts write it, with nn.Parameter weights:
    # the samples print grad_fn=<BernoulliBackward0>, and the free-energy difference's gradient
    # flows only through the visible data and the (constant) reconstruction
    rng = np.random.default_rng(3)
    W0 = (rng.standard_normal((4, 6)) * 0.3).astype(np.float32)
    v0 = (rng.random((5, 6)) > 0.5).astype(np.float32)
    out = {}
    for lib in (torch, tg):
        W = lib.nn.Parameter(lib.tensor(W0))
        hb = lib.nn.Parameter(lib.zeros(4))
        vb = lib.nn.Parameter(lib.zeros(6))
        v = lib.tensor(v0)
        p_h = lib.sigmoid(lib.nn.functional.linear(v, W, hb))
        h = lib.bernoulli(p_h)
        p_v = lib.sigmoid(lib.nn.functional.linear(h, W.t(), vb))
        v_k = lib.bernoulli(p_v)

        def free_energy(x):
            return -(x @ vb) - lib.nn.functional.softplus(lib.nn.functional.linear(x, W, hb)).sum(1)

        loss = free_energy(v).mean() - free_energy(v_k.detach()).mean()
        loss.backward()
        out[lib] = (_node(h), _node(v_k), str(h.grad_fn), h.shape, h.dtype == lib.float32,
                    vb.grad.shape, W.grad.shape)
    t, g = out[torch], out[tg]
    assert g[0] == t[0] == "BernoulliBackward0" and g[1] == t[1]
    assert g[2].split(" object")[0] == t[2].split(" object")[0]
    assert g[3:] == t[3:]


def test_not_implemented_node_prints_as_pytorchs():
    # an op without a derivative formula (bernoulli(input, p), heaviside, binomial) records
    # PyTorch's C++ NotImplemented node: `<NotImplemented object at 0x...>` (tapegrad printed
    # it with a module, `<torch.autograd.function.NotImplemented object at ...>`), while a
    # user Function's node keeps its module
    for lib in (torch, tg):
        p = _probs(lib)
        for out in (lib.bernoulli(p, 0.5), lib.heaviside(p, lib.tensor(0.0))):
            assert repr(out.grad_fn).startswith("<NotImplemented object at 0x")
            assert "grad_fn=<NotImplemented>" in repr(out)

        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2
        assert repr(Twice.apply(p).grad_fn).startswith("<torch.autograd.function.TwiceBackward "
                                                       "object at 0x")
