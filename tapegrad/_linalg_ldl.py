"""torch.linalg's LDL family: ldl_factor, ldl_factor_ex and ldl_solve.

PyTorch runs LAPACK's sytrf/hetrf (lower triangle) and sytrs/hetrs.  numpy has neither, so the
factorisation here is the Bunch-Kaufman diagonal pivoting of LAPACK's unblocked dsytf2/zhetf2/
zsytf2, written from their documented pivot rule and storage format:

* the result LD holds, in its lower triangle, D's diagonal, D's 2x2 blocks' subdiagonal entry,
  and the multipliers of the unit lower factors L(k) below them; its strict upper triangle is 0.
* pivots (1-based, int32): ipiv[k] = p > 0 means a 1x1 block at k with rows/columns k and p-1
  interchanged; ipiv[k] = ipiv[k+1] = -p < 0 means a 2x2 block at k, k+1 with rows/columns
  k+1 and p-1 interchanged.  The interchanges act on the trailing matrix only, so A = U D U^T
  with U = P(0) L(0) P(1) L(1) ... (U D U^H for hermitian=True).
* info: 0, or the 1-based index of the first exactly zero column (D(k, k) = 0 and nothing below
  it): the factorisation goes on past it, as LAPACK's does, and D is singular.

Only the lower triangle of A is read (for hermitian=True, the real part of its diagonal).  A
matrix the blocked MKL routine factors with a different pivot choice (rounding near a tie of the
rule) gives another, equally valid, factorisation.  PyTorch has no derivative for either
function: their results require grad and differentiating raises, as there.
"""
from __future__ import annotations

import math

import numpy as np

from . import _core

# Bunch and Kaufman's constant: bounds the growth of the entries of the factors.
_ALPHA = (1.0 + math.sqrt(17.0)) / 8.0


def _magnitude(values: np.ndarray) -> np.ndarray:
    """The size LAPACK compares pivots by: |x| for real x, |re| + |im| (its cabs1) for complex."""
    if values.dtype.kind == "c":
        return np.abs(values.real) + np.abs(values.imag)
    return np.abs(values)


def _bunch_kaufman(a: np.ndarray, hermitian: bool):
    """(LD, 1-based pivots, info) of one n x n matrix whose lower triangle holds A."""
    n = a.shape[0]
    conj = hermitian and a.dtype.kind == "c"
    # W: the trailing matrix, kept whole (both triangles) so an interchange is a swap of rows
    # and columns; each update is mirrored from the lower triangle, which LAPACK reads.
    lower = np.tril(a)
    if conj:
        lower[np.diag_indices(n)] = lower.diagonal().real
    W = lower + (np.tril(a, -1).conj() if conj else np.tril(a, -1)).T
    LD = np.zeros_like(a)
    ipiv = np.zeros(n, dtype=np.int32)
    info = 0

    def diag_size(x):       # |A(k, k)|: the real part only for a Hermitian matrix
        return abs(x.real) if conj else _magnitude(np.asarray(x))[()]

    def mirror(block):      # the whole matrix from its lower triangle (a real diagonal if Hermitian)
        low = np.tril(block)
        if conj:
            low[np.diag_indices(low.shape[0])] = low.diagonal().real
        return low + (np.tril(block, -1).conj() if conj else np.tril(block, -1)).T

    k = 0
    while k < n:
        m = n - k                       # W is the (m x m) trailing matrix A[k:, k:]
        step = 1
        absakk = diag_size(W[0, 0])
        if m > 1:
            column = _magnitude(W[1:, 0])
            imax = 1 + int(np.argmax(column))   # (the first of equal maxima, as i?amax)
            colmax = column[imax - 1]
        else:
            imax, colmax = 0, 0.0
        if max(absakk, colmax) == 0 or math.isnan(absakk):
            # a zero column: nothing to eliminate; D(k, k) stays (0), and LAPACK goes on
            if info == 0:
                info = k + 1
            pivot = 0
            LD[k:, k] = W[:, 0]
            if conj:
                LD[k, k] = LD[k, k].real
            ipiv[k] = k + 1
            W = W[1:, 1:]
            k += 1
            continue
        if absakk >= _ALPHA * colmax:
            pivot = 0
        else:
            # the largest off-diagonal entry of row/column imax of the trailing matrix
            rowmax = _magnitude(W[imax, :imax]).max()
            if imax < m - 1:
                rowmax = max(rowmax, _magnitude(W[imax + 1:, imax]).max())
            if absakk >= _ALPHA * colmax * (colmax / rowmax):
                pivot = 0
            elif diag_size(W[imax, imax]) >= _ALPHA * rowmax:
                pivot = imax
            else:
                pivot, step = imax, 2
        kk = step - 1                   # the row/column the pivot row is moved to
        if pivot != kk:
            order = np.arange(m)
            order[[kk, pivot]] = [pivot, kk]
            W = W[np.ix_(order, order)]
        if step == 1:
            d = W[0, 0].real if conj else W[0, 0]
            r1 = 1.0 / d
            x = W[1:, 0]
            trailing = W[1:, 1:] + np.outer(x, (-r1 * x).conj() if conj else -r1 * x)
            LD[k, k] = d
            LD[k + 1:, k] = r1 * x
            W = mirror(trailing)
            ipiv[k] = k + pivot + 1
        else:
            d21 = W[1, 0]
            if conj:
                d = abs(d21)
                d11, d22 = W[1, 1].real / d, W[0, 0].real / d
                t = 1.0 / (d11 * d22 - 1.0)
                d21 = d21 / d
                d = t / d
                x, y = W[2:, 0], W[2:, 1]
                wk = d * (d11 * x - d21 * y)
                wkp1 = d * (d22 * y - np.conj(d21) * x)
                trailing = W[2:, 2:] - np.outer(x, wk.conj()) - np.outer(y, wkp1.conj())
                LD[k, k], LD[k + 1, k + 1] = W[0, 0].real, W[1, 1].real
            else:
                d11, d22 = W[1, 1] / d21, W[0, 0] / d21
                t = 1.0 / (d11 * d22 - 1.0)
                d21 = t / d21
                x, y = W[2:, 0], W[2:, 1]
                wk = d21 * (d11 * x - y)
                wkp1 = d21 * (d22 * y - x)
                trailing = W[2:, 2:] - np.outer(x, wk) - np.outer(y, wkp1)
                LD[k, k], LD[k + 1, k + 1] = W[0, 0], W[1, 1]
            LD[k + 1, k] = W[1, 0]
            LD[k + 2:, k], LD[k + 2:, k + 1] = wk, wkp1
            W = mirror(trailing)
            ipiv[k] = ipiv[k + 1] = -(k + pivot + 1)
        k += step
    return LD, ipiv, info


