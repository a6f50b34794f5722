"""The autograd graph as scripts walk it (torchviz's make_dot, notebooks printing
grad_fn.next_functions): ~40 small graphs built under tapegrad and under torch (the oracle; skipped
without it) must show the same tree of node names.  Also: the nodes an op's layout adds
(nn.Linear's TBackward0) are stable objects, tanh's and sigmoid's create_graph gradients are one
TanhBackwardBackward0 / SigmoidBackwardBackward0 node with PyTorch's first, second and third
derivatives, and the LSTM / GRU cells split their gates with unsafe_chunk.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.testing import numeric_grad


def tree(fn):
    """(name, children) by a recursive walk of next_functions; None stays None."""
    if fn is None:
        return None
    return (type(fn).__name__, tuple(tree(n) for n, _ in fn.next_functions))


def seeded(L):
    L.manual_seed(0)


# -- the graphs: each takes L (tapegrad or torch) and returns the output tensor ------------------

def linear_bias(L):
    seeded(L); return L.nn.Linear(4, 3)(L.randn(2, 4))
def linear_nobias(L):
    seeded(L); return L.nn.Linear(4, 3, bias=False)(L.randn(2, 4))
def linear_3d(L):
    seeded(L); return L.nn.Linear(4, 3)(L.randn(5, 2, 4, requires_grad=True))
def linear_3d_nobias(L):
    seeded(L); return L.nn.Linear(4, 3, bias=False)(L.randn(5, 2, 4))
def linear_3d_nobias_input_grad(L):
    seeded(L); return L.nn.Linear(4, 3, bias=False)(L.randn(5, 2, 4, requires_grad=True))
def linear_1d(L):
    seeded(L); return L.nn.Linear(4, 3)(L.randn(4, requires_grad=True))
def linear_1d_nobias(L):
    seeded(L); return L.nn.Linear(4, 3, bias=False)(L.randn(4, requires_grad=True))
def linear_input_grad(L):
    seeded(L); return L.nn.Linear(4, 3)(L.randn(2, 4, requires_grad=True))
def linear_strided_batch(L):
    seeded(L)
    x = L.randn(2, 5, 4).transpose(0, 1).requires_grad_()
    return L.nn.functional.linear(x, L.randn(3, 4, requires_grad=True), L.randn(3))
def linear_matrix_bias(L):
    seeded(L)
    return L.nn.functional.linear(L.randn(5, 2, 4, requires_grad=True),
                                  L.randn(3, 4, requires_grad=True),
                                  L.randn(2, 3, requires_grad=True))
def mlp(L):
    seeded(L)
    m = L.nn.Sequential(L.nn.Linear(4, 8), L.nn.ReLU(), L.nn.Linear(8, 3))
    return L.nn.functional.cross_entropy(m(L.randn(2, 4)), L.randint(0, 3, (2,)))
def mlp_mse(L):
    seeded(L)
    m = L.nn.Sequential(L.nn.Linear(4, 8), L.nn.Tanh(), L.nn.Linear(8, 1), L.nn.Sigmoid())
    return L.nn.functional.mse_loss(m(L.randn(2, 4)), L.ones(2, 1))
def micrograd(L):
    a = L.tensor(2.0, requires_grad=True); b = L.tensor(-3.0, requires_grad=True)
    c = L.tensor(10.0, requires_grad=True); f = L.tensor(-2.0, requires_grad=True)
    return ((a * b + c) * f).tanh()
def scalar_ops(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    return (x ** 2 + 3 * x - x / 2).exp().log().sum()
def cnn(L):
    seeded(L)
    m = L.nn.Sequential(L.nn.Conv2d(1, 2, 3), L.nn.ReLU(), L.nn.MaxPool2d(2), L.nn.Flatten(),
                        L.nn.Linear(2 * 3 * 3, 4))
    return m(L.randn(1, 1, 8, 8)).sum()
def cnn_bn(L):
    seeded(L)
    m = L.nn.Sequential(L.nn.Conv2d(1, 2, 3, padding=1), L.nn.BatchNorm2d(2), L.nn.ReLU(),
                        L.nn.AdaptiveAvgPool2d(1), L.nn.Flatten())
    return m(L.randn(2, 1, 4, 4)).mean()
def lstmcell(L):
    seeded(L); return L.nn.LSTMCell(3, 4)(L.randn(2, 3))[0]
def lstmcell_state(L):
    seeded(L)
    h = L.randn(2, 4, requires_grad=True)
    return L.nn.LSTMCell(3, 4)(L.randn(2, 3), (h, h * 2))[1]
def grucell(L):
    seeded(L); return L.nn.GRUCell(3, 4)(L.randn(2, 3), L.randn(2, 4, requires_grad=True))
def rnncell(L):
    seeded(L); c = L.nn.RNNCell(3, 4); x = L.randn(2, 3); return c(x, c(x))
def manual_lstm(L):
    seeded(L)
    W = L.randn(3, 16, requires_grad=True); U = L.randn(4, 16, requires_grad=True)
    x = L.randn(2, 3); h = L.zeros(2, 4); c = L.zeros(2, 4)
    i, f, o, u = (x @ W + h @ U).chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * u.tanh()
    return o.sigmoid() * c.tanh()
def split(L):
    x = L.randn(4, 6, requires_grad=True)
    a, b = x.split(3, dim=1)
    c, d = x.split([2, 4], dim=1)
    return a * b + c.sum() + d.sum()
def unsafe_split(L):
    x = L.randn(4, 6, requires_grad=True)
    a, b = L.unsafe_chunk(x, 2, 1)
    c, d = L.unsafe_split(x, 3, 1)
    e, f = x.unsafe_split_with_sizes([2, 4], 1)
    return a * b + c * d + e.sum() + f.sum()
def layernorm(L):
    seeded(L); return L.nn.LayerNorm(4)(L.randn(2, 4))
def embedding(L):
    seeded(L); return L.nn.Embedding(5, 3)(L.tensor([[1, 2], [3, 4]])).sum(1)
def dropout_gelu(L):
    seeded(L)
    return L.nn.Sequential(L.nn.Linear(4, 4), L.nn.GELU(), L.nn.Dropout(0.5))(L.randn(2, 4))
def reductions(L):
    x = L.randn(3, 4, requires_grad=True)
    return x.max(1)[0].sum() + x.mean() + x.std() + x.amax() + x.norm()
def cat_stack(L):
    x = L.randn(2, 3, requires_grad=True); y = L.randn(2, 3, requires_grad=True)
    return L.cat([x, y]).sum() + L.stack([x, y], 1).mean()
def shapes(L):
    x = L.randn(2, 3, 4, requires_grad=True)
    return x.reshape(6, 4).t().unsqueeze(0).permute(2, 0, 1).flatten().squeeze()
def pow_where(L):
    x = L.randn(4, requires_grad=True)
    return L.where(x > 0, x ** 3, 2 ** x).sum() + x.abs().sqrt().sum() + x.clamp(-1, 1).sum()
def double_tanh(L):
    x = L.randn(3, requires_grad=True)
    return L.autograd.grad(x.tanh().sum(), x, create_graph=True)[0]
def double_sigmoid(L):
    x = L.randn(3, requires_grad=True)
    return L.autograd.grad(x.sigmoid().sum(), x, create_graph=True)[0]
def double_exp(L):
    x = L.randn(3, requires_grad=True)
    return L.autograd.grad(x.exp().sum(), x, create_graph=True)[0]
def double_mul(L):
    x = L.randn(3, requires_grad=True); w = L.randn(3, requires_grad=True)
    return L.autograd.grad((x * w * x).sum(), x, create_graph=True)[0]
def double_tanh_mlp_weight(L):
    seeded(L)
    w = L.randn(3, requires_grad=True)
    y = (L.randn(2, 3) * w).tanh().sigmoid().sum()
    return L.autograd.grad(y, w, create_graph=True)[0]
def losses(L):
    seeded(L)
    x = L.randn(3, 2, requires_grad=True); t = L.rand(3, 2)
    F = L.nn.functional
    return (F.binary_cross_entropy_with_logits(x, t) + F.softplus(x).mean()
            + F.nll_loss(F.log_softmax(x, 1), L.tensor([0, 1, 1])))


GRAPHS = [linear_bias, linear_nobias, linear_3d, linear_3d_nobias, linear_3d_nobias_input_grad,
          linear_1d, linear_1d_nobias, linear_input_grad, linear_strided_batch,
          linear_matrix_bias, mlp, mlp_mse, micrograd, scalar_ops, cnn, cnn_bn, lstmcell,
          lstmcell_state, grucell, rnncell, manual_lstm, split, unsafe_split, layernorm,
          embedding, dropout_gelu, reductions, cat_stack, shapes, pow_where, double_tanh,
          double_sigmoid, double_exp, double_mul, double_tanh_mlp_weight, losses]


# Graphs whose shape still differs from PyTorch's (docs/differences.md): batched matmul's
# bmm/expand/reshape nodes, multi-dim slicing's one SliceBackward0 per dim, scaled_dot_product_
# attention's math path on 3-D inputs, torch.addmm as mm + add, l1_loss as one node, and the
# create_graph nodes of pow, relu, mm and sqrt.
def attention(L):
    seeded(L)
    q, k, v = (L.randn(2, 3, 4, requires_grad=True) for _ in range(3))
    return (q @ k.transpose(-2, -1) / 2.0).softmax(-1) @ v
def slicing(L):
    x = L.randn(4, 5, requires_grad=True)
    return x[1:3, ::2].sum()
def addmm(L):
    return L.addmm(L.randn(3, 5, requires_grad=True), L.randn(3, 4, requires_grad=True),
                   L.randn(4, 5, requires_grad=True))
def double_pow(L):
    x = L.randn(3, requires_grad=True)
    return L.autograd.grad((x ** 3).sum(), x, create_graph=True)[0]


DIFFERING = [attention, slicing, addmm, double_pow]


@pytest.mark.parametrize("graph", GRAPHS, ids=lambda g: g.__name__)
def test_graph_shows_pytorchs_nodes(graph):
    torch = pytest.importorskip("torch")
    assert tree(graph(tg).grad_fn) == tree(graph(torch).grad_fn)


@pytest.mark.parametrize("graph", DIFFERING, ids=lambda g: g.__name__)
def test_graphs_known_to_differ(graph):
    torch = pytest.importorskip("torch")
    if tree(graph(tg).grad_fn) == tree(graph(torch).grad_fn):
        pytest.fail("now matches PyTorch: move it to GRAPHS and out of docs/differences.md")


# -- the nodes a layout adds ------------------------------------------------------------------------

def test_linear_weight_node_is_one_object_and_reaches_the_weight():
    lin = tg.nn.Linear(4, 3)
    y = lin(tg.randn(2, 4))
    bias_edge, input_edge, weight_edge = y.grad_fn.next_functions
    assert input_edge == (None, 0)
    assert bias_edge[0].variable is lin.bias
    t = weight_edge[0]
    assert t.name() == "TBackward0" and type(t).__name__ == "TBackward0"
    assert y.grad_fn.next_functions[2][0] is t          # the same object on every read
    assert t.next_functions[0][0].variable is lin.weight
    assert isinstance(t, tg.autograd.graph.Node)
    t.metadata["k"] = 1
    assert y.grad_fn.next_functions[2][0].metadata == {"k": 1}
    with pytest.raises(RuntimeError, match="TBackward0"):
        t.register_hook(lambda gi, go: None)


def test_a_laid_out_node_keeps_its_graph_alive():
    lin = tg.nn.Linear(4, 3)
    x = tg.randn(2, 4, requires_grad=True)
    t = lin(x).grad_fn.next_functions[2][0]             # the output and its grad_fn are gone
    assert t.next_functions[0][0].variable is lin.weight


def test_linear_gradients_are_unchanged_by_the_layout():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 2, 4))
    W = rng.standard_normal((3, 4))
    b = rng.standard_normal(3)
    grads = []
    for L in (tg, torch):
        x, w, c = (L.tensor(a, requires_grad=True) for a in (X, W, b))
        y = L.nn.functional.linear(x, w, c)
        y.grad_fn.next_functions                        # walking the graph changes nothing
        (y * y).sum().backward()
        grads.append([t.grad.numpy() for t in (x, w, c)])
    for a, e in zip(*grads):
        np.testing.assert_allclose(a, e, rtol=1e-12)


def test_pow_with_a_number_has_one_edge():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    assert len((x ** 2).grad_fn.next_functions) == 1
    assert (2 ** x).grad_fn.next_functions[0][0].variable is x


# -- tanh_backward and sigmoid_backward under create_graph ---------------------------------------

@pytest.mark.parametrize("name", ["tanh", "sigmoid"])
def test_activation_backward_derivatives_match_torch(name):
    torch = pytest.importorskip("torch")
    X = np.array([0.3, -1.2, 2.0, 0.0])
    W = np.array([0.5, -2.0, 1.5, 3.0])
    results = []
    for L in (tg, torch):
        x = L.tensor(X, requires_grad=True)
        w = L.tensor(W, requires_grad=True)
        g, = L.autograd.grad((getattr(x, name)() * w).sum(), x, create_graph=True)
        assert type(g.grad_fn).__name__ == name.capitalize() + "BackwardBackward0"
        g2x, g2w = L.autograd.grad((g * g).sum(), (x, w), create_graph=True)
        g3, = L.autograd.grad((g2x * g2w).sum(), x)
        results.append([t.detach().numpy() for t in (g, g2x, g2w, g3)])
    for a, e in zip(*results):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", ["tanh", "sigmoid"])
def test_activation_backward_second_derivative_by_finite_differences(name):
    X = np.array([0.3, -1.2, 2.0])
    W = np.array([0.5, -2.0, 1.5])

    def first_grad(xv, wv):
        x = tg.tensor(xv, requires_grad=True)
        w = tg.tensor(wv, requires_grad=True)
        g, = tg.autograd.grad((getattr(x, name)() * w).sum(), x, create_graph=True)
        return x, w, g

    x, w, g = first_grad(X, W)
    gx, gw = tg.autograd.grad((g * g).sum(), (x, w))
    expected = numeric_grad(lambda xv, wv: float((first_grad(xv, wv)[2] ** 2).sum()), [X, W])
    np.testing.assert_allclose(gx.numpy(), expected[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gw.numpy(), expected[1], rtol=1e-6, atol=1e-8)


def test_activation_backward_first_gradient_is_the_eager_one_bit_for_bit():
    xs = np.random.default_rng(1).standard_normal(257).astype(np.float32)
    for name in ("tanh", "sigmoid"):
        x = tg.tensor(xs, requires_grad=True)
        getattr(x, name)().sum().backward()
        x2 = tg.tensor(xs, requires_grad=True)
        g, = tg.autograd.grad(getattr(x2, name)().sum(), x2, create_graph=True)
        np.testing.assert_array_equal(g.detach().numpy(), x.grad.numpy())


# -- unsafe_split / unsafe_chunk ------------------------------------------------------------------

def test_unsafe_split_pieces_and_gradients():
    torch = pytest.importorskip("torch")
    X = np.arange(24.0).reshape(4, 6)
    out = []
    for L in (tg, torch):
        x = L.tensor(X, requires_grad=True)
        pieces = (L.unsafe_chunk(x, 4, 1) + L.unsafe_split(x, 4, 1)
                  + x.unsafe_split_with_sizes([1, 5], 1))
        sum(((k + 1) * p * p).sum() for k, p in enumerate(pieces)).backward()
        out.append(([p.detach().numpy() for p in pieces],
                    [type(p.grad_fn).__name__ for p in pieces], x.grad.numpy()))
    for a, e in zip(out[0][0], out[1][0]):
        np.testing.assert_array_equal(a, e)
    assert out[0][1] == out[1][1]
    np.testing.assert_array_equal(out[0][2], out[1][2])


def test_unsafe_split_argument_errors_match_torch():
    torch = pytest.importorskip("torch")
    for L in (tg, torch):
        x = L.ones(4, 6)
        with pytest.raises(TypeError, match="must be int, not list"):
            L.unsafe_split(x, [2, 4], 1)
        with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum"):
            x.unsafe_split_with_sizes([2, 3], 1)
        with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0"):
            L.unsafe_chunk(x, 0, 1)


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_rnn_cells_values_and_gradients_match_torch(kind):
    torch = pytest.importorskip("torch")
    out = []
    chunks = {"RNNCell": 1, "LSTMCell": 4, "GRUCell": 3}[kind]
    rng = np.random.default_rng(3)
    params = [rng.standard_normal(s) * 0.5 for s in ((4 * chunks, 3), (4 * chunks, 4),
                                                      (4 * chunks,), (4 * chunks,))]
    for L in (tg, torch):
        cell = getattr(L.nn, kind)(3, 4).double()
        with L.no_grad():
            for p, v in zip(cell.parameters(), params):
                p.copy_(L.tensor(v))
        x = L.linspace(-1, 1, 6, dtype=L.float64).reshape(2, 3).requires_grad_()
        h = L.linspace(-0.5, 0.7, 8, dtype=L.float64).reshape(2, 4).requires_grad_()
        y = cell(x, (h, 2 * h)) if kind == "LSTMCell" else cell(x, h)
        y = y[0] + y[1] if kind == "LSTMCell" else y
        (y * y).sum().backward()
        out.append([y.detach().numpy(), x.grad.numpy(), h.grad.numpy()]
                   + [p.grad.numpy() for p in cell.parameters()])
    for a, e in zip(*out):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-14)


def test_global_average_pool_is_one_mean_as_torch():
    torch = pytest.importorskip("torch")
    X = np.random.default_rng(2).standard_normal((2, 3, 7, 5)).astype(np.float32)
    out = []
    for L in (tg, torch):
        x = L.tensor(X, requires_grad=True)
        y = L.nn.functional.adaptive_avg_pool2d(x, 1)
        (y * L.arange(1.0, 7.0).reshape(2, 3, 1, 1)).sum().backward()
        out.append((y.detach().numpy(), x.grad.numpy(), type(y.grad_fn).__name__))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-6)
    np.testing.assert_array_equal(out[0][1], out[1][1])
    assert out[0][2] == out[1][2] == "MeanBackward1"


# -- _saved_* attributes of the nodes above (torchviz's show_saved) --------------------------------

def saved_attributes(fn):
    out = {}
    for name in dir(fn):
        if name.startswith("_saved_"):
            value = getattr(fn, name)
            # (tensors compared to 12 digits: tanh's last bit may differ from PyTorch's)
            out[name] = (tuple(value.shape), np.round(value.detach().numpy(), 12).tolist()) \
                if hasattr(value, "grad_fn") else value
    return out


def test_split_and_activation_backward_saved_attributes_match_torch():
    torch = pytest.importorskip("torch")
    X = np.arange(24.0).reshape(4, 6) / 10
    shown = []
    for L in (tg, torch):
        x = L.tensor(X, requires_grad=True)
        nodes = [x.split(4, 1)[1], x.unsafe_split(4, 1)[0], x.split([2, 4], 1)[0],
                 x.unsafe_split_with_sizes([5, 1], 1)[1], L.unsafe_chunk(x, 3, 0)[1],
                 x.unbind(1)[3],
                 L.autograd.grad((x.tanh() * 2).sum(), x, create_graph=True)[0],
                 L.autograd.grad((x.sigmoid() * 2).sum(), x, create_graph=True)[0]]
        shown.append([(type(n.grad_fn).__name__, saved_attributes(n.grad_fn)) for n in nodes])
        out = nodes[6].grad_fn._saved_output
        assert type(out.grad_fn).__name__ == "TanhBackward0"
    assert shown[0] == shown[1]
