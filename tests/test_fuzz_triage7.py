"""Regressions of the issue-16 items closed in session 7 (no silent wrong results).

Each test asserts the right values without torch and, where torch is installed, compares with it.
"""
import math

import numpy as np
import pytest

import tapegrad as tg

nan, inf = math.nan, math.inf

# -- piecewise activations: NaN kept, second derivatives zero (seeds 1000588, 2000064) ----------
# threshold / hardshrink / softshrink replaced NaN (PyTorch keeps it: its dead zone is written
# with comparisons a NaN fails), and under create_graph their gradients (where() masks of the
# adjoint) did not require grad where PyTorch's backward formulas read the input: differentiating
# again raised instead of giving zeros.

POINTS = [nan, -1.0, 1.0, -0.2, 0.3, 6.0, -3.0, 3.0, 0.4, -0.4, inf, -0.0, 0.0]

PIECEWISE = {
    "hardtanh": lambda L, x: L.nn.functional.hardtanh(x),
    "relu6": lambda L, x: L.nn.functional.relu6(x),
    "threshold": lambda L, x: L.nn.functional.threshold(x, 0.2, 5.0),
    "torch.threshold": lambda L, x: L.threshold(x, 0.2, 5.0),
    "hardshrink": lambda L, x: L.nn.functional.hardshrink(x, 0.4),
    "softshrink": lambda L, x: L.nn.functional.softshrink(x, 0.4),
    "hardsigmoid": lambda L, x: L.nn.functional.hardsigmoid(x),
}


def _piecewise(L, name, dtype):
    x = L.tensor(POINTS, dtype=getattr(L, dtype), requires_grad=True)
    y = PIECEWISE[name](L, x)
    g, = L.autograd.grad(y.sum(), x, create_graph=True)
    try:
        gg, = L.autograd.grad(g.sum(), x)
        second = gg.detach().numpy().copy()
    except RuntimeError as e:
        second = str(e)
    return y.detach().numpy(), g.detach().numpy(), g.requires_grad, second


def test_piecewise_activations_keep_nan():
    for name in ("threshold", "hardshrink", "softshrink", "hardtanh", "relu6", "hardsigmoid"):
        y = _piecewise(tg, name, "float32")[0]
        assert math.isnan(y[0]), name
    # values outside the dead zone are kept or shifted; relu6 keeps a zero's sign, as clamp
    y = _piecewise(tg, "softshrink", "float64")[0]
    np.testing.assert_allclose(y[1:3], [-0.6, 0.6])
    assert math.copysign(1, _piecewise(tg, "relu6", "float64")[0][11]) == -1


@pytest.mark.parametrize("name", ["hardtanh", "relu6", "threshold", "torch.threshold",
                                  "hardshrink", "softshrink"])
def test_piecewise_second_derivative_is_zero(name):
    y, g, requires_grad, second = _piecewise(tg, name, "float64")
    assert requires_grad
    np.testing.assert_array_equal(second, np.zeros(len(POINTS)))


def test_hardsigmoid_double_backward_raises_as_pytorch():
    _, g, requires_grad, second = _piecewise(tg, "hardsigmoid", "float64")
    assert requires_grad
    assert second == "derivative for aten::hardsigmoid_backward is not implemented"
    np.testing.assert_allclose(g[[1, 3, 5, 6, 7]], [1 / 6, 1 / 6, 0, 0, 0])


@pytest.mark.parametrize("name", sorted(PIECEWISE))
def test_piecewise_against_torch(torch, name):
    mine = _piecewise(tg, name, "float32")
    theirs = _piecewise(torch, name, "float32")
    np.testing.assert_allclose(mine[0], theirs[0], rtol=1e-6)
    np.testing.assert_allclose(mine[1], theirs[1], rtol=1e-6)
    assert mine[2] == theirs[2]
    if isinstance(theirs[3], str):
        assert mine[3] == theirs[3]
    else:
        np.testing.assert_array_equal(mine[3], theirs[3])


# -- copysign's second argument and the 0-norm (issue 16 list) ---------------------------------

def _copysign(L):
    a = L.tensor([1.0, -2.0, 0.0, 3.0], dtype=L.float64, requires_grad=True)
    b = L.tensor([[-1.0], [2.0]], dtype=L.float32, requires_grad=True)
    y = L.copysign(a, b)
    ga, gb = L.autograd.grad(y.sum(), [a, b], create_graph=True)
    return y.detach().numpy(), ga.detach().numpy(), gb.detach().numpy(), gb.dtype, y.dtype


def test_copysign_gradient_of_other_is_zeros():
    y, ga, gb, gb_dtype, y_dtype = _copysign(tg)
    np.testing.assert_array_equal(y, [[-1, -2, -0.0, -3], [1, 2, 0, 3]])
    np.testing.assert_array_equal(ga, [0, 0, 0, 0])
    np.testing.assert_array_equal(gb, [[0], [0]])
    assert gb_dtype == tg.float32 and y_dtype == tg.float64


def test_copysign_against_torch(torch):
    mine, theirs = _copysign(tg), _copysign(torch)
    for m, t in zip(mine[:3], theirs[:3]):
        np.testing.assert_array_equal(m, t)
    assert str(mine[3]) == str(theirs[3]) and str(mine[4]) == str(theirs[4])


def _zero_norm(L, f):
    x = L.tensor([1.0, 0.0, -2.0], requires_grad=True)
    y = f(L, x)
    y.backward()
    alone = L.autograd.grad(f(L, x), x, allow_unused=True)[0]
    try:
        L.autograd.grad(f(L, x), x)
        unused = None
    except RuntimeError as e:
        unused = str(e)
    return float(y.detach()), y.requires_grad, x.grad, alone, unused


ZERO_NORMS = {
    "vector_norm": lambda L, x: L.linalg.vector_norm(x, ord=0),
    "norm": lambda L, x: L.norm(x, p=0),
    "Tensor.norm": lambda L, x: x.norm(0),
}


@pytest.mark.parametrize("name", sorted(ZERO_NORMS))
def test_zero_norm_has_no_gradient(name):
    # PyTorch: in the graph (requires grad), but its backward gives nothing (not zeros)
    value, requires_grad, grad, alone, unused = _zero_norm(tg, ZERO_NORMS[name])
    assert value == 2.0 and requires_grad
    assert grad is None and alone is None
    assert "appears to not have been used in the graph" in unused


@pytest.mark.parametrize("name", sorted(ZERO_NORMS))
def test_zero_norm_against_torch(torch, name):
    mine, theirs = _zero_norm(tg, ZERO_NORMS[name]), _zero_norm(torch, ZERO_NORMS[name])
    assert mine == theirs