def _factor_input(A, name: str, op: str):
    from .linalg import _as_tensor, _check_float, _check_square
    _as_tensor(A, op)
    _check_square(A, name)
    _check_float(A, name)


def _factorize(A, hermitian: bool, op: str):
    """(LD, pivots, info) tensors of A, LD in LAPACK's layout; LD requires grad when A does,
    and differentiating raises, as PyTorch's (which has no derivative for it)."""
    from ._extra_ops import _wrap
    from ._more_math import without_derivative
    from .linalg import _lapack_layout
    # (ldl_factor runs ldl_factor_ex, whose name PyTorch's checks use)
    _factor_input(A, "torch.linalg.ldl_factor_ex", op)
    arr = A._array
    n = arr.shape[-1]
    batch = arr.shape[:-2]
    count = math.prod(batch)        # (not -1: an empty batch or matrix leaves it unknown)
    flat = arr.reshape((count, n, n))
    LD = np.zeros(flat.shape, dtype=arr.dtype)
    pivots = np.zeros(flat.shape[:2], dtype=np.int32)
    info = np.zeros(flat.shape[0], dtype=np.int32)
    for i, matrix in enumerate(flat):
        LD[i], pivots[i], info[i] = _bunch_kaufman(matrix, hermitian)
    LD = without_derivative((A,), _core.wrap_array(_lapack_layout(LD.reshape(arr.shape)), False),
                            "derivative for aten::linalg_ldl_factor_ex is not implemented",
                            RuntimeError)
    return LD, _wrap(pivots.reshape(batch + (n,))), _wrap(info.reshape(batch))


def _raise_info(info: np.ndarray, name: str) -> None:
    # PyTorch 2.13 has no message for sytrf's positive info and fails an internal assert
    # (BatchLinearAlgebra.cpp's _linalg_check_errors): the same RuntimeError and phrase here.
    bad = info.reshape(-1)
    if bad.size and bad.max() > 0:
        raise RuntimeError(f"{name}: Unknown error code: {int(bad[bad > 0][0])}.")


def ldl_factor_ex(A, *, hermitian: bool = False, check_errors: bool = False):
    """The Bunch-Kaufman LDL^T (LDL^H) factorisation of the lower triangle of A, with LAPACK's
    info: (LD, pivots, info)."""
    from .linalg import _return_type
    LD, pivots, info = _factorize(A, hermitian, "linalg_ldl_factor_ex")
    if check_errors:
        _raise_info(info._array, "torch.linalg.ldl_factor_ex")
    return _return_type("linalg_ldl_factor_ex")((LD, pivots, info))


def ldl_factor(A, *, hermitian: bool = False):
    """ldl_factor_ex's (LD, pivots); a singular A raises (as PyTorch's does)."""
    from .linalg import _return_type
    LD, pivots, info = _factorize(A, hermitian, "linalg_ldl_factor")
    _raise_info(info._array, "torch.linalg.ldl_factor")
    return _return_type("linalg_ldl_factor")((LD, pivots))


