"""What the session-34 proxy bp of public unsupervised-learning and density-model scripts
(karpathy/pytorch-normalizing-flows, chengzegang/TorchSLAM k-means, FrederickGeek8/t-SNE, a torch
port of tsne.py, Minqi824/ADBench GMM, ElianMalessy/image-generator and DeAngelisDavide/EBM-with-NCE
Langevin samplers, dimkastan/PyTorch-Spectral-clustering, pymde's spectral embedding) found
tapegrad doing differently from PyTorch, each checked against torch."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _message(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is compared by the caller
        return type(e), str(e)
    return None, None


def _spd(m, seed):
    rng = np.random.RandomState(seed)
    M = rng.randn(m, m)
    return M @ M.T + np.eye(m)


def _aligned(X, Y):
    """Y's columns with the signs that match X's (eigenvectors are defined up to sign)."""
    return Y * np.sign((X * Y).sum(0))


# -- torch.lobpcg: spectral clustering / embedding scripts take a few extreme eigenpairs ----------

@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 3])
def test_lobpcg_eigenpairs_match_torch(largest, k):
    M = _spd(15, 0)
    E1, X1 = torch.lobpcg(torch.from_numpy(M), k=k, largest=largest)
    E2, X2 = tg.lobpcg(tg.from_numpy(M), k=k, largest=largest)
    assert E2.dtype == tg.float64 and tuple(X2.shape) == (15, k)
    np.testing.assert_allclose(E2.numpy(), E1.numpy(), rtol=1e-10)
    np.testing.assert_allclose(_aligned(X1.numpy(), X2.numpy()), X1.numpy(), atol=1e-6)


def test_lobpcg_float32_batched_generalized_and_sparse():
    M = _spd(12, 1)
    # float32 stops at a relative residual of 1.2e-7 ** 0.5: eigenvalues agree to about 1e-5
    start = np.random.RandomState(5).randn(12, 2).astype(np.float32)
    E1 = torch.lobpcg(torch.from_numpy(M.astype(np.float32)), k=2, X=torch.from_numpy(start))[0]
    E2 = tg.lobpcg(tg.from_numpy(M.astype(np.float32)), k=2, X=tg.from_numpy(start))[0]
    assert E2.dtype == tg.float32
    np.testing.assert_allclose(E2.numpy(), E1.numpy(), rtol=1e-4)
    batch = np.stack([M, M + 2 * np.eye(12)])
    E1 = torch.lobpcg(torch.from_numpy(batch), k=2, largest=False)[0]
    E2 = tg.lobpcg(tg.from_numpy(batch), k=2, largest=False)[0]
    assert tuple(E2.shape) == (2, 2)
    np.testing.assert_allclose(E2.numpy(), E1.numpy(), rtol=1e-9)
    B = np.diag(np.linspace(1.0, 3.0, 12))
    E1 = torch.lobpcg(torch.from_numpy(M), k=2, B=torch.from_numpy(B))[0]
    E2 = tg.lobpcg(tg.from_numpy(M), k=2, B=tg.from_numpy(B))[0]
    np.testing.assert_allclose(E2.numpy(), E1.numpy(), rtol=1e-9)
    index = [list(range(9)), list(range(9))]
    S = tg.sparse_coo_tensor(tg.tensor(index), tg.arange(1.0, 10.0), (9, 9))
    np.testing.assert_allclose(tg.lobpcg(S, k=2)[0].numpy(), [9.0, 8.0], rtol=1e-4)
    E = tg.lobpcg(S.double(), k=2, X=tg.from_numpy(start[:9].astype(np.float64)))[0]
    np.testing.assert_allclose(E.numpy(), [9.0, 8.0], rtol=1e-12)


def test_lobpcg_start_block_tracker_and_preconditioner():
    A = np.diag(np.arange(1.0, 31.0))
    X0 = np.ones((30, 4)) + np.eye(30, 4)
    seen = []
    E, X = tg.lobpcg(tg.from_numpy(A), k=3, X=tg.from_numpy(X0), niter=-1,
                     tracker=lambda w: seen.append(w.ivars["istep"]))
    np.testing.assert_allclose(E.numpy(), [30.0, 29.0, 28.0], rtol=1e-9)
    assert tuple(X.shape) == (30, 3) and seen[0] == 0
    E = tg.lobpcg(tg.from_numpy(A), k=2, largest=False, iK=tg.from_numpy(np.diag(1 / np.arange(1.0, 31.0))))[0]
    np.testing.assert_allclose(E.numpy(), [1.0, 2.0], rtol=1e-6)


def test_lobpcg_gradient_matches_torch_and_is_symmetric():
    M = _spd(12, 2)
    grads = []
    for lib in (torch, tg):
        A = lib.from_numpy(M.copy()).requires_grad_()
        E, X = lib.lobpcg(A, k=2, largest=False, tol=1e-12)
        weights = lib.from_numpy(np.linspace(-1.0, 1.0, 12))
        ((E ** 2).sum() + (X[:, 0] * weights).sum().abs() + X[:, 1].sum().abs()).backward()
        grads.append(A.grad.numpy())
        assert type(E.grad_fn).__name__ == "LOBPCGAutogradFunctionBackward"
    np.testing.assert_allclose(grads[1], grads[0], atol=1e-6)
    np.testing.assert_allclose(grads[1], grads[1].T, atol=1e-12)


def test_lobpcg_gradcheck_float64():
    M = tg.from_numpy(_spd(9, 3)).requires_grad_()

    def f(A):
        E, X = tg.lobpcg(A, k=2, tol=1e-13)
        # sign-free functions of the eigenvectors
        return E, X[:, 0] * X[:, 0].sum(), X[:, 1].outer(X[:, 1])
    assert tg.autograd.gradcheck(f, (M,), eps=1e-6, atol=1e-5)


def test_lobpcg_errors_match_torch():
    cases = [
        lambda lib: lib.lobpcg(lib.eye(5), k=2),
        lambda lib: lib.lobpcg(lib.ones(5, 4)),
        lambda lib: lib.lobpcg(lib.eye(12), X=lib.ones(11, 2)),
        lambda lib: lib.lobpcg(lib.diag(lib.arange(1, 13)), k=2),
        lambda lib: lib.lobpcg(lib.eye(12), B=lib.eye(9)),
    ]
    for case in cases:
        expected = _message(lambda: case(torch))
        assert expected[0] is not None
        assert _message(lambda: case(tg)) == expected


def test_lobpcg_generalized_backward_refused_as_torch():
    M = _spd(12, 4)
    outcomes = []
    for lib in (torch, tg):
        A = lib.from_numpy(M.copy()).requires_grad_()
        E, _ = lib.lobpcg(A, k=2, B=lib.eye(12, dtype=lib.float64) * 2)
        outcomes.append(_message(lambda: E.sum().backward()))
    assert outcomes[0][0] is ValueError
    assert outcomes[1] == outcomes[0]
