"""Regressions found by the fifteenth argument-form sweep (every name of PyTorch's signature table,
torch.overrides.get_testing_overrides, called positionally, by keyword and with its documented
defaults given explicitly; inspect.signature of the Python-level layers) against PyTorch."""
import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

# Not symmetric: which triangle a Cholesky factorization reads shows in its result.
_LOPSIDED = [[4.0, 1.0, 2.0], [0.5, 3.0, 0.1], [0.3, 0.2, 5.0]]


def _value_and_grad(lib, fn, array):
    leaf = lib.tensor(array, dtype=lib.float64, requires_grad=True)
    out = fn(lib, leaf)
    weights = lib.arange(out.numel(), dtype=lib.float64).reshape(tuple(out.shape))
    grad, = lib.autograd.grad((out * weights).sum(), leaf)
    return out.detach().numpy(), grad.numpy()


# -- Cholesky's upper factor reads the input's upper triangle (SILENT: it read the lower one) ----

@pytest.mark.parametrize("fn", [
    lambda lib, a: lib.linalg.cholesky(a, upper=True),
    lambda lib, a: lib.cholesky(a, True),
    lambda lib, a: lib.linalg.cholesky_ex(a, upper=True)[0],
    lambda lib, a: lib.linalg.cholesky(a, upper=False),
])
def test_cholesky_upper_reads_the_upper_triangle(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # (torch.cholesky's deprecation)
        got, want = _value_and_grad(tg, fn, _LOPSIDED), _value_and_grad(torch, fn, _LOPSIDED)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_cholesky_ex_upper_reports_the_upper_triangles_failure():
    # Positive-definite by its lower triangle, not by its upper one.
    a = [[4.0, 1.0, 2.0], [0.5, 3.0, 9.0], [0.3, 0.2, 5.0]]
    for upper in (False, True):
        got = tg.linalg.cholesky_ex(tg.tensor(a, dtype=tg.float64), upper=upper)
        want = torch.linalg.cholesky_ex(torch.tensor(a, dtype=torch.float64), upper=upper)
        assert int(got[1]) == int(want[1])
        np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-10, atol=1e-12)


def test_complex_cholesky_upper_is_not_a_conjugate_view():
    a = [[4.0, 1 + 1j, 2.0], [0.5, 3.0, 0.1j], [0.3, 0.2, 5.0]]
    for lib in (tg, torch):
        factor = lib.linalg.cholesky(lib.tensor(a, dtype=lib.complex128), upper=True)
        assert not factor.is_conj()
    got = tg.linalg.cholesky(tg.tensor(a, dtype=tg.complex128), upper=True).numpy()
    want = torch.linalg.cholesky(torch.tensor(a, dtype=torch.complex128), upper=True).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


# -- multilabel_margin_loss: class indices must be Long (SILENT: a float target was truncated) --

@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
def test_multilabel_margin_loss_refuses_a_target_that_is_not_long(dtype):
    x = np.array([[0.5, -2.0, 0.0], [1.0, 3.0, -1.0]])
    target = np.array([[0, 1, -1], [2, -1, 0]])
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="expected scalar type Long but found"):
            lib.nn.functional.multilabel_margin_loss(
                lib.tensor(x), lib.tensor(target).to(getattr(lib, dtype)))
    got = tg.nn.functional.multilabel_margin_loss(tg.tensor(x), tg.tensor(target))
    want = torch.nn.functional.multilabel_margin_loss(torch.tensor(x), torch.tensor(target))
    np.testing.assert_allclose(float(got), float(want), rtol=1e-12)


# -- nn.Hardtanh: PyTorch's old keyword names, and its AssertionError for crossed bounds ---------

def test_hardtanh_takes_the_deprecated_min_value_max_value():
    x = np.linspace(-3, 3, 7)
    for lib in (tg, torch):
        with pytest.warns(FutureWarning, match="keyword argument `min_value` is deprecated"):
            lib.nn.Hardtanh(min_value=-2.0)
    with pytest.warns(FutureWarning):
        got = tg.nn.Hardtanh(min_value=-2.0, max_value=0.5)(tg.tensor(x))
    with pytest.warns(FutureWarning):
        want = torch.nn.Hardtanh(min_value=-2.0, max_value=0.5)(torch.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy())
    for lib in (tg, torch):
        with pytest.raises(AssertionError, match=r"max_val \(0\) must be greater than min_val"):
            lib.nn.Hardtanh(1, 0)
