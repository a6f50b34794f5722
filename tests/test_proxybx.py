"""Regressions found running black-box / evolutionary optimisation scripts (CMA-ES, GP-based
Bayesian optimisation, ES, GA) under tapegrad: each case compared with PyTorch itself."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")

NAN = float("nan")

# Lower triangles with a NaN that reaches the pivot of the given order (LAPACK stops there).
NAN_CASES = [
    ([[NAN, 0.0], [0.0, 1.0]], False, 1),
    ([[1.0, 0.0], [0.0, NAN]], True, 2),
    ([[1.0, 0.5], [NAN, 1.0]], False, 2),
    ([[1.0, NAN], [0.5, 1.0]], True, 2),
    ([[4.0, 0.0, 0.0], [1.0, 3.0, 0.0], [NAN, 0.5, 2.0]], False, 3),
]


@pytest.mark.parametrize("matrix,upper,order", NAN_CASES)
def test_cholesky_nan_pivot_raises(matrix, upper, order):
    # SILENT before: numpy's potrf carried the NaN into the factor; PyTorch raises, which a GP's
    # jitter-retry loop (try cholesky, except: add jitter) relies on.
    with pytest.raises(torch.linalg.LinAlgError, match=f"leading minor of order {order} is not"):
        torch.linalg.cholesky(torch.tensor(matrix), upper=upper)
    with pytest.raises(tapegrad.linalg.LinAlgError,
                       match=f"leading minor of order {order} is not"):
        tapegrad.linalg.cholesky(tapegrad.tensor(matrix), upper=upper)


@pytest.mark.parametrize("matrix,upper,order", NAN_CASES)
def test_cholesky_ex_nan_pivot_info(matrix, upper, order):
    expected = torch.linalg.cholesky_ex(torch.tensor(matrix), upper=upper)
    got = tapegrad.linalg.cholesky_ex(tapegrad.tensor(matrix), upper=upper)
    assert int(got.info) == int(expected.info) == order
    np.testing.assert_array_equal(got.L.numpy(), expected.L.numpy())


def test_cholesky_nan_batched_names_the_batch():
    batch = [[[1.0, 0.0], [0.0, 1.0]], [[2.0, 0.0], [0.0, NAN]]]
    with pytest.raises(torch.linalg.LinAlgError, match=r"\(Batch element 1\).*order 2"):
        torch.linalg.cholesky(torch.tensor(batch))
    with pytest.raises(tapegrad.linalg.LinAlgError, match=r"\(Batch element 1\).*order 2"):
        tapegrad.linalg.cholesky(tapegrad.tensor(batch))
    expected = torch.linalg.cholesky_ex(torch.tensor(batch)).info
    got = tapegrad.linalg.cholesky_ex(tapegrad.tensor(batch)).info
    assert got.tolist() == expected.tolist() == [0, 2]
    with pytest.raises(tapegrad.linalg.LinAlgError, match="order 2"):
        tapegrad.linalg.cholesky_ex(tapegrad.tensor(batch), check_errors=True)


@pytest.mark.filterwarnings("ignore:torch.cholesky is deprecated")
def test_cholesky_old_alias_nan_raises():
    with pytest.raises(torch.linalg.LinAlgError, match="cholesky: The factorization"):
        torch.cholesky(torch.tensor([[NAN, 0.0], [0.0, 1.0]]))
    with pytest.raises(tapegrad.linalg.LinAlgError, match="cholesky: The factorization"):
        tapegrad.cholesky(tapegrad.tensor([[NAN, 0.0], [0.0, 1.0]]))


@pytest.mark.parametrize("given", ["covariance_matrix", "precision_matrix"])
@pytest.mark.parametrize("bad", [[[1.0, 2.0], [2.0, 1.0]], [[NAN, 0.0], [0.0, 1.0]]])
def test_mvn_factors_at_construction(given, bad):
    # PyTorch factors the matrix in __init__: with validate_args=False a matrix that is not
    # positive-definite raises there (tapegrad deferred it to the first sample / log_prob).
    with pytest.raises(torch.linalg.LinAlgError, match="not positive-definite"):
        torch.distributions.MultivariateNormal(torch.zeros(2), validate_args=False,
                                               **{given: torch.tensor(bad)})
    with pytest.raises(tapegrad.linalg.LinAlgError, match="not positive-definite"):
        tapegrad.distributions.MultivariateNormal(tapegrad.zeros(2), validate_args=False,
                                                  **{given: tapegrad.tensor(bad)})


def test_mvn_jitter_retry_loop():
    # the GP idiom the eager factorisation serves: add jitter until the constructor succeeds
    # (before, the first constructor succeeded and the first log_prob raised, outside the try);
    # the factor made in __init__ keeps the graph to the kernel's lengthscale
    def fit(lib, ls):
        X = lib.tensor([[0.0], [1e-3], [1.2]], dtype=lib.float64)
        K = lib.exp(-0.5 * lib.cdist(X, X) ** 2 / ls ** 2) - 1e-4 * lib.eye(3, dtype=lib.float64)
        for attempt, jitter in enumerate([0.0, 1e-2]):
            try:
                mvn = lib.distributions.MultivariateNormal(
                    lib.zeros(3, dtype=lib.float64),
                    covariance_matrix=K + jitter * lib.eye(3, dtype=lib.float64),
                    validate_args=False)
                break
            except lib.linalg.LinAlgError:
                continue
        return attempt, mvn.log_prob(lib.tensor([0.3, -0.2, 0.5], dtype=lib.float64))

    results = []
    for lib in (torch, tapegrad):
        ls = lib.tensor(0.8, dtype=lib.float64, requires_grad=True)
        attempt, lp = fit(lib, ls)
        lp.backward()
        results.append((attempt, lp.item(), ls.grad.item()))
    assert results[0][0] == results[1][0] == 1
    np.testing.assert_allclose(results[1][1:], results[0][1:], rtol=1e-10)
    assert tapegrad.autograd.gradcheck(
        lambda ls: fit(tapegrad, ls)[1],
        (tapegrad.tensor(0.8, dtype=tapegrad.float64, requires_grad=True),))


def _raised(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("which", ["parameters_to_vector", "vector_to_parameters"])
def test_convert_parameters_none_entry_fails_on_device(which):
    # an ES loop flattening `p.grad for p in model.parameters()` before any backward: PyTorch's
    # device check reads `.device` first, so the error names it (tapegrad named `view`/`numel`)
    def call(lib):
        model = lib.nn.Linear(2, 1)
        grads = [p.grad for p in model.parameters()]
        if which == "parameters_to_vector":
            return lambda: lib.nn.utils.parameters_to_vector(grads)
        return lambda: lib.nn.utils.vector_to_parameters(lib.zeros(3), grads)
    expected, got = _raised(call(torch)), _raised(call(tapegrad))
    assert got == expected
    assert expected == (AttributeError, "'NoneType' object has no attribute 'device'")


# (matrix, right-hand side): a NaN pivot on the diagonal, in a 2x2, a 3x3 and the first of a
# batch of two (the second matrix's solution stays finite, as in PyTorch)
SPREAD_CASES = [
    ([[NAN, 0.5], [0.5, 1.0]], [1.0, 1.0]),
    ([[4.0, 0.3, 0.1], [0.2, NAN, 0.4], [0.1, 0.5, 3.0]], [1.0, 2.0, 3.0]),
    ([[[NAN, 0.5], [0.5, 1.0]], [[2.0, 0.0], [0.5, 1.0]]], [1.0, 1.0]),
]


@pytest.mark.parametrize("A,b", SPREAD_CASES)
def test_solve_and_inv_spread_nan_as_pytorch(A, b):
    # SILENT before: numpy's OpenBLAS skips zero rhs entries, so a NaN in A left entries of
    # inv / solve finite that PyTorch's getrs gives as NaN
    def run(lib):
        At, bt = lib.tensor(A), lib.tensor(b)
        return [lib.linalg.solve(At, bt).numpy(), lib.linalg.inv(At).numpy(),
                lib.inverse(At).numpy(), lib.linalg.matrix_power(At, -2).numpy(),
                lib.linalg.solve(At, bt.unsqueeze(-1).expand(*At.shape[:-1], 2)).numpy()]
    for got, expected in zip(run(tapegrad), run(torch)):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
        np.testing.assert_allclose(got, expected, rtol=1e-6)
