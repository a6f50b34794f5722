"""Regressions of the second session-24 fuzz run (programs 60645844-, 62625789-; surface
60738665-) and of the open seeds of the first it triaged (62620309, 60645360, 60635163).

Each test compares with PyTorch (the `torch` fixture skips cleanly without it).
"""
import warnings

import numpy as np
import pytest

import tapegrad as tg


# -- var without degrees of freedom (62620309; SILENT for a 0-d input with a dim) ------------------
# PyTorch's var_backward takes its all-elements formula, grad * where(x == mean, NaN, inf), for a
# 0-d input whatever the dim: tapegrad divided by the unclamped n - correction there (-0.0 where
# PyTorch has NaN).  And that formula keeps the adjoint's graph: tapegrad's create_graph gradient
# was a constant, so huber_loss(var(x, correction=2)) had no second derivative.

def _var_gradient(lib, shape, correction, dim_kw, weight_requires_grad):
    x = lib.tensor(np.array([0.3, -0.1][:max(1, int(np.prod(shape)))]).reshape(shape),
                   requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = x.var(correction=correction, **dim_kw)
    w = lib.tensor(0.5, dtype=lib.float64, requires_grad=weight_requires_grad)
    g, = lib.autograd.grad((y * w).sum(), [x], create_graph=True)
    return g.detach().numpy(), g.requires_grad


@pytest.mark.parametrize("shape", [(), (1,), (2,)])
@pytest.mark.parametrize("correction", [0, 1, 2])
@pytest.mark.parametrize("dim_kw", [{}, {"dim": 0}, {"dim": 0, "keepdim": True}])
@pytest.mark.parametrize("weight_requires_grad", [True, False])
def test_var_without_dof_gradient_matches_torch(torch, shape, correction, dim_kw,
                                                weight_requires_grad):
    expected = _var_gradient(torch, shape, correction, dim_kw, weight_requires_grad)
    got = _var_gradient(tg, shape, correction, dim_kw, weight_requires_grad)
    np.testing.assert_array_equal(got[0], expected[0])
    assert got[1] == expected[1]


def test_huber_of_var_without_dof_has_second_derivative(torch):
    def second(lib):
        x = lib.tensor(-0.272, dtype=lib.float64, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            v = x.var(correction=2)
        loss = lib.nn.functional.huber_loss(v, lib.tensor(0.44, dtype=lib.float64), delta=0.01)
        g, = lib.autograd.grad(loss, [x], create_graph=True)
        return g.requires_grad, g.detach().item()
    assert second(tg)[0] == second(torch)[0] is True
    assert np.isnan(second(tg)[1]) and np.isnan(second(torch)[1])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_zero_d_var_with_dim_backward_matches_torch(torch, dtype):
    def grad(lib):
        x = lib.tensor(0.3, dtype=getattr(lib, dtype), requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x.var(0, correction=2).backward()
        return x.grad.numpy()
    np.testing.assert_array_equal(grad(tg), grad(torch))


# -- a no_grad view of a tensor that requires grad, in a create_graph backward (60645360) -------
# The view gets no gradient edge but requires grad; PyTorch's saved variable of it requires grad,
# so the gradient of its partner computed from it does too.  tapegrad read it as a constant.

_PARTNERS = {
    "matmul_folded": lambda a, b: a @ b,
    "mul": lambda a, b: a * b.sum(),
    "dot": lambda a, b: a.dot(b[0, :, 0]),
    "matmul_2d": lambda a, b: a.reshape(2, 2) @ b[0, :2],
}


@pytest.mark.parametrize("partner", sorted(_PARTNERS))
def test_no_grad_view_operand_gradient_requires_grad_as_torch(torch, partner):
    def run(lib):
        base = lib.ones(2, 2, requires_grad=True)
        with lib.no_grad():
            view = base.reshape(-1)
        other = lib.ones(1, 4, 2, requires_grad=True)
        g, = lib.autograd.grad(_PARTNERS[partner](view, other).sum(), [other], create_graph=True)
        second = lib.autograd.grad(g.sum(), [base, other], allow_unused=True) \
            if g.requires_grad else "no graph"
        return g.requires_grad, g.detach().numpy(), second, base.grad
    got, expected = run(tg), run(torch)
    assert got[0] == expected[0]
    np.testing.assert_array_equal(got[1], expected[1])
    assert got[2] == expected[2] == (None, None)
    assert got[3] is None and expected[3] is None
