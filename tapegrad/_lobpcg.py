"""torch.lobpcg: the k largest (or smallest) eigenpairs of a symmetric (generalized) eigenproblem
A x = lambda B x by a locally optimal block preconditioned conjugate gradient iteration
(Knyazev 2001), with a Rayleigh-Ritz step on an orthonormalized basis [X, W, P] at each step
(loaded on first use).

The iteration runs on numpy arrays in float64 (the stopping rule is the input dtype's), applying
A, B and the preconditioner through tapegrad's matmul, so a sparse COO A works as a dense one
does; its results are eigenpairs to the tolerance, as PyTorch's are.  The start block X defaults
to tapegrad.randn((m, n)), one per batch entry, as PyTorch draws it.

Its derivative (only for B = None, as PyTorch's) is exact for the k returned pairs: A's gradient is
X diag(gE) X^T plus, per eigenvector x_i, -(A - lambda_i)^+ gX_i x_i^T with the pseudo-inverse
taken on the complement of x_i; A is symmetrized first ((A + A^T) / 2, recorded), as PyTorch does,
so the gradient reaching A is symmetric.
"""
from __future__ import annotations as _annotations

import numpy as np

import tapegrad as _tg
from .autograd.function import Function
from ._extra_functions import _torch_grad_fn_name

__all__ = ["lobpcg"]


class _State:
    """What a ``tracker`` sees each step: PyTorch's LOBPCG worker attributes, by name."""

    def __init__(self, A, B, iK, iparams, fparams, bparams, method):
        self.A, self.B, self.iK, self.method = A, B, iK, method
        self.iparams, self.fparams, self.bparams = iparams, fparams, bparams
        self.ivars = {"istep": 0, "converged_count": 0, "converged_end": 0}
        self.fvars = {"_": 0.0}
        self.bvars = {"force_stop": False}
        self.tvars = {}
        self.E = self.X = self.R = self.S = None


def _operator(M):
    """x -> M @ x on float64 numpy blocks, through tapegrad's matmul (dense or sparse M)."""
    if M is None:
        return None
    if M.layout == _tg.strided:
        dense = M.detach().numpy()
        values = np.asarray(dense, dtype=np.float64) if dense.dtype.kind != "c" else dense
        return lambda x: values @ x
    return lambda x: np.asarray((M @ _tg.from_numpy(x).to(M.dtype)).detach().numpy(),
                                dtype=np.float64)


def _orthonormalize(S, applyB, drop):
    """An applyB-orthonormal basis of span(S): the eigenbasis of its Gram matrix, dropping the
    directions whose Gram eigenvalue is below ``drop`` times the largest (linear dependence)."""
    BS = S if applyB is None else applyB(S)
    G = S.conj().T @ BS
    G = (G + G.conj().T) / 2
    d, V = np.linalg.eigh(G)
    keep = d > drop * max(d[-1], 0.0)
    if not keep.any():
        return S[:, :0]
    V, d = V[:, keep], d[keep]
    return S @ (V / np.sqrt(d))


def _against(W, X, applyB):
    """W with its applyB-components along the applyB-orthonormal X removed (twice, for accuracy)."""
    for _ in range(2):
        BX = X if applyB is None else applyB(X)
        W = W - X @ (BX.conj().T @ W)
    return W


def _run(applyA, applyB, applyK, X, k, niter, tol, largest, state, tracker):
    m, n = X.shape
    drop = np.finfo(np.float64).eps * m * 10
    X = _orthonormalize(X, applyB, drop)
    if X.shape[1] < n:                           # a rank-deficient start block: fill it up
        fill = np.eye(m)[:, :n]
        X = _orthonormalize(np.concatenate([X, _against(fill, X, applyB)], 1), applyB, drop)[:, :n]
    AX = applyA(X)
    theta, C = np.linalg.eigh((X.conj().T @ AX + (X.conj().T @ AX).conj().T) / 2)
    order = np.argsort(-theta if largest else theta, kind="stable")[:n]
    theta, X, AX = theta[order], X @ C[:, order], AX @ C[:, order]
    P = None
    step = 0
    while True:
        BX = X if applyB is None else applyB(X)
        R = AX - BX * theta
        # PyTorch's relative residual: ||r_i|| / ((||A|| + |theta_i| ||B||) ||x_i||), with the
        # norms estimated on the current block
        a_norm = np.linalg.norm(AX) / max(np.linalg.norm(X), 1e-300)
        b_norm = np.linalg.norm(BX) / max(np.linalg.norm(X), 1e-300)
        rerr = np.linalg.norm(R, axis=0) / ((a_norm + np.abs(theta) * b_norm)
                                            * np.linalg.norm(X, axis=0))
        converged = rerr < tol
        count = int(np.argmin(converged)) if not converged.all() else n
        state.ivars["istep"], state.ivars["converged_count"] = step, count
        state.E, state.X, state.R = theta, X, R
        state.tvars["rerr"] = rerr
        if tracker is not None:
            tracker(state)
        if count >= k or state.bvars["force_stop"] or (0 <= niter <= step):
            break
        active = ~converged
        W = R[:, active]
        if applyK is not None:
            W = applyK(W)
        blocks = [W] if P is None else [W, P[:, active]]
        extra = _against(np.concatenate(blocks, 1), X, applyB)
        extra = _orthonormalize(extra, applyB, drop)
        extra = _orthonormalize(_against(extra, X, applyB), applyB, drop)
        S = np.concatenate([X, extra], 1)
        AS = applyA(S)
        T = S.conj().T @ AS
        values, C = np.linalg.eigh((T + T.conj().T) / 2)
        order = np.argsort(-values if largest else values, kind="stable")[:n]
        C = C[:, order]
        theta = values[order]
        P = S[:, n:] @ C[n:, :]
        X, AX = S @ C, AS @ C
        step += 1
    return theta, X


