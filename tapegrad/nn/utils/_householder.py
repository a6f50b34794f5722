"""Householder QR pieces the orthogonal parametrization needs (PyTorch's ``geqrf`` and
``linalg.householder_product``): reflectors stored below the diagonal with an implicit unit
leading entry, and their scalars ``tau``, each reflector being ``I - tau v v^H``."""
from __future__ import annotations

import numpy as np

import tapegrad as _tg
from ...tensor import Tensor


def householder_qr(A: Tensor) -> tuple[Tensor, Tensor]:
    """LAPACK's geqrf on each matrix of ``A`` (..., m, n): R on and above the diagonal, the
    reflectors below it, and the reflectors' scalars tau (..., min(m, n)).  Not differentiable
    (PyTorch's geqrf has no derivative either)."""
    a = np.array(A.detach().numpy(), copy=True, order="C")    # flat below must be a view
    m, n = a.shape[-2:]
    k = min(m, n)
    flat = a.reshape(-1, m, n)
    taus = np.zeros((flat.shape[0], k), dtype=a.dtype)
    for b in range(flat.shape[0]):
        mat = flat[b]
        for j in range(k):
            alpha = mat[j, j]
            rest_norm = np.linalg.norm(mat[j + 1:, j])
            if rest_norm == 0.0:
                continue                         # already zero below: tau = 0, H = I
            # dlarfg's choice of sign keeps alpha - beta away from cancellation.
            beta = -np.copysign(np.hypot(alpha, rest_norm), alpha)
            taus[b, j] = (beta - alpha) / beta
            mat[j + 1:, j] /= alpha - beta
            mat[j, j] = beta
            v = np.concatenate(([1.0], mat[j + 1:, j])).astype(a.dtype)
            block = mat[j:, j + 1:]
            block -= taus[b, j] * np.outer(v, v @ block)
    return (_tg.from_numpy(flat.reshape(a.shape)),
            _tg.from_numpy(taus.reshape(a.shape[:-2] + (k,))))


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of H_1 H_2 ... H_k for the reflectors stored below the diagonal of
    ``A`` (..., m, n) with scalars ``tau`` (..., k); differentiable in both (built from
    differentiable ops, one rank-one update per reflector)."""
    m, n = A.shape[-2], A.shape[-1]
    below = A.tril(-1) + _tg.eye(m, n, dtype=A.dtype)        # unit leading entries
    Q = _tg.eye(m, n, dtype=A.dtype).expand(*A.shape[:-2], m, n)
    # Apply the reflectors from the last to the first: Q <- H_i Q.
    for i in reversed(range(tau.shape[-1])):
        v = below[..., :, i:i + 1]
        Q = Q - tau[..., i:i + 1].unsqueeze(-1) * (v @ (v.transpose(-1, -2) @ Q))
    return Q
