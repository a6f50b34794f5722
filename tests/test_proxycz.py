"""What the proxy of classical machine-learning scripts on torch (PCA, kernel methods, LBFGS
fits, NMF, tensor factorisations, t-SNE, metrics) found tapegrad lacked, checked against
PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _coo(module):
    indices = [[0, 1, 2, 3, 4, 4, 0, 2], [0, 1, 2, 0, 1, 3, 3, 3]]
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    return module.sparse_coo_tensor(module.tensor(indices), module.tensor(values), (5, 4))


# -- pca_lowrank / svd_lowrank of a sparse COO matrix (LSA on a TF-IDF matrix) -----------------

@pytest.mark.parametrize("center", [False, True])
def test_pca_lowrank_of_sparse_matrix_factors_the_dense_matrix(center):
    A = _coo(tg)
    dense = A.to_dense().numpy().astype(np.float64)
    if center:
        dense = dense - dense.mean(0)
    U, S, V = tg.pca_lowrank(A, q=4, center=center)
    assert U.shape == (5, 4) and S.shape == (4,) and V.shape == (4, 4)
    assert U.layout == tg.strided and S.dtype == tg.float32
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(dense, compute_uv=False), rtol=1e-4)
    np.testing.assert_allclose((U.numpy() * S.numpy()) @ V.numpy().T, dense, atol=1e-4)
    # PyTorch's singular values agree (q reaches the rank, so nothing is random but signs)
    _, S_torch, _ = torch.pca_lowrank(_coo(torch), q=4, center=center)
    np.testing.assert_allclose(S.numpy(), S_torch.numpy(), rtol=1e-4)


def test_svd_lowrank_of_wide_sparse_matrix():
    A = _coo(tg).t()
    U, S, V = tg.svd_lowrank(A, q=4)
    assert U.shape == (4, 4) and V.shape == (5, 4)
    np.testing.assert_allclose((U.numpy() * S.numpy()) @ V.numpy().T, A.to_dense().numpy(),
                               atol=1e-4)


def test_pca_lowrank_of_batched_sparse_is_refused_as_torch_does():
    for module in (torch, tg):
        A = module.sparse_coo_tensor(module.zeros(3, 1, dtype=module.long), module.ones(1),
                                     (2, 2, 2))
        with pytest.raises(ValueError, match="expected to be 2-dimensional"):
            module.pca_lowrank(A)


# -- linalg.lstsq: which B is a vector, and the batch PyTorch solves -------------------------

def _lstsq_outcome(module, a_shape, b_shape):
    A = module.arange(float(np.prod(a_shape))).reshape(a_shape).double().pow(1.7).sin()
    B = module.arange(float(np.prod(b_shape))).reshape(b_shape).double().cos()
    A.requires_grad_()
    B.requires_grad_()
    try:
        result = module.linalg.lstsq(A, B, driver="gelsd")
    except RuntimeError as e:
        return ("error", str(e))
    (result.solution.sum() + result.residuals.sum()).backward()
    return ("ok", tuple(result.solution.shape), tuple(result.residuals.shape),
            result.solution.detach().numpy(), A.grad.numpy(), B.grad.numpy())


@pytest.mark.parametrize("a_shape, b_shape", [
    ((1, 10, 3), (10, 2)),        # one A, an unbatched matrix B: solved 10 times, as PyTorch does
    ((10, 10, 3), (10, 2)),
    ((2, 10, 3), (2, 10)),        # a batch of vectors: exactly A's shape without its last dim
    ((4, 10, 3), (1, 10, 2)),
    ((4, 10, 3), (10, 2)),        # refused with PyTorch's broadcasting error
    ((4, 10, 3), (1, 10)),        # a matrix with one row: the row-count error, not a vector's
    ((4, 10, 3), (4, 9)),
    ((5, 1, 10, 3), (5, 10, 2)),
    ((2, 1, 10, 3), (3, 10, 2)),
])
def test_lstsq_right_hand_side_shapes_follow_torch(a_shape, b_shape):
    expected = _lstsq_outcome(torch, a_shape, b_shape)
    got = _lstsq_outcome(tg, a_shape, b_shape)
    assert got[0] == expected[0]
    if expected[0] == "error":
        assert got[1] == expected[1]
        return
    assert got[1:3] == expected[1:3]
    for g, e in zip(got[3:], expected[3:]):
        np.testing.assert_allclose(g, e, rtol=1e-8, atol=1e-10)


# -- cholesky_solve / lu_solve: batch broadcasting errors and lu_solve's graph node -----------

def _spd(module, shape):
    t = module.arange(float(np.prod(shape))).reshape(shape).double().pow(1.3).sin()
    return t @ t.mT + 3 * module.eye(shape[-1], dtype=module.float64)


_SOLVERS = {
    "cholesky_solve": lambda m, A, B: m.cholesky_solve(B, m.linalg.cholesky(A)),
    "linalg.lu_solve": lambda m, A, B: m.linalg.lu_solve(*m.linalg.lu_factor(A), B),
    "linalg.lu_solve adjoint": lambda m, A, B: m.linalg.lu_solve(*m.linalg.lu_factor(A), B,
                                                                 adjoint=True),
    "lu_solve": lambda m, A, B: m.lu_solve(B, *m.linalg.lu_factor(A)),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("solver", sorted(_SOLVERS))
@pytest.mark.parametrize("a_shape, b_shape", [((2, 3, 3), (4, 3, 2)), ((2, 1, 3, 3), (4, 3, 2)),
                                              ((3, 3), (3,))])
def test_batched_solvers_broadcast_or_refuse_as_torch(solver, a_shape, b_shape):
    outcomes = []
    for module in (torch, tg):
        B = module.arange(float(np.prod(b_shape))).reshape(b_shape).double().cos()
        try:
            X = _SOLVERS[solver](module, _spd(module, a_shape), B)
            outcomes.append(("ok", tuple(X.shape), X.numpy()))
        except Exception as e:      # noqa: BLE001 (the exception is what is compared)
            outcomes.append((type(e).__name__, str(e)))
    (kind, *rest), (got_kind, *got_rest) = outcomes
    assert got_kind == kind
    if kind == "ok":
        assert got_rest[0] == rest[0]
        np.testing.assert_allclose(got_rest[1], rest[1], rtol=1e-10)
    else:
        assert got_rest == rest


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("kwargs", [{}, {"adjoint": True}, {"left": False}])
def test_lu_solve_is_one_graph_node_as_in_torch(kwargs):
    A = tg.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], requires_grad=True)
    b = tg.tensor([[1.0], [2.0], [3.0]], requires_grad=True)
    B = b if kwargs.get("left", True) else b.mT
    LU, pivots = tg.linalg.lu_factor(A)
    X = tg.linalg.lu_solve(LU, pivots, B, **kwargs)
    assert type(X.grad_fn).__name__ == "LinalgLuSolveBackward0"
    assert type(tg.lu_solve(b, LU, pivots).grad_fn).__name__ == "LinalgLuSolveBackward0"
    X.sum().backward()
    At = torch.tensor(A.detach().numpy(), requires_grad=True)
    bt = torch.tensor(b.detach().numpy(), requires_grad=True)
    Bt = bt if kwargs.get("left", True) else bt.mT
    torch.linalg.lu_solve(*torch.linalg.lu_factor(At), Bt, **kwargs).sum().backward()
    np.testing.assert_allclose(A.grad.numpy(), At.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), bt.grad.numpy(), rtol=1e-5)
