"""torch.svd_lowrank and torch.pca_lowrank: randomized truncated SVD (Halko, Martinsson and
Tropp 2009, algorithms 4.4 and 5.1) built from differentiable ops (matmul, QR, SVD), so the
factors carry gradients as PyTorch's do.  The Gaussian test matrix comes from tapegrad's random
stream: the factors equal PyTorch's up to the signs of singular vector pairs whenever q reaches
the rank, and are approximations otherwise."""
from __future__ import annotations as _annotations

import tapegrad as _tg
from .tensor import Tensor

__all__ = ["svd_lowrank", "pca_lowrank"]


def _floating(A: Tensor):
    return A.dtype if A.is_floating_point() or A.is_complex() else _tg.float32


def _adjoint(A):
    """A's conjugate transpose; a sparse COO matrix (which has no .mH) by its transpose, as
    PyTorch's svd_lowrank accepts sparse input (a TF-IDF or rating matrix, say)."""
    return A.t() if getattr(A, "is_sparse", False) else A.mH


def _range_basis(A: Tensor, q: int, niter: int, M: Tensor | None) -> Tensor:
    """An orthonormal (m, q) basis approximating the range of A - M: A applied to a Gaussian
    test matrix, then ``niter`` subspace (power) iterations, re-orthonormalised by QR at each
    application."""
    def apply(X, adjoint=False):
        op, shift = (_adjoint(A), None if M is None else M.mH) if adjoint else (A, M)
        Y = op @ X
        return Y if shift is None else Y - shift @ X

    Q = _tg.linalg.qr(apply(_tg.randn(A.shape[-1], q, dtype=_floating(A)))).Q
    for _ in range(2 if niter is None else niter):
        Q = _tg.linalg.qr(apply(Q, adjoint=True)).Q
        Q = _tg.linalg.qr(apply(Q)).Q
    return Q


def _svd_lowrank(A: Tensor, q: int | None, niter: int | None, M: Tensor | None):
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.size())
    # Work on the tall orientation: the basis is m x q with m >= n.
    wide = m < n
    if wide:
        A = _adjoint(A)
        M = None if M is None else M.mH
    Q = _range_basis(A, q, niter, M)
    B = Q.mH @ A
    if M is not None:
        B = B - Q.mH @ M
    U, S, Vh = _tg.linalg.svd(B, full_matrices=False)
    U, V = Q @ U, Vh.mH
    return (V, S, U) if wide else (U, S, V)


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None):
    """(U, S, V) with A - M ~= U diag(S) V^H, of rank ``q`` (default 6), by a randomized range
    finder with ``niter`` subspace iterations (default 2).  Batched over A's leading dims.

    Examples
    --------
    >>> A = tapegrad.randn(20, 3) @ tapegrad.randn(3, 10)
    >>> U, S, V = tapegrad.svd_lowrank(A, q=4)
    >>> bool(tapegrad.dist(U @ tapegrad.diag(S) @ V.T, A) < 1e-3)
    True
    """
    return _svd_lowrank(A, q, niter, M)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2):
    """(U, S, V) of the (centered, by default) data matrix A (rows are samples): the principal
    directions are V's columns, the variances S**2 / (m - 1).  ``q`` defaults to min(6, m, n).
    """
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    if getattr(A, "is_sparse", False):
        # Centring would fill the matrix in: keep A sparse and pass the column means as the
        # dense shift M that the range finder subtracts from every product.
        if A.dim() != 2:
            raise ValueError("pca_lowrank input is expected to be 2-dimensional tensor")
        column_means = A.sum(dim=-2).to_dense() / m
        return _svd_lowrank(A, q, niter, column_means.unsqueeze(0))
    return _svd_lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter, None)
