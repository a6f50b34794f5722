"""torch.linalg's LU family (lu_factor, lu_factor_ex, lu, lu_solve), the `_ex` variants that
report failures in an `info` tensor instead of raising (inv_ex, solve_ex, cholesky_ex), and the
small composites (vander, tensorinv, tensorsolve, matmul, diagonal).

Each is built on the differentiable pieces tapegrad already has (the packed LU factorisation of
torch.lu, triangular solves, inv, solve, cholesky), so gradients and gradients of gradients
follow their rules.  `info` is LAPACK's: 0 on success, else the 1-based index of the first
zero pivot (LU) or of the first leading minor that is not positive-definite (Cholesky).  Where
a factorisation fails, PyTorch returns LAPACK's partial results, whose values nothing
specifies; tapegrad's are computed the same way where LAPACK's unblocked algorithm defines them
(a zero pivot divides, giving inf/nan; Cholesky stops at the failing minor, keeping its
diagonal value) and are not differentiable.
"""
from __future__ import annotations as _annotations

import math

import numpy as np

from . import _core
from ._extra_ops import _wrap
from ._more_math import (_FMA_WIDE, _LUFactor, _lu_factor_values, _permutation, _zero_pivot_info,
                         lu_unpack)

_FACTOR_HINT = ("If you still want to perform the factorization, consider calling "
                "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def _return(name, values):
    return getattr(_core.return_types, name)(values)


def _check_lu_input(A, name: str, pivot: bool) -> None:
    from .linalg import _as_tensor, _refuse_half
    _as_tensor(A, name.removeprefix("torch.").replace(".", "_"))
    if A.dim() < 2:
        raise RuntimeError(f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got "
                           f"size: {list(A.shape)} instead")
    if not A.dtype.is_floating_point and not A.dtype.is_complex:
        raise NotImplementedError(f'"lu_cpu" not implemented for '
                                  f"'{_core.scalar_type_name_of(A._array.dtype)}'")
    _refuse_half(A, name)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


def _factor(A, name: str, pivot: bool):
    _check_lu_input(A, name, pivot)
    lu_values, pivots = _lu_factor_values(A._array)
    info = _zero_pivot_info(lu_values).reshape(tuple(A.shape[:-2]))
    return _LUFactor.apply(A, lu_values, pivots), _wrap(pivots), info


def _raise_zero_pivot(info: np.ndarray, name: str) -> None:
    flat = info.reshape(-1)
    for index, value in enumerate(flat):
        if value:
            where = f"(Batch element {index}): " if info.ndim else ""
            raise RuntimeError(f"{name}: {where}U[{value},{value}] is zero and using it on "
                               f"lu_solve would result in a division by zero. {_FACTOR_HINT}")


def lu_factor(A, *, pivot: bool = True):
    """(LU, pivots): A = P L U packed as LAPACK's getrf (L below the diagonal, unit diagonal
    implied, U on and above; 1-based int32 pivots).  A zero pivot raises RuntimeError (use
    lu_factor_ex to get it in `info` instead)."""
    _core.check_bool("linalg_lu_factor", "pivot", pivot)
    LU, pivots, info = _factor(A, "torch.linalg.lu_factor", pivot)
    _raise_zero_pivot(info, "torch.linalg.lu_factor")
    return _return("linalg_lu_factor", (LU, pivots))


def lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False):
    """(LU, pivots, info): lu_factor without raising on a zero pivot unless `check_errors`."""
    _core.check_bool("linalg_lu_factor_ex", "pivot", pivot)
    _core.check_bool("linalg_lu_factor_ex", "check_errors", check_errors)
    LU, pivots, info = _factor(A, "torch.linalg.lu_factor_ex", pivot)
    if check_errors:
        _raise_zero_pivot(info, "torch.linalg.lu_factor_ex")
    return _return("linalg_lu_factor_ex", (LU, pivots, _wrap(info)))


def lu(A, *, pivot: bool = True):
    """(P, L, U) with A = P L U: L unit lower trapezoidal, U upper trapezoidal, P a
    permutation matrix (differentiable in A through the packed factorisation)."""
    _core.check_bool("linalg_lu", "pivot", pivot)
    LU, pivots, _ = _factor(A, "torch.linalg.lu", pivot)
    P, L, U = lu_unpack(LU, pivots)
    return _return("linalg_lu", (P, L, U))


