"""torch.lobpcg: the k extreme eigenpairs of a symmetric (generalized) eigenproblem.

PyTorch iterates LOBPCG because its A may be sparse or too large to factor.  tapegrad's
matrices are dense numpy arrays, so the same eigenpairs are computed exactly by the symmetric
eigensolver (B = L L^T reduced to L^-1 A L^-T first), through tapegrad's differentiable
linalg ops: A's (and B's) gradient is the eigenpairs' own, which PyTorch's LOBPCG backward
also computes for dense inputs.  The iteration controls (niter, tol, method, tracker, the
ortho_* parameters, iK) only steer PyTorch's iterations and are accepted as given.
"""
from __future__ import annotations

# (this module loads on first use of tapegrad.lobpcg, when autograd is there already)
from .autograd.function import Function


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """The ``k`` largest (``largest=False``: smallest) eigenvalues and eigenvectors of the
    symmetric ``A`` (m, m) (or a batch), of ``A x = λ B x`` when ``B`` (symmetric positive
    definite) is given: returns (E (*, k), X (*, m, k)), E in descending order for the largest,
    ascending for the smallest, X orthonormal (B-orthonormal).  ``k`` defaults to X's column
    count (``X`` is PyTorch's initial guess) or 1; ``n`` is the size of the search space, at
    most m / 3 (ValueError, as PyTorch).  Differentiable in A and B.
    """
    if k is None:
        k = 1 if X is None else X.shape[-1]
    n = (k if X is None else X.shape[-1]) if n is None else n
    m = A.shape[-1]
    if m < 3 * n:
        raise ValueError(
            f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller "
            f"than 3 x the number of requested eigenpairs (={n})")
    largest = True if largest is None else largest
    if B is not None:
        return LOBPCGAutogradFunction.apply(A, B, k, largest)
    return _extreme_pairs(A, None, k, largest)


def _extreme_pairs(A, B, k, largest):
    from . import linalg
    m = A.shape[-1]
    # (PyTorch symmetrizes A, and B, in its autograd wrapper the same way)
    A = (A + A.mT) / 2
    if B is None:
        values, vectors = linalg.eigh(A)
    else:
        B = (B + B.mT) / 2
        L = linalg.cholesky(B)
        left = linalg.solve_triangular(L, A, upper=False)
        C = linalg.solve_triangular(L, left.mT, upper=False)
        values, V = linalg.eigh((C + C.mT) / 2)
        vectors = linalg.solve_triangular(L.mT, V, upper=True)
    if largest:
        values, vectors = values[..., m - k:].flip(-1), vectors[..., m - k:].flip(-1)
    else:
        values, vectors = values[..., :k], vectors[..., :k]
    return values, vectors


class LOBPCGAutogradFunction(Function):
    """The generalized problem (B given): eigenpairs without a gradient, as PyTorch's LOBPCG
    backward refuses B != I (ValueError when a backward reaches it)."""

    @staticmethod
    def forward(ctx, A, B, k, largest):
        return _extreme_pairs(A, B, k, largest)

    @staticmethod
    def backward(ctx, dE, dX):
        raise ValueError("lobpcg.backward does not support backward with B != I yet.")