def _solve_one(LD: np.ndarray, ipiv: np.ndarray, B: np.ndarray, conj: bool) -> np.ndarray:
    """X with A X = B for the A whose factorisation is (LD, ipiv): LAPACK's sytrs/hetrs order
    (U^-1 by the interchanges and L(k)'s, then D^-1, then U^-T)."""
    n = LD.shape[0]
    B = B.copy()
    flip = np.conj if conj else (lambda v: v)

    def swap(i, j):
        if i != j:
            B[[i, j]] = B[[j, i]]

    k = 0
    while k < n:
        if ipiv[k] > 0:
            swap(k, ipiv[k] - 1)
            B[k + 1:] -= np.outer(LD[k + 1:, k], B[k])
            B[k] /= LD[k, k].real if conj else LD[k, k]
            k += 1
            continue
        if k + 1 >= n or ipiv[k + 1] != ipiv[k]:
            raise RuntimeError("torch.linalg.ldl_solve: the pivots do not pair the rows of a "
                               "2x2 block. Did you properly pass the result of ldl_factor?")
        swap(k + 1, -ipiv[k] - 1)
        B[k + 2:] -= np.outer(LD[k + 2:, k], B[k]) + np.outer(LD[k + 2:, k + 1], B[k + 1])
        # D's 2x2 block [[a, c'], [c, b]] (c' = conj(c) when Hermitian) solved as sytrs does
        c = LD[k + 1, k]
        a, b = LD[k, k] / flip(c), LD[k + 1, k + 1] / c
        denom = a * b - 1.0
        top, bottom = B[k] / flip(c), B[k + 1] / c
        B[k] = (b * top - bottom) / denom
        B[k + 1] = (a * bottom - top) / denom
        k += 2
    k = n - 1
    while k >= 0:
        if ipiv[k] > 0:
            B[k] -= flip(LD[k + 1:, k]) @ B[k + 1:]
            swap(k, ipiv[k] - 1)
            k -= 1
        else:
            B[k] -= flip(LD[k + 1:, k]) @ B[k + 1:]
            B[k - 1] -= flip(LD[k + 1:, k - 1]) @ B[k + 1:]
            swap(k, -ipiv[k] - 1)
            k -= 2
    return B


def ldl_solve(LD, pivots, B, *, hermitian: bool = False):
    """The solution X of A X = B from ldl_factor's (LD, pivots) of A; B's batch broadcasts
    against LD's."""
    from . import from_numpy
    from ._more_math import without_derivative
    from .linalg import _as_tensor, _check_float, _check_square, _lapack_layout
    name = "torch.linalg.ldl_solve"
    _as_tensor(LD, "linalg_ldl_solve", "LD")
    _as_tensor(pivots, "linalg_ldl_solve", "pivots", 2)
    _as_tensor(B, "linalg_ldl_solve", "B", 3)
    _check_square(LD, name)
    if B.dim() < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(B.dim(), 1)}, {max(B.dim(), 1) - 1}], but got -2)")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"{name}: Expected LD.shape[:-1] and pivots.shape to be the same, but "
                           f"got pivots with shape {list(pivots.shape)} instead")
    if pivots._array.dtype.kind not in "iu":
        raise RuntimeError(f"{name}: Expected pivots to be integers. Got "
                           f"{_core.scalar_type_name_of(pivots._array.dtype)}")
    if LD.dtype != B.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_core.scalar_type_name_of(B._array.dtype)} and A of type "
                           f"{_core.scalar_type_name_of(LD._array.dtype)} instead.")
    _check_float(LD, name)
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is {n} by {n} "
                           f"but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    piv = pivots._array.astype(np.int64)
    if piv.size and np.abs(piv).min() < 1:
        raise RuntimeError("Pivots given to ldl_solve must all satisfy |pivot| >= 1. Did you "
                           "properly pass the result of ldl_factor?")
    if piv.size and np.abs(piv).max() > n:
        raise RuntimeError("Pivots given to ldl_solve must all satisfy |pivot| <= LD.size(-2). "
                           "Did you properly pass the result of ldl_factor?")
    batch = np.broadcast_shapes(tuple(LD.shape[:-2]), tuple(B.shape[:-2]))
    count = math.prod(batch)
    ld = np.broadcast_to(LD._array, batch + (n, n)).reshape((count, n, n))
    pv = np.broadcast_to(piv, batch + (n,)).reshape((count, n))
    b = np.broadcast_to(B._array, batch + tuple(B.shape[-2:]))
    X = np.empty(b.shape, dtype=b.dtype)
    flat_b, flat_x = b.reshape((count,) + b.shape[-2:]), X.reshape((count,) + b.shape[-2:])
    conj = hermitian and LD.is_complex()
    for i in range(flat_b.shape[0]):
        flat_x[i] = _solve_one(ld[i], pv[i], flat_b[i], conj)
    result = _core.wrap_array(_lapack_layout(X), False)
    return without_derivative((LD, B), result,
                              "derivative for aten::linalg_ldl_solve is not implemented",
                              RuntimeError)