def check_lu_and_b_dtypes(LU, B) -> None:
    """PyTorch's refusal (its first check) of an LU factor and a right-hand side of different
    dtypes, which the triangular solves would otherwise have promoted silently."""
    if LU.dtype != B.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but "
                           f"found LU of type {_core.scalar_type_name_of(LU._array.dtype)} and B "
                           f"of type {_core.scalar_type_name_of(B._array.dtype)} instead")


def lu_solve(LU, pivots, B, *, left: bool = True, adjoint: bool = False):
    """The solution X of A X = B (or X A = B with left=False; A^H instead of A with
    adjoint=True) from A's (LU, pivots) as lu_factor returns them."""
    _core.check_bool("linalg_lu_solve", "left", left)
    _core.check_bool("linalg_lu_solve", "adjoint", adjoint)
    from ._more_math import _check_pivots
    check_lu_and_b_dtypes(LU, B)
    if B.dim() < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 "
                           "dimensions.")
    _check_pivots(pivots, "linalg.lu_solve")
    n = LU.shape[-1]
    rows = B.shape[-2] if left else B.shape[-1]
    if rows != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{equation} ({LU.shape[-2]}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    from .linalg import _refuse_half
    _refuse_half(LU, "linalg.lu_solve")
    # (one node in PyTorch's graph, whatever the triangular solves and row moves behind it)
    return _core._name_grad_fn(_lu_solved(LU, pivots, B, left, adjoint),
                               "LinalgLuSolveBackward0")


def _lu_solved(LU, pivots, B, left, adjoint):
    """X of op(A) X = B (X op(A) = B when not left) from lu_factor's (LU, pivots)."""
    from .linalg import solve_triangular
    n = LU.shape[-1]
    if not left:
        # X A = B  <=>  A^H X^H = B^H.
        return _lu_solved(LU, pivots, B.mH, True, not adjoint).mH
    perm = _permutation(pivots._array, n)
    from .creation import _broadcast_shapes     # (PyTorch's broadcasting error, B as tensor a)
    batch = _broadcast_shapes(tuple(B.shape[:-2]), tuple(LU.shape[:-2]))
    batch = np.broadcast_shapes(perm.shape[:-1], batch)
    B = B.expand(*batch, *B.shape[-2:])
    index = _wrap(np.broadcast_to(perm[..., None], batch + (n, B.shape[-1])).astype(np.int64))
    if not adjoint:
        # A = P L U: X = U^-1 L^-1 P^T B, with P^T B gathering B's rows in pivot order.
        y = solve_triangular(LU, B.gather(-2, index), upper=False, unitriangular=True)
        return solve_triangular(LU, y, upper=True)
    # A^H = U^H L^H P^T: X = P L^-H U^-H B, P scattering the rows back.
    y = solve_triangular(LU.mH, B, upper=False)
    z = solve_triangular(LU.mH, y, upper=True, unitriangular=True)
    return z.scatter(-2, index, z)


# -- the _ex variants ----------------------------------------------------------------------------

def _info_of_lu(A) -> np.ndarray:
    return _zero_pivot_info(_lu_factor_values(A._array)[0]).reshape(tuple(A.shape[:-2]))


def _singular_lu_solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A^-1 B by partial-pivoting LU and substitution as LAPACK's getrs, carried on through a
    zero pivot (IEEE division: inf and nan where PyTorch's LAPACK gives them); values only."""
    return _lu_substitute(*_lu_factor_values(a), b)


def _lu_substitute(lu_values: np.ndarray, pivots: np.ndarray, b: np.ndarray,
                   adjoint: bool = False) -> np.ndarray:
    """A^-1 B from A's packed LU and 1-based pivots (_lu_factor_values), by getrs' forward and
    back substitution in the factors' precision.  Column by column as MKL's trsm rounds it:
    each update a fused multiply-add (one rounding, which the wider dtype gives a real matrix)
    and each pivot applied as its reciprocal's product, which matched PyTorch's float32
    inverses bit for bit in most entries (2x2: all; a row-by-row dot product: three quarters)."""
    n = lu_values.shape[-1]
    perm = _permutation(pivots, n)
    dtype = lu_values.dtype
    wide = _FMA_WIDE.get(dtype) or dtype
    # adjoint: A^H = U^H L^H P^T, solved with the conjugate transposed factors, P last
    factors = np.conj(np.swapaxes(lu_values, -1, -2)) if adjoint else lu_values
    x = (np.array(b, dtype=dtype) if adjoint
         else np.take_along_axis(b, perm[..., None], axis=-2).astype(dtype))

    def update(rows, j):        # x[rows] -= factors[rows, j] x[j], one rounding
        x[..., rows, :] = (x[..., rows, :].astype(wide) - factors[..., rows, j, None]
                           .astype(wide) * x[..., j, None, :].astype(wide)).astype(dtype)

    def divide(j):
        x[..., j, :] *= 1 / factors[..., j, j, None]

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if not adjoint:
            for j in range(n):                     # L y = P^T b, unit diagonal
                update(slice(j + 1, None), j)
            for j in reversed(range(n)):           # U x = y
                divide(j)
                update(slice(None, j), j)
            return x
        for j in range(n):                         # U^H y = b
            divide(j)
            update(slice(j + 1, None), j)
        for j in reversed(range(n)):               # L^H z = y, unit diagonal
            update(slice(None, j), j)
    out = np.empty_like(x)
    np.put_along_axis(out, np.broadcast_to(perm[..., None], x.shape), x, axis=-2)
    return out


def inv_ex(A, *, check_errors: bool = False):
    """(inverse, info): linalg.inv that reports a singular matrix in `info` (its first zero
    pivot) instead of raising, unless `check_errors`."""
    _core.check_bool("linalg_inv_ex", "check_errors", check_errors)
    from . import linalg
    from .linalg import _as_tensor, _check_float, _check_square
    _as_tensor(A, "linalg_inv_ex")
    _check_square(A, "linalg.inv")
    _check_float(A, "linalg.inv")
    info = _info_of_lu(A)
    if not info.any():
        return _return("linalg_inv_ex", (linalg.inv(A), _wrap(info)))
    if check_errors:
        linalg._raise_singular_inv(A._array, "linalg.inv_ex")
    identity = np.broadcast_to(np.eye(A.shape[-1], dtype=A._array.dtype), A.shape)
    inverse = _wrap(_singular_lu_solve(A._array, identity))
    return _return("linalg_inv_ex", (inverse, _wrap(info)))


def solve_ex(A, B, *, left: bool = True, check_errors: bool = False):
    """(result, info): linalg.solve that reports a singular A in `info` instead of raising,
    unless `check_errors`."""
    _core.check_bool("linalg_solve_ex", "left", left)
    _core.check_bool("linalg_solve_ex", "check_errors", check_errors)
    from . import linalg
    vector = linalg._check_solve_operands(A, B, left, "linalg_solve_ex")
    info = _info_of_lu(A)
    if not info.any():
        return _return("linalg_solve_ex", (linalg.solve(A, B, left=left), _wrap(info)))
    if check_errors:
        raise linalg.LinAlgError("torch.linalg.solve_ex: The solver failed because the input "
                                 "matrix is singular.")
    a, b = A._array, B._array[..., None] if vector else B._array
    if not left:        # X A = B  <=>  A^T X^T = B^T (real or complex: the plain transpose)
        a, b = np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    X = _singular_lu_solve(np.broadcast_to(a, batch + a.shape[-2:]),
                           np.broadcast_to(b, batch + b.shape[-2:]))
    if not left:
        X = np.swapaxes(X, -1, -2)
    X = _wrap(X[..., 0] if vector else X)
    return _return("linalg_solve_ex", (X, _wrap(info)))


def _failed_cholesky(matrix: np.ndarray):
    """LAPACK's unblocked Cholesky of one matrix up to its first non-positive pivot: (the
    lower factor computed so far, the failing pivot's value on its diagonal and the input's
    lower triangle beyond it; info)."""
    a = np.tril(matrix).astype(matrix.dtype, copy=True)
    n = a.shape[0]
    for j in range(n):
        pivot = a[j, j] - np.vdot(a[j, :j], a[j, :j])
        if not (pivot.real > 0):
            a[j, j] = pivot
            return a, j + 1
        a[j, j] = math.sqrt(pivot.real)
        a[j + 1:, j] = (a[j + 1:, j] - a[j + 1:, :j] @ np.conj(a[j, :j])) / a[j, j]
    return a, 0


def cholesky_ex(input, *, upper: bool = False, check_errors: bool = False):
    """(L, info): linalg.cholesky that reports a matrix that is not positive-definite in `info`
    (the order of its first such leading minor) instead of raising, unless `check_errors`."""
    _core.check_bool("linalg_cholesky_ex", "upper", upper)
    _core.check_bool("linalg_cholesky_ex", "check_errors", check_errors)
    from . import linalg
    from .linalg import _as_tensor, _check_float, _check_square, _lapack_cholesky
    A = _as_tensor(input, "linalg_cholesky_ex", "input")
    _check_square(A, "linalg.cholesky_ex")
    _check_float(A, "linalg.cholesky_ex")
    # The upper factor reads A's upper triangle: the lower triangle of A^H (as linalg._cholesky).
    arr = np.conj(np.swapaxes(A._array, -1, -2)) if upper else A._array
    lower = np.tril(arr)
    hermitian = lower + np.conj(np.swapaxes(np.tril(arr, -1), -1, -2))
    # (the batch size spelled out: -1 is ambiguous for 0 x 0 matrices)
    flat = hermitian.reshape((math.prod(arr.shape[:-2]),) + arr.shape[-2:])
    infos = np.zeros(flat.shape[0], dtype=np.int32)
    for index, matrix in enumerate(flat):
        try:
            _lapack_cholesky(matrix)
        except np.linalg.LinAlgError:
            infos[index] = _failed_cholesky(matrix)[1]
    info = infos.reshape(arr.shape[:-2])
    if not infos.any():
        return _return("linalg_cholesky_ex",
                       (linalg._cholesky(A, upper, "linalg.cholesky_ex"), _wrap(info)))
    if check_errors:
        linalg._cholesky(A, upper, "linalg.cholesky_ex")     # raises PyTorch's LinAlgError
    factors = np.empty_like(flat)
    for index, matrix in enumerate(flat):
        factors[index] = (_failed_cholesky(matrix)[0] if infos[index]
                          else _lapack_cholesky(matrix))
    L = _wrap(factors.reshape(arr.shape))
    return _return("linalg_cholesky_ex", (L.mH.resolve_conj() if upper else L, _wrap(info)))


# -- composites ----------------------------------------------------------------------------------

def vander(x, *, N=None):
    """The Vandermonde matrix of the last dimension of x: columns x^0, x^1, ..., x^(N-1)
    (N defaults to x's last size)."""
    from . import cat
    from .linalg import _as_tensor
    _as_tensor(x, "linalg_vander", "x")
    if x._array.dtype in (np.bool_, np.float16):
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, "
                           f"but got {_core.scalar_type_name_of(x._array.dtype)}")
    if x.dim() == 0:
        x = x.reshape(1)    # a scalar is a one-element vector (PyTorch's result is 1 x N)
    n = x.shape[-1]
    N = n if N is None else N
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    x = x.unsqueeze(-1)
    powers = x.expand(*x.shape[:-1], N - 1).cumprod(-1)
    return cat([x.new_ones(x.shape), powers], -1)


def tensorinv(input, ind: int = 2):
    """The inverse of A seen as a linear map from its first `ind` dims to the rest: the result
    has shape A.shape[ind:] + A.shape[:ind]."""
    from . import linalg
    A = linalg._as_tensor(input, "linalg_tensorinv", "input")
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return linalg.inv(A.reshape(rows, cols)).reshape(*A.shape[ind:], *A.shape[:ind])


def tensorsolve(input, other, dims=None):
    """The X with tensordot(A, X, X.ndim) = B; `dims` first moves those dims of A to the end."""
    from . import linalg
    A = linalg._as_tensor(input, "linalg_tensorsolve", "input")
    B = linalg._as_tensor(other, "linalg_tensorsolve", "other", 2)
    if dims is not None:
        dims = [d % A.dim() for d in dims]
        order = [d for d in range(A.dim()) if d not in dims] + list(dims)
        A = A.permute(*order)
    result_shape = tuple(A.shape[B.dim():])
    rows, cols = B.numel(), math.prod(result_shape)
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) "
                           f"== prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    return linalg.solve(A.reshape(rows, cols), B.reshape(rows)).reshape(result_shape)


def matmul(input, other):
    """torch.matmul under torch.linalg's name."""
    from . import matmul as plain
    return plain(input, other)


def diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """torch.diagonal over A's last two dimensions by default."""
    from .linalg import _as_tensor
    _as_tensor(A, "linalg_diagonal")
    return A.diagonal(offset, dim1, dim2)
