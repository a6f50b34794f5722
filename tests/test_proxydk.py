"""Interpretability and data-attribution idioms (integrated gradients, per-example gradients,
influence functions, ensembles under vmap) against PyTorch."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad.func import grad as tg_grad, jacrev as tg_jacrev, vmap as tg_vmap

# Rows with ties: a whole-sample max/min/median picks one index, or splits among the ties.
TIED = [[1., 3., 3., 0.], [2., 2., 2., 5.]]
WHOLE = ["max", "min", "median", "nanmedian"]


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("name", WHOLE)
def test_vmap_whole_reduction_backward_outside_goes_to_the_picked_index(name):
    # PyTorch's batching rule runs max(dim=1) on the flattened batch: a backward outside the
    # vmap sends each row's gradient to the one index picked (amax would split it among ties)
    torch = _torch()
    expected = []
    for lib in (torch, tg):
        x = lib.tensor(TIED, requires_grad=True)
        y = lib.func.vmap(lambda t: getattr(t, name)())(x)
        y.sum().backward()
        expected.append(x.grad.numpy())
    np.testing.assert_allclose(expected[1], expected[0])


@pytest.mark.parametrize("name", WHOLE)
def test_vmap_whole_reduction_grad_inside_splits_among_ties(name):
    # a grad transform inside the vmap differentiates the sample's max()/median(), whose
    # backward spreads the gradient evenly over tied entries
    torch = _torch()
    for transform in ("grad", "jacrev"):
        got = [lib.func.vmap(getattr(lib.func, transform)(lambda t: getattr(t, name)()))(
            lib.tensor(TIED)).numpy() for lib in (torch, tg)]
        np.testing.assert_allclose(got[1], got[0], rtol=1e-6)
    # and grad outside the vmap is a backward outside it
    got = [lib.func.grad(lambda t: lib.func.vmap(lambda s: getattr(s, name)())(t).sum())(
        lib.tensor(TIED)).numpy() for lib in (torch, tg)]
    np.testing.assert_allclose(got[1], got[0])


def test_vmap_whole_max_of_0d_samples_is_a_tensor():
    # a 0-d sample: max() is the value itself, not a (values, indices) pair
    torch = _torch()
    for name in WHOLE:
        got = [lib.func.vmap(lambda t: getattr(t, name)())(lib.tensor([1., 2.])) for lib in
               (torch, tg)]
        assert isinstance(got[1], tg.Tensor)
        np.testing.assert_array_equal(got[1].numpy(), got[0].numpy())


def test_vmap_max_grad_fn_names_follow_pytorch():
    torch = _torch()
    for name, node in (("max", "MaxBackward0"), ("min", "MinBackward0"),
                       ("median", "MedianBackward1")):
        x = tg.tensor(TIED, requires_grad=True)
        assert type(tg.func.vmap(lambda t: getattr(t, name)())(x).grad_fn).__name__ == node
        tx = torch.tensor(TIED, requires_grad=True)
        assert type(torch.func.vmap(lambda t: getattr(t, name)())(tx).grad_fn).__name__ == node


def test_vmap_squeeze_grad_fn_follows_pytorch_batching_rule():
    # squeeze(dim) squeezes physical dims as a tuple (SqueezeBackward2); squeeze() views the
    # batch to the squeezed shape (ViewBackward0): what an ensemble's printed output shows
    torch = _torch()
    cases = [lambda t: t.squeeze(-1), lambda t: t.squeeze(0), lambda t: t.squeeze((0, 2)),
             lambda t: t.squeeze(), lambda t: t.transpose(0, 2).squeeze()]
    for f in cases:
        names, shapes = [], []
        for lib in (torch, tg):
            w = lib.ones(3, 1, 4, 1, requires_grad=True)
            out = lib.func.vmap(f)(w)
            names.append(type(out.grad_fn).__name__)
            shapes.append(tuple(out.shape))
            out.sum().backward()
            assert tuple(w.grad.shape) == (3, 1, 4, 1)
        assert names[1] == names[0] and shapes[1] == shapes[0]


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")   # (torch's jvp imports)
def test_jvp_primal_output_is_an_alias_on_the_callers_graph():
    # forward-mode sensitivity of a model whose parameters require grad: PyTorch hands back
    # the primal output as an alias (printed grad_fn=<AliasBackward0>), gradient passing through
    torch = _torch()
    got = []
    for lib in (torch, tg):
        m = lib.nn.Linear(2, 2)
        with lib.no_grad():
            m.weight.copy_(lib.tensor([[1., 2.], [3., -1.]]))
            m.bias.fill_(0.5)
        x = lib.ones(2)
        (out, total), _ = lib.func.jvp(lambda i: (m(i), m(i).sum()), (x,), (x,))
        names = [type(t.grad_fn).__name__ for t in (out, total)]
        out.sum().backward()
        plain, _ = lib.func.jvp(lambda i: i * 2, (x,), (x,))
        with_aux = lib.func.jvp(lambda i: (m(i).sum(), m(i)), (x,), (x,), has_aux=True)[0]
        got.append((names, out.detach().numpy(), m.weight.grad.numpy(), plain.grad_fn,
                    type(with_aux.grad_fn).__name__))
    assert got[1][0] == got[0][0] == ["AliasBackward0", "AliasBackward0"]
    np.testing.assert_allclose(got[1][1], got[0][1])
    np.testing.assert_allclose(got[1][2], got[0][2])
    assert got[1][3] is None and got[0][3] is None
    assert got[1][4] == got[0][4] == "AliasBackward0"


@pytest.mark.parametrize("case", ["conv1d", "conv2d", "conv_transpose2d", "strided_bias"])
def test_convolution_gradients_with_a_graph_are_convolution_backward_backward(case):
    # input gradients with create_graph (double backprop, gradient penalties, input-gradient
    # regularised explanations): PyTorch computes them in one convolution_backward op, whose
    # node is ConvolutionBackwardBackward0 (here an internal _ConvWeightGradBackward leaked)
    torch = _torch()
    got = []
    for lib in (torch, tg):
        F = lib.nn.functional
        if case == "conv1d":
            x = lib.sin(lib.arange(10., dtype=lib.float64)).reshape(1, 2, 5)
            w = lib.cos(lib.arange(18., dtype=lib.float64)).reshape(3, 2, 3)
            op = F.conv1d
        elif case == "conv_transpose2d":
            x = lib.sin(lib.arange(50., dtype=lib.float64)).reshape(1, 2, 5, 5)
            w = lib.cos(lib.arange(54., dtype=lib.float64)).reshape(2, 3, 3, 3)
            op = F.conv_transpose2d
        else:
            x = lib.sin(lib.arange(50., dtype=lib.float64)).reshape(1, 2, 5, 5)
            w = lib.cos(lib.arange(54., dtype=lib.float64)).reshape(3, 2, 3, 3)
            op = F.conv2d
        x.requires_grad_()      # (float64: second-order values reach ~100)
        w.requires_grad_()
        if case == "strided_bias":
            b = lib.ones(3, dtype=lib.float64, requires_grad=True)
            inputs = (x, w, b)
            y = op(x, w, b, stride=2, padding=1)
        else:
            inputs = (x, w)
            y = op(x, w)
        grads = lib.autograd.grad(y.pow(2).sum(), inputs, create_graph=True)
        second = lib.autograd.grad(grads[0].pow(2).sum(), (x, w))
        got.append(([type(g.grad_fn).__name__ for g in grads],
                    [g.detach().numpy() for g in grads + second]))
    assert got[1][0] == got[0][0]
    assert set(got[0][0]) == {"ConvolutionBackwardBackward0"}
    for mine, theirs in zip(got[1][1], got[0][1]):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-10)