def _lobpcg_values(A, k, B, X, n, iK, niter, tol, largest, method, tracker, iparams, fparams,
                   bparams):
    """(E, X) for a 2-D or batched A, nothing recorded."""
    dtype = A.dtype if A.dtype.is_floating_point or A.dtype.is_complex else _tg.float32
    m = A.shape[-1]
    batch = tuple(A.shape[:-2])
    count = int(np.prod(batch)) if batch else 1
    # one problem per batch entry (a 2-D A, dense or sparse, is its own single entry)
    flatA = A.reshape((count, m, m)) if batch else [A]
    flatB = None if B is None else (B.reshape((count, m, m)) if batch else [B])
    flatX = None if X is None else (X.reshape((count,) + tuple(X.shape[-2:])) if batch else [X])
    values, vectors = [], []
    for i in range(count):
        A_i = flatA[i]
        X_i = _tg.randn((m, n), dtype=dtype) if flatX is None else flatX[i]
        if not (X_i.dim() == 2 and tuple(X_i.shape) == (m, n)):
            raise AssertionError(f"X shape mismatch: got {X_i.shape}, expected {(m, n)}")
        # A's dtype must meet X's in its product, as in PyTorch's first A @ X
        _tg.matmul(A_i[:1], X_i) if A_i.layout == _tg.strided else None
        state = _State(A_i, None if flatB is None else flatB[i], iK, dict(iparams, batch_index=i)
                       if batch else iparams, fparams, bparams, method)
        E, V = _run(_operator(A_i), _operator(None if flatB is None else flatB[i]),
                    _operator(iK), np.asarray(X_i.detach().numpy(), dtype=np.float64), k,
                    niter, tol, largest, state, tracker)
        values.append(E[:k])
        vectors.append(V[:, :k])
    E = _tg.from_numpy(np.stack(values)).to(dtype).reshape(batch + (k,))
    V = _tg.from_numpy(np.stack(vectors)).to(dtype).reshape(batch + (m, k))
    return E, V


class _LOBPCGFunction(Function):
    """The eigenpairs with their exact derivative (B = None): see the module docstring."""

    @staticmethod
    def forward(ctx, A, args):
        E, X = _lobpcg_values(A, *args)
        ctx.generalized = args[1] is not None
        ctx.save_for_backward(A, E, X)
        return E, X

    @staticmethod
    def backward(ctx, gE, gX):
        if ctx.generalized:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        A, E, X = ctx.saved_tensors
        m = A.shape[-1]
        grad = _tg.zeros_like(A)
        if gE is not None:
            grad = grad + (X * gE.unsqueeze(-2)) @ X.mT
        if gX is not None:
            eye = _tg.eye(m, dtype=A.dtype)
            for i in range(X.shape[-1]):
                x = X[..., :, i:i + 1]
                g = gX[..., :, i:i + 1]
                outer = x @ x.mT
                project = eye - outer
                # (A - lambda_i) restricted to x_i's complement, made invertible on x_i itself
                shifted = project @ (A - E[..., i, None, None] * eye) @ project + outer
                y = _tg.linalg.solve(shifted, project @ g)
                grad = grad - y @ x.mT
        return grad, None


_torch_grad_fn_name(_LOBPCGFunction, "LOBPCGAutogradFunctionBackward")


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """(E, X): the ``k`` largest (``largest=True``, the default) or smallest eigenvalues of the
    symmetric A (generalized: A x = lambda B x when B is given) and their eigenvectors, shapes
    (*, k) and (*, m, k), by LOBPCG.  ``X`` (*, m, n) is the start block (random by default, n =
    k), ``iK`` a preconditioner, ``niter`` the step cap (1000; -1 for no cap), ``tol`` the
    relative residual at which a pair counts as converged (the dtype's eps ** 0.5).  ``tracker``
    is called each step with an object holding ``ivars``, ``E``, ``X``, ``R``, ``tvars`` and
    ``bvars`` (set ``bvars["force_stop"]`` to stop).

    Examples
    --------
    >>> A = tapegrad.diag(tapegrad.arange(1., 13.))
    >>> E, X = tapegrad.lobpcg(A, k=2, largest=False)
    >>> [round(v, 4) for v in E.tolist()]
    [1.0, 2.0]
    """
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    dtype = A.dtype if A.dtype.is_floating_point or A.dtype.is_complex else _tg.float32
    if tol is None:
        tol = {_tg.float32: 1.2e-07, _tg.float64: 2.23e-16}.get(dtype, 1.2e-07) ** 0.5
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m})"
                         f" is smaller than 3 x the number of requested eigenpairs (={n})")
    method = "ortho" if method is None else method
    iparams = {"m": m, "n": n, "k": k, "niter": 1000 if niter is None else niter}
    fparams = {"tol": tol}
    bparams = {"largest": True if largest is None else largest}
    if method == "ortho":
        iparams.update(ortho_iparams or {})
        fparams.update(ortho_fparams or {})
        bparams.update(ortho_bparams or {})
    args = (k, B, X, n, iK, iparams["niter"], fparams["tol"], bparams["largest"], method,
            tracker, iparams, fparams, bparams)
    if _tg.is_grad_enabled() and (A.requires_grad or (B is not None and B.requires_grad)):
        B_sym = None if B is None else (B + B.mT) / 2
        return _LOBPCGFunction.apply((A + A.mT) / 2, (k, B_sym) + args[2:])
    return _lobpcg_values(A, *args)
