"""torch.special.zeta (the Hurwitz zeta function): values against PyTorch and mpmath, PyTorch's
edges (poles, x < 1, infinities), dtypes and broadcasting, the gradient in q (-x zeta(x + 1, q))
by float64 finite differences and against PyTorch, and PyTorch's NotImplementedError for x."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

XS = [1.0001, 1.1, 1.5, 2.0, 3.0, 3.7, 10.0, 30.0, 50.0, 100.0, 0.5, 1.0, -1.0, np.inf, np.nan,
      4.0, 2.5]
QS = [-3.5, -2.0, -1.5, -0.5, 0.0, 1e-3, 0.1, 0.5, 1.0, 2.5, 10.0, 19.5, 50.0, 1e3, 1e9, np.inf,
      np.nan, -50.5, -np.inf]


def test_values_and_edges_match_torch():
    x, q = np.meshgrid(np.array(XS), np.array(QS))
    got = tg.special.zeta(tg.tensor(x), tg.tensor(q)).numpy()
    expected = torch.special.zeta(torch.tensor(x), torch.tensor(q)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-11, atol=0, equal_nan=True)


def test_values_against_mpmath():
    mpmath = pytest.importorskip("mpmath")
    for x in (1.05, 1.5, 2.0, 4.25, 12.0, 60.0):
        for q in (0.01, 0.3, 1.0, 7.5, 25.0, 400.0):
            got = float(tg.special.zeta(tg.tensor([x], dtype=tg.float64), q))
            assert got == pytest.approx(float(mpmath.zeta(x, q)), rel=1e-12)


@pytest.mark.parametrize("make", [
    lambda T: (T.tensor([2, 3]), T.tensor([1, 2])),
    lambda T: (2, T.tensor([1.0, 2.0])),
    lambda T: (T.tensor([2.0, 3.0], dtype=T.float64), 2),
    lambda T: (T.full((2, 1), 2.5), T.tensor([0.5, 1.0, 3.0])),
    lambda T: (T.tensor([2.0]), T.tensor([1.5], dtype=T.float64)),
])
def test_dtypes_numbers_and_broadcasting_match_torch(make):
    got, expected = tg.special.zeta(*make(tg)), torch.special.zeta(*make(torch))
    assert str(got.dtype) == str(expected.dtype) and tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)


@pytest.mark.parametrize("args", ["(2.0, 3.0)", "(t, 'a')", "(t, np.ones(2))"])
def test_bad_arguments_raise_torchs_typeerror(args):
    messages = []
    for lib in (tg, torch):
        with pytest.raises(TypeError) as info:
            eval(f"lib.special.zeta{args}", {"lib": lib, "np": np, "t": lib.ones(2) * 2})
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_gradient_in_q_by_finite_differences_and_against_torch():
    x = np.array([[1.5, 2.0, 3.7]])
    q = np.array([[0.4], [1.0], [6.5]])
    qg = tg.tensor(q, requires_grad=True)
    assert tg.autograd.gradcheck(lambda b: tg.special.zeta(tg.tensor(x), b), (qg,))
    tg.special.zeta(tg.tensor(x), qg).sum().backward()
    qt = torch.tensor(q, requires_grad=True)
    z = torch.special.zeta(torch.tensor(x), qt)
    z.sum().backward()
    assert z.grad_fn.name() == tg.special.zeta(tg.tensor(x), qg).grad_fn.name()
    np.testing.assert_allclose(qg.grad.numpy(), qt.grad.numpy(), rtol=1e-10)


def test_no_derivative_in_x_as_torch():
    for lib in (tg, torch):
        x = lib.tensor([2.0, 3.0], requires_grad=True)
        with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not "
                                                      "implemented"):
            lib.special.zeta(x, lib.tensor([1.0, 2.0])).sum().backward()
