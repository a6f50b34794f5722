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
