"""Leftovers checked against PyTorch 2.13: second derivatives of the compiled activations with an
infinite factor."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

INF = float("inf")


def _same(ours, theirs):
    """Values, NaN and infinities where PyTorch has them."""
    theirs = theirs.detach().numpy()
    ours = ours.detach().numpy()
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-12, equal_nan=True)


# -- second derivatives of gelu, elu, selu, celu, softplus -------------------------------------

ACTIVATIONS = {
    "gelu": lambda F, x: F.gelu(x),
    "gelu_tanh": lambda F, x: F.gelu(x, approximate="tanh"),
    "elu": lambda F, x: F.elu(x, alpha=0.5),
    "selu": lambda F, x: F.selu(x),
    "celu": lambda F, x: F.celu(x, alpha=0.7),
    "softplus": lambda F, x: F.softplus(x, beta=2.0, threshold=1.5),
}
INPUTS = [-40.0, -3.0, -1.0, -0.0, 0.0, 0.5, 0.75, 1.0, 2.0, 25.0, 40.0]


def _two_derivatives(lib, fn, upstream, grad_grad):
    x = lib.tensor(INPUTS, dtype=lib.float64, requires_grad=True)
    g, = lib.autograd.grad(fn(lib.nn.functional, x), x, create_graph=True,
                           grad_outputs=lib.tensor(upstream, dtype=lib.float64))
    g2, = lib.autograd.grad(g, x, grad_outputs=lib.tensor(grad_grad, dtype=lib.float64))
    return g, g2


@pytest.mark.parametrize("name", ACTIVATIONS)
@pytest.mark.parametrize("upstream,grad_grad", [
    (1.0, INF), (INF, 1.0), (-INF, 1.0), ("mixed", 1.0), (1.0, 1.0)])
def test_second_derivative_with_an_infinite_factor(name, upstream, grad_grad):
    # the x-derivative of PyTorch's gradient is one product grad_grad * grad * f''(x): gelu's gave
    # NaN where PyTorch's is +-inf (inf - inf between the terms of f''), the elu family's and
    # softplus's 0 where PyTorch's mask gives NaN (inf * 0) -- SILENT wrong second derivatives
    n = len(INPUTS)
    up = [(INF if k % 2 else -INF) for k in range(n)] if upstream == "mixed" else [upstream] * n
    ours = _two_derivatives(tg, ACTIVATIONS[name], up, [grad_grad] * n)
    theirs = _two_derivatives(torch, ACTIVATIONS[name], up, [grad_grad] * n)
    for a, b in zip(ours, theirs):
        _same(a, b)


@pytest.mark.parametrize("name,node", [("gelu", "GeluBackwardBackward0"),
                                       ("elu", "EluBackwardBackward0"),
                                       ("softplus", "SoftplusBackwardBackward0")])
def test_activation_gradient_node_and_third_derivative(name, node):
    # one node, as PyTorch's, and its own derivatives (third order) agree with PyTorch's
    def run(lib):
        x = lib.tensor([-1.5, -0.25, 0.5, 1.25], dtype=lib.float64, requires_grad=True)
        g, = lib.autograd.grad(ACTIVATIONS[name](lib.nn.functional, x).sum(), x,
                               create_graph=True)
        g2, = lib.autograd.grad((g * g).sum(), x, create_graph=True)
        g3, = lib.autograd.grad(g2.sum(), x)
        return type(g.grad_fn).__name__, g, g2, g3

    ours, theirs = run(tg), run(torch)
    assert ours[0] == theirs[0] == node
    for a, b in zip(ours[1:], theirs[1:]):
        _same(a, b)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_second_derivative_float32(name):
    def run(lib):
        x = lib.tensor([-2.0, -0.5, 0.3, 1.7], requires_grad=True)
        upstream = lib.tensor([0.5, -1.0, 2.0, 1.5], requires_grad=True)
        g, = lib.autograd.grad(ACTIVATIONS[name](lib.nn.functional, x), x, upstream,
                               create_graph=True)
        return lib.autograd.grad((g * g).sum(), [x, upstream])

    for a, b in zip(run(tg), run(torch)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


# -- gradient layouts: row-major where PyTorch's are, so .view(-1) works as there --------------

def _rng_tensors(lib, *shapes):
    rng = np.random.default_rng(0)
    return [lib.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]


LAYOUT_CASES = {
    # conv_transpose3d's input and conv3d's weight went through a permute (permuted strides)
    "conv_transpose3d": ([(2, 3, 4, 3, 5), (3, 2, 2, 3, 2)],
                         lambda lib, x, w: lib.nn.functional.conv_transpose3d(x, w, stride=2)),
    "conv_transpose3d_groups": ([(2, 4, 3, 4, 3), (4, 2, 2, 2, 2)],
                                lambda lib, x, w: lib.nn.functional.conv_transpose3d(
                                    x, w, groups=2, dilation=2)),
    "conv3d": ([(2, 3, 5, 4, 6), (4, 3, 2, 2, 2)],
               lambda lib, x, w: lib.nn.functional.conv3d(x, w, stride=2)),
    # bilinear's weight through permute(1, 0, 2)
    "bilinear": ([(4, 3), (4, 5), (6, 3, 5), (6,)],
                 lambda lib, a, b, w, bias: lib.nn.functional.bilinear(a, b, w, bias)),
    "bilinear_batched": ([(2, 4, 3), (2, 4, 5), (6, 3, 5)],
                         lambda lib, a, b, w: lib.nn.functional.bilinear(a, b, w)),
    # index_copy's source (numpy's x[:, idx] is laid out index-dims first) and setitem's value
    "index_copy_last_dim": ([(3, 5), (3, 2)],
                            lambda lib, x, s: x.index_copy(-1, lib.tensor([4, 1]), s)),
    "index_copy_middle_dim": ([(3, 4, 5), (3, 2, 5)],
                              lambda lib, x, s: x.index_copy(1, lib.tensor([0, 2]), s)),
    "setitem_advanced": ([(3, 4, 5), (3, 4, 2)], lambda lib, x, v: _written(lib, x, v)),
}


def _written(lib, x, v):
    out = x * 1
    out[:, :, lib.tensor([4, 1])] = v
    return out


@pytest.mark.parametrize("name", LAYOUT_CASES)
@pytest.mark.parametrize("create_graph", [False, True])
def test_gradient_layout_as_pytorch(name, create_graph):
    shapes, fn = LAYOUT_CASES[name]

    def run(lib):
        inputs = _rng_tensors(lib, *shapes)
        out = fn(lib, *inputs)
        upstream = lib.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape)))
        return lib.autograd.grad(out, inputs, upstream, create_graph=create_graph)

    for ours, theirs in zip(run(tg), run(torch)):
        assert ours.is_contiguous() == theirs.is_contiguous()
        if theirs.is_contiguous():
            assert ours.stride() == theirs.stride()
            ours.view(-1)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-9,
                                   atol=1e-10)


# -- x.data = other after the graph was recorded --------------------------------------------------

DATA_SWAP_GRAPHS = {
    "mul_saves_x": lambda x: (x * x).sum(),          # saved x meets the graph's gradient
    "sin_saves_x": lambda x: (x.sin() * 2).sum(),
    "pow_saves_x": lambda x: x.pow(2).sum(),
    "exp_saves_result": lambda x: x.exp().sum(),     # x itself not saved: graph-shaped gradient
    "scale_saves_nothing": lambda x: (x * 2).sum(),
}


@pytest.mark.parametrize("name", DATA_SWAP_GRAPHS)
@pytest.mark.parametrize("how", ["backward", "grad", "grad_create_graph"])
def test_data_of_another_shape_after_recording(name, how):
    # PyTorch's saved input reads the new data, and its formula raises its size RuntimeError;
    # tapegrad raised numpy's ValueError (at the delivery of the gradient) for every graph
    def run(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = DATA_SWAP_GRAPHS[name](x)
        x.data = lib.ones(4)
        try:
            if how == "backward":
                y.backward()
                return ("ok", x.grad.tolist())
            g, = lib.autograd.grad(y, x, create_graph=how == "grad_create_graph")
            return ("ok", g.tolist())
        except Exception as e:      # (the type and the message are what is compared)
            return (type(e).__name__, str(e))

    assert run(tg) == run(torch)


def test_data_of_another_dtype_after_recording_reads_the_new_values():
    # SILENT: a saved input kept the old values when the new data had another dtype (the
    # gradient of x * x was 2 * old x); PyTorch's backward reads the new values
    def run(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = (x * x).sum()
        x.data = lib.tensor([5.0, 6.0, 7.0], dtype=lib.float64)
        y.backward()
        return x.grad.tolist()

    assert run(tg) == run(torch)


# -- sgn's zero gradient (PyTorch's ZeroTensor) ------------------------------------------------

def _as_list(g):
    # (PyTorch hands a ZeroTensor out of autograd.grad when nothing else reached the input)
    if getattr(g, "_is_zerotensor", lambda: False)():
        return [0.0] * g.numel()
    return [float(v) for v in g.tolist()]


SGN_CHAINS = {
    # a product formula keeps the ZeroTensor: inf * 0 never happens
    "exp": lambda lib, t: t.exp().sgn(),
    "pow": lambda lib, t: (t ** 2000).sgn(),
    "log": lambda lib, t: (t - 1).log().sgn(),
    "scaled_sum": lambda lib, t: (t * 3 + 1).exp().sgn().sum(),
    "view": lambda lib, t: t.exp().view(2, 2).view(4).sgn(),
    "plus_other_path": lambda lib, t: t.exp().sgn() + t,
    "times_x": lambda lib, t: t.sgn() * t,
    # any other formula materializes it: PyTorch's NaN there too
    "neg": lambda lib, t: (-t.exp()).sgn(),
    "clamp": lambda lib, t: t.exp().clamp(max=5).sgn(),
    "expand": lambda lib, t: t.exp()[:1].expand(4).sgn(),
    "matmul": lambda lib, t: (t.exp().view(2, 2) @ t.exp().view(2, 2)).sgn(),
    "sub_second": lambda lib, t: ((t.exp() - t.exp()) * t.exp()).sgn(),
    "sign": lambda lib, t: t.exp().sign(),
}


@pytest.mark.parametrize("name", SGN_CHAINS)
@pytest.mark.parametrize("how", ["grad", "backward"])
def test_sgn_gradient_is_a_zero_that_absorbs_infinite_factors(name, how):
    # SILENT: x.exp().sgn() at x = 1000 had gradient NaN (0 * inf) where PyTorch's is 0
    def run(lib):
        x = lib.tensor([1000.0, 1.0, -1000.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = SGN_CHAINS[name](lib, x).sum()
        if how == "backward":
            y.backward()
            return _as_list(x.grad)
        g, = lib.autograd.grad(y, x)
        return _as_list(g)

    np.testing.assert_array_equal(run(tg), run(torch))


def test_sgn_zero_gradient_reaches_hooks_and_retained_grads_as_zeros():
    def run(lib):
        x = lib.tensor([1000.0, 1.0], dtype=lib.float64, requires_grad=True)
        t = x.exp()
        t.retain_grad()
        seen = []
        t.register_hook(lambda g: seen.append(_as_list(g)))
        t.sgn().sum().backward()
        return _as_list(x.grad), _as_list(t.grad), seen

    assert run(tg) == run(torch)
