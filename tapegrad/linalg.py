"""tapegrad.linalg: PyTorch's torch.linalg over numpy.linalg.

Forwards run in numpy on the (batched) arrays; each factorisation is an autograd _Function whose
backward is written with tapegrad's own differentiable ops, so gradients of gradients
(create_graph=True) go through the same rules.  Norms are composites of existing reductions.
Errors mirror PyTorch's: shape and dtype problems are RuntimeError, numerical failures (singular,
not positive-definite) are LinAlgError, a RuntimeError subclass.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import math as _math

import numpy as _np

from . import _core
from ._half_precision import narrow_half as _narrow_half, widen_half as _widen_half
from ._extra_functions import _torch_grad_fn_name
from .autograd.function import Function as _Function
from .grad_mode import is_grad_enabled as _is_grad_enabled, no_grad as _no_grad

__all__ = ["LinAlgError", "vector_norm", "matrix_norm", "norm", "inv", "det", "slogdet",
           "solve", "cholesky", "eigh", "eigvalsh", "svd", "svdvals", "matrix_rank", "pinv",
           "matrix_power", "multi_dot", "cross", "qr", "lstsq", "cond", "vecdot", "solve_triangular",
           "householder_product", "eig", "eigvals", "matrix_exp"]


class LinAlgError(RuntimeError):
    """A numerical failure of a linear-algebra routine (singular or not positive-definite
    input), as torch.linalg.LinAlgError."""


# PyTorch's class is torch._C._LinAlgError: a traceback, and type(error).__name__, name it so.
LinAlgError.__name__ = LinAlgError.__qualname__ = "_LinAlgError"
_LinAlgError = LinAlgError      # (where pickle looks the class up by that name)


# ---------------------------------------------------------------------------------------------
# argument checks (PyTorch's wording)

def _as_tensor(x, name, arg="A", position=1):
    from .tensor import Tensor
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not "
                        f"{_type_name(x)}")
    return x


def _check_float(A, name, what="input"):
    if A._array.dtype.kind not in "fc":
        _refuse_integer_by_kernel(A, name)
        dtype = _core.scalar_type_name_of(A._array.dtype)
        if name in _INTEGER_REFUSED_IN_OTHER_WORDS:
            raise RuntimeError(_INTEGER_REFUSED_IN_OTHER_WORDS[name].format(dtype))
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as {what}. Got "
                           f"{dtype}")
    _refuse_half(A, name)


# Functions whose integer and bool inputs PyTorch refuses in the words of the function they
# go through (checked against torch 2.13), keyed by the name the function's checks use.
_INTEGER_REFUSED_IN_OTHER_WORDS = {
    "linalg.svdvals": "linalg.svd: Expected a floating point or complex tensor as input. Got {}",
    "linalg.cond": "linalg.svd: Expected a floating point or complex tensor as input. Got {}",
    "linalg.cholesky_ex": "linalg.cholesky: Expected a floating point or complex tensor as "
                          "input. Got {}",
    "torch.linalg.matrix_rank": "This function doesn't handle types other than float and double",
    "torch.linalg.lstsq": "This function doesn't handle types other than float and double",
    "linalg.eig": "Unknown Complex ScalarType for {}",
    "linalg.eigvals": "Unknown Complex ScalarType for {}",
}


# The functions whose integer and bool inputs reach PyTorch's CPU kernel unchecked, which then
# refuses them by its name (NotImplementedError); the others check first (RuntimeError).
_INTEGER_REFUSED_BY_KERNEL = ("cholesky", "cholesky_solve", "cholesky_inverse", "geqrf",
                              "torch.linalg.householder_product")


def _refuse_integer_by_kernel(A, name):
    if name in _INTEGER_REFUSED_BY_KERNEL:
        raise NotImplementedError(f'"{_HALF_REFUSED_BY_KERNEL[name]}" not implemented for '
                                  f"'{_core.scalar_type_name_of(A._array.dtype)}'")


# PyTorch's CPU linear algebra has no float16 kernels, and each function refuses float16 in its
# own words (checked against torch 2.13), where numpy's LAPACK raised "array type float16 is
# unsupported in linalg" (a TypeError).  Keyed by the name the function's checks use.
_HALF_REFUSED_BY_CHECK = {
    "linalg.inv": "linalg.inv: Low precision dtypes not supported. Got Half",
    "linalg.slogdet": "linalg.slogdet: Low precision dtypes not supported. Got Half",
    "torch.linalg.matrix_rank": "This function doesn't handle types other than float and double",
    "torch.linalg.lstsq": "This function doesn't handle types other than float and double",
    "logdet": "logdet: Low precision dtypes not supported. Got Half",
    # (the orders computed from singular values only: 'fro', 1 and inf take float16)
    "linalg.matrix_norm(svd)": "linalg.matrix_norm: Low precision dtypes not supported. Got Half",
}
_HALF_REFUSED_BY_KERNEL = {       # the CPU kernel PyTorch's dispatch names
    "linalg.det": "lu_cpu", "linalg.solve": "lu_cpu", "torch.linalg.lu_factor": "lu_cpu",
    "torch.linalg.lu_factor_ex": "lu_cpu", "torch.linalg.lu": "lu_cpu",
    "linalg.eig": "linalg_eig_out_cpu", "linalg.eigvals": "linalg_eig_out_cpu",
    "linalg.eigh": "linalg_eigh_cpu", "linalg.eigvalsh": "linalg_eigh_cpu",
    "linalg.svd": "linalg_svd_cpu", "linalg.svdvals": "linalg_svd_cpu",
    "linalg.cond": "linalg_svd_cpu", "linalg.qr": "geqrf_cpu",
    "linalg.cholesky": "cholesky_cpu", "linalg.cholesky_ex": "cholesky_cpu",
    "linalg.solve_triangular": "triangular_solve_cpu",
    "torch.linalg.householder_product": "orgqr_cpu", "cholesky": "cholesky_cpu",
    "geqrf": "geqrf_cpu", "cholesky_solve": "cholesky_solve_cpu",
    "cholesky_inverse": "cholesky_inverse_out_cpu", "linalg.lu_solve": "linalg.lu_solve_cpu",
    "torch.linalg.ldl_factor_ex": "ldl_factor_kernel_cpu",
    "torch.linalg.ldl_solve": "ldl_solve_kernel_cpu",
}


# (those whose kernel PyTorch does not reach for an empty input: they return float16 results;
# solve, cholesky, eigh and svd do too, but their numpy calls here take no float16 yet)
_HALF_RUN_WHEN_EMPTY = frozenset((
    "linalg.det", "torch.linalg.lu_factor", "torch.linalg.lu_factor_ex", "torch.linalg.lu"))


def _refuse_half(A, name):
    """PyTorch's error for a float16 input of the linear algebra function `name`."""
    if A._array.dtype != _np.float16 or (A._array.size == 0 and name in _HALF_RUN_WHEN_EMPTY):
        return
    if name in _HALF_REFUSED_BY_CHECK:
        raise RuntimeError(_HALF_REFUSED_BY_CHECK[name])
    if name in _HALF_REFUSED_BY_KERNEL:
        raise NotImplementedError(f'"{_HALF_REFUSED_BY_KERNEL[name]}" not implemented for '
                                  "'Half'")


def _check_square(A, name, arg="A"):
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def _batch_prefix(batch_index, batched):
    return f"(Batch element {batch_index}): " if batched else ""


def _lu_first_zero_pivot(matrix):
    """The 1-based index of the first exactly-zero pivot of the partially pivoted LU (what
    LAPACK's getrf reports and PyTorch's message names), or 0 when there is none."""
    from ._more_math import _lu_factor_values
    from ._linalg_factor import _zero_pivot_info
    return int(_zero_pivot_info(_lu_factor_values(_np.asarray(matrix))[0]))


def _raise_singular_inv(arr, name):
    """Raise the LinAlgError PyTorch gives for a singular batch element of `arr`."""
    flat = arr.reshape((-1,) + arr.shape[-2:])
    for index, matrix in enumerate(flat):
        pivot = _lu_first_zero_pivot(matrix)
        if pivot:
            raise LinAlgError(
                f"{name}: {_batch_prefix(index, arr.ndim > 2)}The diagonal element {pivot} is "
                "zero, the inversion could not be completed because the input matrix is "
                "singular.")
    raise LinAlgError(f"{name}: The input matrix is singular.")


def _return_type(name):
    """tapegrad.return_types.<name> (printed as torch.return_types.<name>): the linalg result
    types are made at import (tapegrad/_linalg_aliases.py's RETURN_TYPES)."""
    return getattr(_core.return_types, name)


def _tensor(array, like, real=False, lapack=False):
    """array as a tensor of like's dtype (real: of its real counterpart, as the singular values
    and Hermitian eigenvalues of a complex matrix are); `lapack`: laid out as LAPACK returns it
    (_lapack_layout), for the factors and solutions PyTorch returns that way."""
    from . import from_numpy
    dtype = like._array.dtype
    if real and dtype.kind == "c":
        dtype = _np.empty(0, dtype).real.dtype
    if lapack:
        return from_numpy(_lapack_layout(array, dtype))
    # np.array, not ascontiguousarray: the latter turns a 0-d result (det of one matrix) 1-d.
    return from_numpy(_np.array(array, dtype=dtype, order="C"))


def _lapack_layout(array, dtype=None, rows=None) -> _np.ndarray:
    """A copy of a (..., m, n) array with each matrix column-major and the batch outside, row-major
    (strides (..., m * n, 1, m)): the layout of PyTorch's LAPACK-backed results (lu_factor's LU,
    inv, solve, cholesky, qr, svd's U and Vh, the eigenvectors).  A flat view() of such a result
    raises and its flatten() / reshape(-1) is a copy, so an in-place op on that copy leaves the
    result alone; a row-major result here made those a view, and the write went through (fuzz
    65013473)."""
    array = _np.asarray(array, dtype=dtype)
    if array.ndim < 2:
        return _np.array(array, order="C")
    m, n = array.shape[-2:]
    if rows is None or rows <= m:
        return _np.ascontiguousarray(_np.swapaxes(array, -1, -2)).swapaxes(-1, -2)
    # the first m rows of a (..., rows, n) buffer, as lstsq's solution of a tall system (LAPACK
    # solves in place in B's buffer of max(m, n) rows)
    buffer = _np.zeros(array.shape[:-2] + (n, rows), dtype=array.dtype)
    buffer[..., :m] = _np.swapaxes(array, -1, -2)
    return buffer.swapaxes(-1, -2)[..., :m, :]


def _adjoint(M):
    """The conjugate transpose of the matrices of M (the transpose when M is real): what the
    real formulas' transposes become for complex matrices (PyTorch's gradient convention)."""
    return M.mH if M.is_complex() else M.mT


def _conj(x):
    return x.conj() if x.is_complex() else x


# ---------------------------------------------------------------------------------------------
class _LapackLayout(_Function):
    """A composite's result (householder_product, ormqr, lstsq: built from recorded ops) copied
    into _lapack_layout, the layout PyTorch's LAPACK call gives it; the gradient passes through.
    The caller names the node after the op.  PyTorch's node of the op saves its result and
    some operands (`guard`): the node saves them too, only so that an in-place write to one of
    them before the backward raises as PyTorch's does (the composite's own records saved
    copies, so its gradient would silently use the values from before the write)."""

    @staticmethod
    def forward(ctx, x, rows=None, guard=()):
        out = _core.wrap_array(_lapack_layout(x.resolve_conj()._array, rows=rows), False)
        ctx.save_for_backward(out, *guard)
        return out

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors           # (the version check of the guarded tensors)
        return grad, None, None


def _in_lapack_layout(result, grad_fn_name, guard=()):
    """result laid out as PyTorch's LAPACK-backed op lays it out, its node named grad_fn_name;
    guard: the operands PyTorch's node saves (besides the result)."""
    return _core._name_grad_fn(_LapackLayout.apply(result, None, tuple(guard)), grad_fn_name)


# inverse, determinant, solve

def _spread_nan_as_getrs(X, a, b=None):
    """X = a^-1 b (b None: a^-1) with NaN spread as PyTorch's LAPACK (getrf, getrs) spreads
    it: a NaN anywhere in a matrix reaches every entry of its solution, a NaN in a column of b
    every entry of that column (each substitution step multiplies by every factor entry, zeros
    included).  numpy's OpenBLAS skips the zero entries of a right-hand side (0 * NaN is never
    formed), leaving entries finite that PyTorch gives as NaN -- a NaN kernel or covariance
    then reached the result only in part."""
    if not _np.isnan(a.sum() if b is None else a.sum() + b.sum()):    # (the common case)
        return X
    mask = _np.isnan(a).any(axis=(-2, -1))[..., None, None]
    if b is not None:
        mask = mask | _np.isnan(b).any(axis=-2, keepdims=True)
    if not mask.any():
        return X
    return _np.where(mask, complex(_math.nan, _math.nan) if _np.iscomplexobj(X) else _math.nan, X)


_SINGLE_PRECISION = (_np.dtype(_np.float32), _np.dtype(_np.complex64))
# Up to this order a single-precision system is solved in its own precision (a few ms); the
# LU's Python loop over columns grows as n^3 in numpy steps (n = 1000: 3 s, LAPACK 0.1 s), and
# the singular-in-exact-arithmetic matrices of notebooks are small.
_OWN_PRECISION_MAX_N = 64


def _getrf_getrs_solve(a, b, adjoint=False):
    """a^-1 b (equal batch shapes, non-empty) as PyTorch's LAPACK computes it (getrf, getrs),
    or None when its LU of a meets an exactly zero pivot (a singular a).
    - float32 and complex64 up to _OWN_PRECISION_MAX_N: by _lu_factor_values and
      _lu_substitute, in their own precision.  numpy's linalg solves them in double and rounds
      the result, so a matrix singular in exact arithmetic raised 'singular' where PyTorch's
      float32 LU keeps a pivot of rounding size and answers with huge entries (the inverse of [[1, 2, 3], [4, 5, 6],
      [7, 8, 9]]: entries of 5.6e6), and nearly singular systems got answers of double
      precision that PyTorch's float32 cannot give.
    - double precision: numpy's LAPACK, and the same LU when it reports a zero pivot: its
      OpenBLAS LU of [[1, 2, 3], [4, 5, 6], [7, 8, 9]] meets one where PyTorch's (MKL's, which
      _lu_factor_values rounds as) leaves 1e-16, and inverts to entries of 3e15.
    `adjoint`: a^H x = b by a's own LU, as PyTorch's solve backward reuses its forward's
    factors (so a backward never finds singular the matrix its forward solved with)."""
    if a.dtype not in _SINGLE_PRECISION or a.shape[-1] > _OWN_PRECISION_MAX_N:
        try:
            return _np.linalg.solve(_np.conj(_np.swapaxes(a, -1, -2)) if adjoint else a, b)
        except _np.linalg.LinAlgError:
            pass
    from ._more_math import _lu_factor_values, _zero_pivot_info
    from ._linalg_factor import _lu_substitute
    lu_values, pivots = _lu_factor_values(a)
    if _zero_pivot_info(lu_values).any():
        return None
    with _np.errstate(over="ignore", invalid="ignore"):     # (inf and nan, as LAPACK's)
        return _lu_substitute(lu_values, pivots, b, adjoint)


class _Inverse(_Function):
    @staticmethod
    def forward(ctx, A):
        arr = A._array
        if arr.size:
            out = _getrf_getrs_solve(arr, _np.broadcast_to(
                _np.eye(arr.shape[-1], dtype=arr.dtype), arr.shape))
            if out is None:
                _raise_singular_inv(arr, "linalg.inv")
        else:
            out = _np.empty_like(arr)
        out = _tensor(_spread_nan_as_getrs(out, arr), A, lapack=True)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        # d(A^-1) = -A^-1 dA A^-1, so the adjoint is -A^-H G A^-H.
        inverse, = ctx.saved_tensors
        inverse_t = _adjoint(inverse)
        return -(inverse_t @ grad @ inverse_t)


_torch_grad_fn_name(_Inverse, "LinalgInvExBackward0")


def inv(A):
    """The inverse of each square matrix of A (torch.linalg.inv)."""
    A = _as_tensor(A, "linalg_inv")
    _check_square(A, "linalg.inv")
    _check_float(A, "linalg.inv")
    return _Inverse.apply(A)


def _det_factors(A):
    """(the diagonal of U, the permutation's sign) of A = P L U as PyTorch's det and slogdet
    take them: getrf of A^T for a contiguous real A (det A^T = det A; PyTorch's layout saving),
    of A itself otherwise, and the sign +1 or -1 (an int64 array) by the parity of the pivots
    that swap.  Their products, as PyTorch forms them, give det's and slogdet's bits (and det's
    -0. of a singular matrix whose permutation is odd), which numpy's det, exp(log|det|), did
    not."""
    from ._more_math import _lu_factor_values
    arr = A._array
    if A.is_contiguous() and arr.dtype.kind != "c":
        arr = _np.swapaxes(arr, -1, -2)
    lu, pivots = _lu_factor_values(arr)
    swaps = (pivots != _np.arange(1, pivots.shape[-1] + 1, dtype=pivots.dtype)).sum(-1)
    return _np.diagonal(lu, axis1=-2, axis2=-1), 1 - 2 * (swaps % 2).astype(_np.int64)


class _Determinant(_Function):
    @staticmethod
    def forward(ctx, A):
        diagonal, sign = _det_factors(A)
        product = _np.ones(diagonal.shape[:-1], dtype=diagonal.dtype)
        with _np.errstate(over="ignore", invalid="ignore"):     # (inf or nan, silently)
            for k in range(diagonal.shape[-1]):      # in order, as PyTorch's prod of n values
                product = product * diagonal[..., k]
        out = _tensor(sign * product, A)
        ctx.save_for_backward(A, out)       # the result too, as PyTorch (a write into it raises)
        return out

    @staticmethod
    def backward(ctx, grad):
        # d det(A) = det(A) tr(A^-1 dA): the adjoint is G conj(det(A)) A^-H.  Through inv and
        # det themselves, so create_graph gives the second derivative.
        A, result = ctx.saved_tensors
        if A.shape[-1] == 1:
            # d det = dA: PyTorch's adjoint is G itself, without a graph to A (fuzz 60652007)
            return grad.unsqueeze(-1).unsqueeze(-1).expand(A.shape)
        from .func import _transforming
        if not (_is_grad_enabled() or _transforming()):
            return _det_backward_by_lu(A, grad * _conj(result))
        singular = (result == 0).detach()
        if bool(singular.any()):
            return _singular_det_backward(A, grad, singular)
        try:
            return (grad * _conj(det(A))).unsqueeze(-1).unsqueeze(-1) * _adjoint(inv(A))
        except LinAlgError:
            # a determinant the LU of A^T leaves nonzero where A's own LU meets a zero pivot
            # (a numerically singular A): the adjugate, as for a singular one
            return _singular_det_backward(A, grad, singular | True)


def _det_backward_by_lu(A, scale):
    """det's first-order gradient as PyTorch's: X with A^H X = scale I (scale = G conj(det)),
    solved with the forward's LU (of A^T for a contiguous real A, of A otherwise) whose zero
    pivots are nudged to eps, so that a singular matrix gets the signed zeros of 0 * (a finite
    inverse) and a numerically singular one PyTorch's finite values."""
    from . import eye, from_numpy
    from ._linalg_factor import lu_solve
    from ._more_math import _lu_factor_values
    use_transpose = A.is_contiguous() and not A.is_complex()
    arr = _np.swapaxes(A._array, -1, -2) if use_transpose else A._array
    lu, pivots = _lu_factor_values(arr)
    diagonal = _np.diagonal(lu, axis1=-2, axis2=-1).copy()
    eps = _np.finfo(diagonal.real.dtype).eps
    n = lu.shape[-1]
    lu[..., range(n), range(n)] = _np.where(diagonal == 0, eps, diagonal)
    identity = eye(n, dtype=A.dtype)
    rhs = scale.unsqueeze(-1).unsqueeze(-1) * identity
    return lu_solve(from_numpy(lu), from_numpy(pivots), rhs, adjoint=not use_transpose)


def _singular_det_backward(A, grad, singular):
    """det's gradient when some matrices of A are singular (no inverse), as PyTorch computes it.
    A first-order backward solves against G conj(det(A)) = 0 there, with the LU's zero pivots
    nudged: zeros.  Under create_graph PyTorch takes the formula valid for every matrix, the
    adjugate through the SVD A = U S V^H: U diag(G conj(det U det V^H) prod_{j != i} S_j) V^H."""
    from . import eye, where, zeros_like
    from .func import _transforming
    n = A.shape[-1]
    if not (_is_grad_enabled() or _transforming()):
        mask = singular.unsqueeze(-1).unsqueeze(-1)
        safe = where(mask, eye(n, dtype=A.dtype), A)
        scale = (grad * _conj(det(safe))).unsqueeze(-1).unsqueeze(-1)
        return where(mask, zeros_like(A), scale * _adjoint(inv(safe)))
    U, S, Vh = svd(A)
    alpha = _conj(det(U) * det(Vh))
    others = where(eye(n, dtype=bool), 1.0, S.unsqueeze(-2).expand(S.shape + (n,)))
    D = (grad * alpha).unsqueeze(-1) * others.prod(-1).to(alpha.dtype)
    return (U * D.unsqueeze(-2)) @ Vh


_torch_grad_fn_name(_Determinant, "LinalgDetBackward0")


def det(A):
    """The determinant of each square matrix of A (torch.linalg.det)."""
    A = _as_tensor(A, "linalg_det")
    _check_square(A, "linalg.det")
    _check_float(A, "linalg.det")
    return _Determinant.apply(A)


class _LogAbsDet(_Function):
    @staticmethod
    def forward(ctx, A):
        from . import from_numpy
        diagonal, permutation_sign = _det_factors(A)
        diagonal = from_numpy(_np.array(diagonal))            # (a copy: the view is read-only)
        # PyTorch's sgn(diag U).prod() * the permutation's sign, sum(log|diag U|): tapegrad's
        # sgn, log and sum round as PyTorch's
        sign = diagonal.sgn().prod(-1) * from_numpy(_np.array(permutation_sign))
        logabsdet = diagonal.abs().log().sum(-1)
        sign = _tensor(sign._array, A)
        logabsdet = logabsdet._array
        # (a real sign is recorded too, as PyTorch's: it requires grad, with a zero gradient)
        if A.is_complex():
            ctx.save_for_backward(A, sign)
        else:
            ctx.save_for_backward(A)
        return sign, _tensor(logabsdet, A, real=True)

    @staticmethod
    def backward(ctx, grad_sign, grad_logabsdet):
        # With dL = tr(A^-1 dA): d log|det A| = Re dL, and a real sign is piecewise constant;
        # a complex sign moves by sign * i Im dL.  The adjoint is h A^-H with
        # h = g_logabsdet + i Im(g_sign conj(sign)).
        A, *sign = ctx.saved_tensors
        h = grad_logabsdet
        if sign and grad_sign is not None:
            h = h + 1j * (grad_sign * sign[0].conj()).imag
        # inv_ex: a singular A gives PyTorch's inf/nan gradient, not a LinAlgError
        return h.unsqueeze(-1).unsqueeze(-1) * _adjoint(inv_ex(A)[0])


_torch_grad_fn_name(_LogAbsDet, "LinalgSlogdetBackward0")


def slogdet(A):
    """(sign, log|det|) of each square matrix of A (torch.linalg.slogdet)."""
    A = _as_tensor(A, "linalg_slogdet")
    _check_square(A, "linalg.slogdet")
    _check_float(A, "linalg.slogdet")
    return _return_type("linalg_slogdet")(_LogAbsDet.apply(A))



class _Solve(_Function):
    """X = A^-1 B for matrices with equal batch shapes (the caller broadcasts)."""

    @staticmethod
    def forward(ctx, A, B):
        try:
            if A._array.size:
                X = _getrf_getrs_solve(A._array, B._array)
                if X is None:
                    raise _np.linalg.LinAlgError
            else:
                X = _np.linalg.solve(A._array, B._array)
        except _np.linalg.LinAlgError:
            arr = A._array
            flat = arr.reshape((-1,) + arr.shape[-2:])
            index = next((i for i, m in enumerate(flat) if _lu_first_zero_pivot(m)), 0)
            raise LinAlgError(f"torch.linalg.solve: {_batch_prefix(index, arr.ndim > 2)}The "
                              "solver failed because the input matrix is singular.") from None
        X = _tensor(_spread_nan_as_getrs(X, A._array, B._array), A, lapack=True)
        ctx.save_for_backward(A, X)
        return X

    @staticmethod
    def backward(ctx, grad):
        # A X = B: gB = A^-H G and gA = -gB X^H.
        A, X = ctx.saved_tensors
        if _is_grad_enabled() or not A._array.size:
            grad_B = solve(_adjoint(A), grad)       # (create_graph: differentiable in A)
        else:
            gB = _getrf_getrs_solve(A._array, _np.asarray(grad._array, dtype=A._array.dtype),
                                    adjoint=True)
            if gB is None:
                raise LinAlgError("torch.linalg.solve: The solver failed because the input "
                                  "matrix is singular.")
            grad_B = _tensor(gB, A)
        return -(grad_B @ _adjoint(X)), grad_B


_torch_grad_fn_name(_Solve, "LinalgSolveExBackward0")


def _broadcast_batch(A, B):
    from .creation import _broadcast_shapes       # (PyTorch names B's size as tensor a's)
    batch = _broadcast_shapes(tuple(B.shape[:-2]), tuple(A.shape[:-2]))
    return (A.expand(*batch, *A.shape[-2:]), B.expand(*batch, *B.shape[-2:]))


def _check_solve_operands(A, B, left, entry):
    """PyTorch's checks of linalg.solve's operands; returns whether B is a (batch of)
    vector(s): 1-D, or exactly A's batch shape plus one dimension."""
    A = _as_tensor(A, entry)
    _check_square(A, "linalg.solve")
    _check_float(A, "linalg.solve")
    if A.dtype != B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {_core.scalar_type_name_of(A._array.dtype)} and B of type "
                           f"{_core.scalar_type_name_of(B._array.dtype)} instead")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    rows, cols = (B.shape[-1], 1) if vector else tuple(B.shape[-2:])
    # A vector B is a column, which X A = B cannot take.
    if (rows if left else cols) != A.shape[-1] or (vector and not left):
        raise RuntimeError(
            f"linalg.solve: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{A.shape[-1]} and {rows}x{cols})")
    return vector


def solve(A, B, *, left=True):
    """The solution X of A X = B (left=True) or X A = B (torch.linalg.solve).  B is a batch of
    vectors when it is 1-D or has exactly A's batch shape plus one dimension."""
    _core.check_bool("linalg_solve", "left", left)
    vector = _check_solve_operands(A, B, left, "linalg_solve")
    if not left:
        # (PyTorch's node is the solve's own for either side, not the transpose's)
        return _core._name_grad_fn(solve(A.mT, B.mT).mT, "LinalgSolveExBackward0")
    A_b, B_b = _broadcast_batch(A, B.unsqueeze(-1) if vector else B)
    X = _Solve.apply(A_b, B_b)
    if vector:
        # (PyTorch's vector solutions are its solve's own output, not a view of the matrix
        # one, and laid out as LAPACK's matrix of them: strides (1, n) for (n, 3))
        return _in_lapack_layout(X.squeeze(-1), "LinalgSolveExBackward0", (A,))
    return X


# ---------------------------------------------------------------------------------------------
# Cholesky and the symmetric eigendecomposition

def _lapack_cholesky(arr):
    """np.linalg.cholesky of each trailing matrix of `arr`, raising np.linalg.LinAlgError also
    where a pivot is NaN.  PyTorch's LAPACK stops at the first pivot that is not > 0, NaN
    included (a NaN kernel entry raises LinAlgError, cholesky_ex reports it in info); numpy's
    OpenBLAS potrf tests only `<= 0` and carries the NaN on into the factor.  A NaN anywhere in
    the lower triangle reaches a later pivot, so the factor's diagonal shows every such case."""
    L = _np.linalg.cholesky(arr)
    if _np.isnan(_np.diagonal(L, axis1=-2, axis2=-1)).any():
        raise _np.linalg.LinAlgError("Matrix is not positive definite (a NaN pivot)")
    return L


def _not_positive_definite_order(matrix):
    """The order of the first leading minor of `matrix` that is not positive-definite.

    A binary search: the factor of a leading minor is the leading block of the whole factor,
    so once a minor's factorization fails every larger one's does.  (Trying each order in
    turn cost n factorizations: minutes for a 1024 x 1024 matrix, fuzz seed 66400774.)"""
    good, bad = 0, matrix.shape[0]          # minor `good` factors (0: trivially), `bad` fails
    while bad - good > 1:
        order = (good + bad) // 2
        try:
            _lapack_cholesky(matrix[:order, :order])
            good = order
        except _np.linalg.LinAlgError:
            bad = order
    return bad


class _Cholesky(_Function):
    @staticmethod
    def forward(ctx, A, name, upper=False):
        # PyTorch reads only the lower triangle; the upper factor reads the upper one, i.e. the
        # lower triangle of A^H, and is returned (by _cholesky) as the adjoint of its factor.
        arr = _np.conj(_np.swapaxes(A._array, -1, -2)) if upper else A._array
        lower = _np.tril(arr)
        symmetric = lower + _np.conj(_np.swapaxes(_np.tril(arr, -1), -1, -2))   # Hermitian
        try:
            L = _lapack_cholesky(symmetric)
        except _np.linalg.LinAlgError:
            flat = symmetric.reshape((-1,) + symmetric.shape[-2:])
            for index, matrix in enumerate(flat):
                try:
                    _lapack_cholesky(matrix)
                except _np.linalg.LinAlgError:
                    order = _not_positive_definite_order(matrix)
                    raise LinAlgError(
                        f"{name}: {_batch_prefix(index, arr.ndim > 2)}The "
                        "factorization could not be completed because the input is not "
                        f"positive-definite (the leading minor of order {order} is not "
                        "positive-definite).") from None
            raise
        # (the upper factor is this one's adjoint: row-major here, so that it is column-major)
        L = _tensor(L, A, lapack=not upper)
        ctx.save_for_backward(L)
        return L

    @staticmethod
    def backward(ctx, grad):
        # Murray (2016): gA = L^-H Phi(L^H gL) L^-1 with Phi keeping the lower triangle and
        # halving the diagonal, then spread Hermitian-symmetrically over both triangles.
        L, = ctx.saved_tensors
        middle = (_adjoint(L) @ grad).tril()
        middle = 0.5 * (middle + _adjoint(middle.tril(-1)))
        L_inv = inv(L)
        # For the upper factor PyTorch returns this same matrix as A's gradient (its formula
        # takes A to be Hermitian and does not adjoint it back): adjointing it, as
        # differentiating through A^H did, silently gave complex inputs the adjoint of
        # PyTorch's gradient (real ones are unaffected: their gradient is symmetric).
        return _adjoint(L_inv) @ middle @ L_inv, None, None


_torch_grad_fn_name(_Cholesky, "LinalgCholeskyExBackward0")


def cholesky(input, *, upper=False):
    """The lower (or upper) Cholesky factor of each symmetric positive-definite matrix of
    ``input`` (PyTorch's keyword name: its documentation's A)."""
    _core.check_bool("linalg_cholesky", "upper", upper)
    return _cholesky(input, upper, "linalg.cholesky")


def _cholesky(A, upper, name):
    A = _as_tensor(A, name.replace(".", "_"), "input")
    _check_square(A, name)
    _check_float(A, name)
    if upper:
        # PyTorch's upper factor reads A's upper triangle (LAPACK's uplo='U'): the lower factor
        # of A^H, which reads that triangle, adjointed (A^H is formed inside _Cholesky, whose
        # gradient follows PyTorch's convention for the upper factor).
        # (resolved: PyTorch's factor is a plain tensor, not a conjugate view)
        # (PyTorch's node is the factorisation's own, not the adjoint's view)
        return _core._name_grad_fn(_adjoint(_Cholesky.apply(A, name, True)).resolve_conj(),
                                   "LinalgCholeskyExBackward0")
    return _Cholesky.apply(A, name)


def _keep_factored_input(ctx, A):
    """Hold A for a create_graph backward only.  PyTorch's eigh/eig/svd/qr nodes save their
    factors alone, so a later in-place write into A leaves a first backward valid; tapegrad's
    saved factors carry no graph, so a create_graph backward re-derives them from A, which
    must then still hold the factored values."""
    ctx.factored_input, ctx.factored_version = A, A._version


def _factored_input(ctx):
    """A as held by _keep_factored_input, refused (PyTorch's in-place error) once written."""
    A = ctx.factored_input
    if A._version != ctx.factored_version:
        raise RuntimeError(
            f"one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [{A.type()} {list(A.shape)}], is at version {A._version}; "
            f"expected version {ctx.factored_version} instead (tapegrad re-derives the factors "
            f"of a create_graph backward from the factored input: docs/differences.md).")
    return A


class _Eigh(_Function):
    @staticmethod
    def forward(ctx, A, uplo):
        arr = A._array
        values, vectors = _np.linalg.eigh(arr, UPLO=uplo)
        values, vectors = _tensor(values, A, real=True), _tensor(vectors, A, lapack=True)
        ctx.save_for_backward(values, vectors)
        _keep_factored_input(ctx, A)
        ctx.uplo = uplo
        ctx.set_materialize_grads(False)     # (backward tells an unused output from a zero one)
        return values, vectors

    @staticmethod
    def backward(ctx, grad_values, grad_vectors):
        # gA = V (diag(gλ) + skew(V^H gV) / E) V^H with E_ij = λj - λi off the diagonal.
        with _no_grad():     # the outputs are re-derived below when the graph is needed
            values, vectors = ctx.saved_tensors
        if _is_grad_enabled():
            # create_graph: a saved output the loss did not use has no graph left (tapegrad
            # refuses to hand it out under grad mode), so recompute the factors through the
            # Function itself; reading them under no_grad above still checks their versions.
            values, vectors = _Eigh.apply(_factored_input(ctx), ctx.uplo)
        from . import zeros_like
        if grad_values is None:
            grad_values = zeros_like(values)
        if grad_vectors is None:
            # eigvalsh's gradient V diag(gλ) V^H, PyTorch's shortcut when the eigenvectors got
            # none: no division by the gaps, so repeated eigenvalues have a finite gradient
            return (vectors * grad_values.unsqueeze(-2)) @ _adjoint(vectors), None
        core = _adjoint(vectors) @ grad_vectors
        if core.is_complex():
            _check_phase_invariant(core, "linalg_eigh_backward", "eigenvectors")
        core = 0.5 * (core - _adjoint(core))
        n = values.shape[-1]
        from . import eye
        identity = eye(n, dtype=values.dtype)
        gaps = values.unsqueeze(-2) - values.unsqueeze(-1) + identity
        core = core / gaps * (1 - identity) + identity * grad_values.unsqueeze(-2)
        return vectors @ core @ _adjoint(vectors), None


_torch_grad_fn_name(_Eigh, "LinalgEighBackward0")


def _check_phase_invariant(VhgV, name, what):
    """Complex eigenvectors and singular vectors are defined up to a phase e^{i phi} each: a loss
    that depends on the phases (Im diag(V^H gV) != 0) has no gradient; PyTorch's check."""
    imaginary = _np.imag(_np.diagonal(VhgV._array, 0, -2, -1))
    if not _np.allclose(imaginary, 0, rtol=1e-2, atol=1e-2):
        # (PyTorch's words differ: svd_backward's "this phase term, making it ill-defined",
        # the eigenvector backwards' "this quantity, so it is ill-defined")
        ending = ("this phase term, making it ill-defined." if name == "svd_backward" else
                  "this quantity, so it is ill-defined.")
        raise RuntimeError(f"{name}: The {what} in the complex case are specified up to "
                           "multiplication by e^{i phi}. The specified loss function depends on "
                           + ending)


def _check_uplo(UPLO):
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


def _check_eigh_dtype(A):
    # eigh has no dtype check of its own in PyTorch: the CPU kernel's dispatch refuses.
    if A._array.dtype.kind not in "fc":
        raise NotImplementedError('"linalg_eigh_cpu" not implemented for '
                                  f"'{_core.scalar_type_name_of(A._array.dtype)}'")
    _refuse_half(A, "linalg.eigh")



def eigh(input, UPLO="L"):
    """Eigenvalues (ascending) and orthonormal eigenvectors of each symmetric matrix of A,
    reading only the UPLO triangle (torch.linalg.eigh)."""
    A = _as_tensor(input, "linalg_eigh", "input")
    uplo = _check_uplo(UPLO)
    _check_square(A, "linalg.eigh")
    _check_eigh_dtype(A)
    return _return_type("linalg_eigh")(_Eigh.apply(A, uplo))


def eigvalsh(input, UPLO="L"):
    """The ascending eigenvalues of each symmetric matrix of A (torch.linalg.eigvalsh)."""
    A = _as_tensor(input, "linalg_eigvalsh", "input")
    uplo = _check_uplo(UPLO)
    _check_square(A, "linalg.eigh")        # (PyTorch's eigvalsh reports as eigh)
    _check_eigh_dtype(A)
    return _Eigh.apply(A, uplo)[0]


class _Eig(_Function):
    """The eigendecomposition of a general square matrix: complex eigenvalues and unit-norm
    eigenvectors (LAPACK's geev, as PyTorch's)."""

    @staticmethod
    def forward(ctx, A):
        arr = A._array
        complex_dtype = _np.result_type(arr.dtype, _np.complex64)
        finite = _np.isfinite(arr).all((-2, -1))
        if finite.all():
            values, vectors = _np.linalg.eig(arr)
        else:
            # eigvals without grad: a matrix with an infinity or a NaN has NaN eigenvalues, the
            # others their own, as PyTorch's (numpy's LinAlgError refuses the whole batch)
            values, vectors = (_np.array(f, dtype=complex_dtype) for f in
                               _np.linalg.eig(_np.where(finite[..., None, None], arr, 0)))
            values[~finite] = complex(_np.nan, _np.nan)
            vectors[~finite] = complex(_np.nan, _np.nan)
        from . import from_numpy
        values = from_numpy(_np.array(values, dtype=complex_dtype, order="C"))
        vectors = from_numpy(_lapack_layout(vectors, complex_dtype))
        ctx.save_for_backward(values, vectors)
        _keep_factored_input(ctx, A)
        ctx.set_materialize_grads(False)     # (eigvals: no division by the gaps, below)
        return values, vectors

    @staticmethod
    def backward(ctx, grad_values, grad_vectors):
        # gA = V^-H (diag(gλ) + (V^H gV - V^H V Re diag(V^H gV)) / conj(E)) V^H, with
        # E_ij = λj - λi off the diagonal; each eigenvector is defined up to a phase, so a loss
        # must have Im diag(V^H gV) = 0 (PyTorch's check).  A real A takes the real part.
        with _no_grad():     # the outputs are re-derived below when the graph is needed
            values, vectors = ctx.saved_tensors
        if _is_grad_enabled():
            values, vectors = _Eig.apply(_factored_input(ctx))  # create_graph: _Eigh.backward
        from . import eye, zeros_like
        if grad_values is None:
            grad_values = zeros_like(values)
        n = values.shape[-1]
        identity = eye(n, dtype=values.dtype)
        vectors_h = vectors.mH
        core = identity * grad_values.unsqueeze(-2)
        if grad_vectors is not None:
            VhgV = vectors_h @ grad_vectors
            _check_phase_invariant(VhgV, "linalg_eig_backward", "eigenvectors")
            VhgV = VhgV - (vectors_h @ vectors) * VhgV.diagonal(0, -2, -1).real.unsqueeze(-2)
            gaps = (values.unsqueeze(-2) - values.unsqueeze(-1) + identity).conj()
            core = core + VhgV / gaps * (1 - identity)
        grad_A = solve(vectors_h, core @ vectors_h)
        return grad_A if ctx.factored_input.is_complex() else grad_A.real


_torch_grad_fn_name(_Eig, "LinalgEigBackward0")


def matrix_exp(input):
    """The matrix exponential of each square matrix of ``input`` (torch.linalg.matrix_exp)."""
    from ._more_math import matrix_exp as _matrix_exp
    return _matrix_exp(input)


def eig(input):
    """Eigenvalues and eigenvectors (complex, unit norm) of each square matrix of A
    (torch.linalg.eig)."""
    A = _as_tensor(input, "linalg_eig", "input")
    _check_square(A, "linalg.eig")
    _check_float(A, "linalg.eig")
    _check_finite_eig(A)
    return _return_type("linalg_eig")(_Eig.apply(A))


def _check_finite_eig(A):
    """PyTorch's linalg_eig refuses a NaN or an infinity (eigvals of a tensor that does not
    require grad gives NaN eigenvalues instead)."""
    if not _np.isfinite(A._array).all():
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")


def eigvals(input):
    """The (complex) eigenvalues of each square matrix of A (torch.linalg.eigvals)."""
    A = _as_tensor(input, "linalg_eigvals", "input")
    _check_square(A, "linalg.eigvals")
    _check_float(A, "linalg.eigvals")
    if A.requires_grad and _is_grad_enabled():      # (PyTorch's linalg_eig, for the backward)
        _check_finite_eig(A)
    return _Eig.apply(A)[0]


# ---------------------------------------------------------------------------------------------
# norms (composites of differentiable reductions)

def _normalize_dims(dim, ndim):
    """The dims of a norm, non-negative, in the order given (dim 0 of a 0-d tensor), checked
    by the core's normalize_dims (PyTorch's vector_norm checks each dim in turn)."""
    if dim is None:
        return tuple(range(ndim))
    _core._normalize_dims(dim, ndim)
    # (a one-element integer tensor is one dim, as `int[1]` reads it, and is not iterated over)
    dims = (dim,) if not isinstance(dim, (tuple, list)) else tuple(dim)
    if not dims:
        # an empty list reduces over every dim, as dim=None (PyTorch's reductions; the norm of
        # dim=() was the elementwise magnitude, fuzz 60635106)
        return tuple(range(ndim))
    return tuple(_core.symint_param(d) % max(ndim, 1) for d in dims)


class _EuclideanNorm(_Function):
    """sqrt(sum(x^2)) over dims, whose gradient x / norm is 0 (not nan) where the norm is 0,
    as PyTorch's."""

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        arr = x._array
        with _np.errstate(over="ignore", invalid="ignore"):     # (inf, as PyTorch, silently)
            out = _tensor(_np.sqrt(_np.sum(arr * arr, axis=dims, keepdims=keepdim)), x)
        ctx.save_for_backward(x, out)
        ctx.dims, ctx.keepdim = dims, keepdim
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        grad, out = _with_reduced_dims(ctx, grad, out)
        # PyTorch's norm_backward: the quotient x / norm masked where the norm is 0, so that its
        # derivative there (0 / 0) makes second derivatives NaN, as PyTorch's
        return grad * _masked_zero(out == 0, x / out), None, None


_torch_grad_fn_name(_EuclideanNorm, "LinalgVectorNormBackward0")


def _masked_zero(mask, value):
    """where(mask, 0, value): a subgradient 0 in place of a quotient computed anyway."""
    from . import where, zeros_like
    return where(mask, zeros_like(value), value)


_torch_grad_fn_name(_EuclideanNorm, "LinalgVectorNormBackward0")


def _with_reduced_dims(ctx, *tensors):
    """A norm's output and its gradient with the dims it reduced (ctx.dims) back as size 1, where
    the norm dropped them (keepdim=False), so that they broadcast against its input."""
    if not ctx.keepdim:
        for d in sorted(ctx.dims):
            tensors = tuple(t.unsqueeze(d) for t in tensors)
    return tensors


class _PNorm(_Function):
    """(sum |x|^p)^(1/p) over dims for a real x and any other p, with PyTorch's gradient
    sgn(x) |x|^(p-1) grad / norm^(p-1): 0, not nan, at the zeros of x when p < 1 and where the
    norm is 0 (the composite of pow and sum gave inf * 0 there)."""

    @staticmethod
    def forward(ctx, x, ord, dims, keepdim):
        with _np.errstate(divide="ignore", over="ignore"):
            total = _np.sum(_np.abs(x._array) ** ord, axis=dims, keepdims=keepdim)
            out = _tensor(total ** (1.0 / ord), x)
        ctx.save_for_backward(x, out)
        ctx.ord, ctx.dims, ctx.keepdim = ord, dims, keepdim
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        grad, out = _with_reduced_dims(ctx, grad, out)
        p = ctx.ord
        # PyTorch's norm_backward term for term: the masks replace powers computed anyway, so
        # their derivatives (0 * inf) make second derivatives NaN where PyTorch's are
        if p < 1:
            scaled = x.sgn() * _masked_zero(x == 0, x.abs().pow(p - 1))
            return scaled * grad * out.pow(1 - p), None, None, None
        if p < 2:
            scaled = x.sgn() * x.abs().pow(p - 1)
        else:
            scaled = x * x.abs().pow(p - 2)
        return scaled * _masked_zero(out == 0, grad / out.pow(p - 1)), None, None, None


_torch_grad_fn_name(_PNorm, "LinalgVectorNormBackward0")


class _CountNonzero(_Function):
    """The 0-norm (the count of non-zeros): in the graph, but without a gradient, as PyTorch's
    (its backward gives none: a leaf's .grad stays None, autograd.grad needs allow_unused)."""

    @staticmethod
    def forward(ctx, magnitude, reduce):
        with _no_grad():
            # (x != 0, as PyTorch counts: a NaN is not zero; its sign() is NaN's 0)
            return (magnitude != 0).to(magnitude.dtype).sum(**reduce)

    @staticmethod
    def backward(ctx, grad):
        return None, None


_torch_grad_fn_name(_CountNonzero, "LinalgVectorNormBackward0")


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The ord-norm of x over dim (all elements when None), as torch.linalg.vector_norm."""
    x = _as_tensor(x, "linalg_vector_norm", "input")
    _core.check_bool("linalg_vector_norm", "keepdim", keepdim)
    if x._array.dtype.kind != "c":                      # complex: the norm of the moduli
        _check_float(x, "linalg.vector_norm")
    if dtype is not None:
        _core._norm_dtype(x._array.dtype, dtype)    # (PyTorch's checks, torch.norm's too)
        x = x.to(dtype)
    if isinstance(ord, str):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not str")
    ord = float(ord)
    if x.dtype == _core.float16 and not _math.isinf(ord):     # (a max / min is exact in float16)
        (wide,), half = _widen_half(x)
        return _narrow_half(vector_norm(wide, ord, dim, keepdim), half)
    dims = _normalize_dims(dim, x.ndim)
    # The max/min norms and the negative orders (a min in disguise) have no identity to
    # give an empty reduction.
    if (_math.isinf(ord) or ord < 0) and x.numel() == 0:
        if dim is None:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {ord:g} norm on an empty "
                               "tensor because the operation does not have an identity")
        for d in dims:
            if x.shape[d] == 0:
                # PyTorch's message has no space before "because".
                raise RuntimeError(
                    f"linalg.vector_norm cannot compute the {ord:g} norm on the dimension {d}"
                    "because this dimension is empty and the operation does not have an "
                    "identity")
    result = _core._name_grad_fn(_vector_norm_of(x, ord, dims, keepdim),
                                 "LinalgVectorNormBackward0")
    # PyTorch's LinalgVectorNormBackward0 saves the input and the result whatever the ord (a
    # later write into either refuses the backward); the forms below keep what each needs
    # (the Functions' nodes have PyTorch's name; the composed norms are given it)
    _core._guard_saved_version(result, x, result)
    return result


def _vector_norm_of(x, ord: float, dims, keepdim: bool):
    magnitude = x.abs()
    reduce = dict(dim=dims, keepdim=keepdim)
    if x.ndim == 0:
        # (dim 0 or -1 of a 0-d tensor names the tensor itself: nothing to reduce)
        reduce, dims = {}, ()
    if _math.isinf(ord):
        # the core's norm, whose gradient is PyTorch's: 0 where a NaN makes the norm NaN (amax /
        # amin of the magnitudes divided by a count of no matches there: NaN everywhere)
        return _core.norm(x, ord, dims, keepdim) if reduce else magnitude
    if ord == 0:
        return _CountNonzero.apply(magnitude, reduce)
    if ord == 1:
        return magnitude.sum(**reduce)
    if ord == 2:
        return (_EuclideanNorm.apply(magnitude if x.is_complex() else x, dims, keepdim)
                if reduce else magnitude)
    # (a complex x through its magnitude, whose derivative sgn(x) is 0 at 0; a 0-d x too: the
    # composite (|x|^p)^(1/p) had gradient inf * 0 = NaN at 0, fuzz 62660108)
    return _PNorm.apply(magnitude if x.is_complex() else x, ord, dims, keepdim)


def matrix_norm(input, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The ord-norm of the matrices of A over the two dims (torch.linalg.matrix_norm): 'fro',
    inf, -inf, 1, -1."""
    A = _as_tensor(input, "linalg_matrix_norm", "input")
    _core.check_bool("linalg_matrix_norm", "keepdim", keepdim)
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    _check_float(A, "linalg.matrix_norm")
    if dtype is not None:
        _core._norm_dtype(A._array.dtype, dtype, "linalg.matrix_norm")   # (PyTorch's checks)
        A = A.to(dtype)
    if isinstance(dim, int) and not isinstance(dim, bool):     # (PyTorch's parser: a 2-tuple)
        raise TypeError("linalg_matrix_norm() received an invalid combination of arguments - "
                        "got (Tensor, dim=int), but expected one of:\n"
                        " * (Tensor input, Number ord, tuple of ints dim = {-2,-1}, "
                        "bool keepdim = False, *, torch.dtype dtype = None, Tensor out = None)\n"
                        " * (Tensor input, str ord = \"fro\", tuple of ints dim = {-2,-1}, "
                        "bool keepdim = False, *, torch.dtype dtype = None, Tensor out = None)\n")
    dims = tuple(dim)
    if len(dims) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{', '.join(map(str, dims))}")
    rows, cols = (_normalize_dims(d, A.ndim)[0] for d in dims)
    if rows == cols:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({rows}, {cols})")
    if ord == "fro":
        return vector_norm(A, 2, (rows, cols), keepdim)
    if isinstance(ord, str) and ord != "nuc":
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord == "nuc" or ord in (2, -2):
        _refuse_half(A, "linalg.matrix_norm(svd)")
        # Norms of the singular values: move the two dims last, reduce, put them back.
        moved = A.movedim((rows, cols), (-2, -1))
        values = svdvals(moved)
        # (an empty matrix: PyTorch's 2-norm is a constant 0, the max of no non-negative
        # values, with no gradient; its -2-norm raises amin's IndexError there as here)
        result = (values.sum(dim=-1) if ord == "nuc" else
                  values.detach().sum(dim=-1) if ord == 2 and not values.shape[-1] else
                  values.amax(dim=-1) if ord == 2 else values.amin(dim=-1))
        if keepdim:
            for d in sorted((rows, cols)):
                result = result.unsqueeze(d)
        return result
    if ord not in (_math.inf, -_math.inf, 1, -1):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord:g} not supported.")
    # inf sums along rows (over columns) and takes the max over rows; 1 the reverse.
    sum_dim, pick_dim = (cols, rows) if abs(ord) == _math.inf else (rows, cols)
    sums = A.abs().sum(dim=sum_dim, keepdim=True)
    if A.shape[pick_dim] == 0 and ord > 0:
        # PyTorch gives a constant 0 for an empty max (norms are non-negative; no gradient);
        # an empty min raises amin's IndexError there as here.
        picked = sums.detach().sum(dim=pick_dim, keepdim=True)
    elif ord > 0:
        picked = sums.amax(dim=pick_dim, keepdim=True)
    else:
        picked = sums.amin(dim=pick_dim, keepdim=True)
    return picked if keepdim else picked.squeeze(max(rows, cols)).squeeze(min(rows, cols))


def norm(input, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm: a vector norm over one dim (or the flattened input when neither ord
    nor dim is given), a matrix norm over two."""
    A = _as_tensor(input, "linalg_norm", "input")
    _core.check_bool("linalg_norm", "keepdim", keepdim)
    # (one dim: an int, a numpy int or an integer tensor, which vector_norm reads as its int[1])
    one_dim = dim is not None and not isinstance(dim, (tuple, list))
    if dim is not None and not one_dim and len(dim) not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got "
                           f"{list(dim)}")
    if dim is None and ord is not None and A.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.ndim}D.")
    # (ord None: PyTorch's vector 2-norm over the dims, the Frobenius norm of two)
    matrix = ord is not None and (isinstance(ord, str) or A.ndim == 2 and dim is None or (
        dim is not None and not one_dim and len(dim) == 2))
    if matrix:
        # (an int dim is PyTorch's one-element list here: matrix_norm's "must be a 2-tuple")
        return matrix_norm(A, ord, (-2, -1) if dim is None else
                           (dim,) if one_dim else dim, keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


# ---------------------------------------------------------------------------------------------
# singular value decomposition

def _svd_of_non_finite(arr, full_matrices):
    """The SVD of matrices with a NaN or an infinity, as PyTorch's: a NaN
    raises its error naming the first matrix with one; a matrix with infinities only has NaN
    factors, without error, and the other matrices of the batch their own (fuzz 60620368)."""
    flat = arr.reshape((-1,) + arr.shape[-2:])
    index = next((i for i, m in enumerate(flat) if _np.isnan(m).any()), None)
    if index is not None:
        raise LinAlgError(f"linalg.svd: {_batch_prefix(index, arr.ndim > 2)}The algorithm "
                          "failed to converge because the input matrix contained non-finite "
                          "values.") from None
    parts = []
    for m in flat:
        finite = _np.isfinite(m).all()
        factors = _np.linalg.svd(m if finite else _np.zeros_like(m), full_matrices=full_matrices)
        parts.append([f if finite else _np.full_like(f, _np.nan) for f in factors])
    batch = arr.shape[:-2]
    return tuple(_np.stack([p[j] for p in parts]).reshape(batch + parts[0][j].shape)
                 if parts else _np.linalg.svd(arr, full_matrices=full_matrices)[j]
                 for j in range(3))


class _SVD(_Function):
    @staticmethod
    def forward(ctx, A, full_matrices):
        arr = A._array
        # (non-finite input is checked first: numpy's LAPACK refuses a NaN but can loop forever
        # on an infinity, a (3, 5) matrix with one inf: fuzz 60673301)
        if _np.isfinite(arr).all():
            U, S, Vh = _np.linalg.svd(arr, full_matrices=full_matrices)
        else:
            U, S, Vh = _svd_of_non_finite(arr, full_matrices)
        U, S, Vh = (_tensor(U, A, lapack=True), _tensor(S, A, real=True),
                     _tensor(Vh, A, lapack=True))
        ctx.save_for_backward(U, S, Vh)
        _keep_factored_input(ctx, A)
        ctx.full_matrices = full_matrices
        ctx.set_materialize_grads(False)     # (backward tells an unused output from a zero one)
        return U, S, Vh

    @staticmethod
    def backward(ctx, grad_U, grad_S, grad_Vh):
        # For distinct non-zero singular values, with k = min(m, n) and the thin factors:
        #   gA = U [sym-part terms + diag(gS)] Vh + (I - U U^H) gU S^-1 Vh
        #        + U S^-1 gV^H (I - V V^H)
        # where the k x k core is (skew(U^H gU) / E) S + S (skew(V^H gV) / E), skew(X) = X - X^H
        # and E_ij = S_j^2 - S_i^2; complex matrices add i Im diag(U^H gU - V^H gV) / 2S on the
        # diagonal (each pair of singular vectors is defined up to a common phase, so a loss
        # must have Im diag(U^H gU + V^H gV) = 0, which PyTorch checks).  Full matrices only
        # contribute through their first k columns (the rest is an arbitrary basis).
        with _no_grad():     # the outputs are re-derived below when the graph is needed
            U, S, Vh = ctx.saved_tensors
        if _is_grad_enabled():
            # create_graph: see _Eigh.backward.
            U, S, Vh = _SVD.apply(_factored_input(ctx), ctx.full_matrices)
        m, n = U.shape[-2], Vh.shape[-1]
        k = min(m, n)
        U, Vh = U[..., :, :k], Vh[..., :k, :]
        from . import zeros_like
        if grad_S is None:
            grad_S = zeros_like(S)
        if grad_U is None and grad_Vh is None:
            # svdvals' gradient U diag(gS) Vh, PyTorch's shortcut when the singular vectors got
            # none: no division by the gaps or by S, so repeated or zero singular values (a
            # rank-deficient matrix, the identity) have a finite gradient
            return (U * grad_S.unsqueeze(-2)) @ Vh, None
        grad_U = zeros_like(U) if grad_U is None else grad_U[..., :, :k]
        grad_Vh = zeros_like(Vh) if grad_Vh is None else grad_Vh[..., :k, :]
        V, grad_V = _adjoint(Vh), _adjoint(grad_Vh)
        from . import eye
        identity = eye(k, dtype=S.dtype)
        squares = S * S
        gaps = squares.unsqueeze(-2) - squares.unsqueeze(-1) + identity
        off_diagonal = 1 - identity
        UtgU = _adjoint(U) @ grad_U
        VtgV = _adjoint(V) @ grad_V
        inverse_S = 1 / S
        core = ((UtgU - _adjoint(UtgU)) / gaps * off_diagonal) * S.unsqueeze(-2)
        core = core + S.unsqueeze(-1) * ((VtgV - _adjoint(VtgV)) / gaps * off_diagonal)
        core = core + identity * grad_S.unsqueeze(-2)
        if UtgU.is_complex():
            _check_phase_invariant(UtgU + VtgV, "svd_backward", "singular vectors")
            phase = (UtgU - VtgV).diagonal(0, -2, -1).imag * (0.5 * inverse_S)
            core = core + 1j * identity * phase.unsqueeze(-2)
        grad_A = U @ core @ Vh
        if m > k:
            projected = grad_U - U @ UtgU
            grad_A = grad_A + (projected * inverse_S.unsqueeze(-2)) @ Vh
        if n > k:
            projected = grad_V - V @ VtgV
            grad_A = grad_A + (U * inverse_S.unsqueeze(-2)) @ _adjoint(projected)
        return grad_A, None


_torch_grad_fn_name(_SVD, "LinalgSvdBackward0")



def _check_matrix(A, name):
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")


def svd(A, full_matrices=True, *, driver=None):
    """A = U diag(S) Vh for each matrix of A (torch.linalg.svd); singular vectors are defined
    up to sign, as in PyTorch."""
    A = _as_tensor(A, "linalg_svd")
    _core.check_bool("linalg_svd", "full_matrices", full_matrices)
    _check_matrix(A, "linalg.svd")
    _check_float(A, "linalg.svd")
    _refuse_driver(driver)
    return _return_type("linalg_svd")(_SVD.apply(A, bool(full_matrices)))


def svdvals(A, *, driver=None):
    """The singular values of each matrix of A, descending (torch.linalg.svdvals)."""
    A = _as_tensor(A, "linalg_svdvals")
    _check_matrix(A, "linalg.svd")     # (PyTorch names svd: svdvals is svd without vectors)
    _check_float(A, "linalg.svdvals")
    _refuse_driver(driver)
    return _SVD.apply(A, False)[1]


def _refuse_driver(driver):
    # the LAPACK driver choice is cuSOLVER's only: PyTorch refuses any on the CPU
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")


def _count_tolerance(S, atol, rtol, shape):
    """PyTorch's cut-off for matrix_rank and pinv: max(atol, rtol * largest singular value).
    rtol defaults to eps * max(m, n) unless a positive atol is given; either may be a tensor
    that broadcasts against the batch shape (one tolerance per matrix)."""
    from . import where
    eps = _np.finfo(S._array.dtype).eps
    default_rtol = eps * max(shape[-2], shape[-1])

    def per_matrix(tol):
        # A tensor tolerance is one value per batch element: it meets S's last dim as a 1.
        return tol.to(S.dtype).unsqueeze(-1) if isinstance(tol, _core.TensorBase) else float(tol)

    atol = 0.0 if atol is None else per_matrix(atol)
    if rtol is None:
        rtol = (where(atol > 0, 0.0, default_rtol) if isinstance(atol, _core.TensorBase)
                else (0.0 if atol > 0 else default_rtol))
    else:
        rtol = per_matrix(rtol)
    # amax refuses an empty dim; an empty matrix has no singular value to compare anyway.
    largest = S.amax(dim=-1, keepdim=True) if S.shape[-1] else S.sum(dim=-1, keepdim=True)
    from . import maximum
    cut = largest * rtol
    if isinstance(atol, _core.TensorBase):
        return maximum(cut, atol)
    return cut.clamp(min=atol)


def cond(input, p=None):
    """The condition number of A (batched) in the matrix norm ``p``: for ``None``/2 the ratio
    of the largest to the smallest singular value (-2 the inverse), for 'nuc' the sum of the
    singular values times that of their reciprocals, otherwise
    ``matrix_norm(A, p) * matrix_norm(inv(A), p)``, inf where A is singular (square A only)."""
    A = _as_tensor(input, "linalg_cond", "input")
    _check_float(A, "linalg.cond")
    if A.ndim < 2:
        # (PyTorch names the tensor A for a string order only, its matrix_norm path)
        raise RuntimeError(f"linalg.cond{f'(ord={p})' if isinstance(p, str) else ''}: The input "
                           f"tensor {'A ' if isinstance(p, str) else ''}must have at least 2 "
                           "dimensions.")
    if isinstance(p, str):
        _check_square(A, f"linalg.cond(ord={p})")
    if A.numel() == 0:
        # PyTorch's answer for matrices without elements (NumPy defines none): zeros of the batch
        # shape in the real dtype, a constant (no gradient path)
        from .creation import zeros
        real = A.real.dtype if A.is_complex() else A.dtype
        result = zeros(tuple(A.shape[:-2]), dtype=real)
    elif p is None or p in (2, -2):
        # PyTorch divides the one-element ends of S and squeezes the ratio (its graph:
        # SqueezeBackward1 over DivBackward0)
        S = svdvals(A)
        largest, smallest = S[..., :1], S[..., -1:]
        result = (smallest / largest if p == -2 else largest / smallest).squeeze(-1)
    elif p == "nuc":
        # PyTorch's route for this one: the singular values of A and their reciprocals (those
        # of A's inverse), so a singular matrix gives inf or a huge number, never an error.
        S = svdvals(A)
        result = S.sum(-1) * S.reciprocal().sum(-1)
    else:
        if p not in ("fro", 1, -1, _math.inf, -_math.inf):
            raise RuntimeError(f"linalg.cond got an invalid norm type: {p if isinstance(p, str) else f'{p:g}'}")
        if not isinstance(p, str):      # (PyTorch names the order as an integer: ord=inf, ord=-1)
            _check_square(A, f"linalg.cond(ord={p if abs(p) == _math.inf else int(p)})")
        # As PyTorch: a matrix whose LU meets a zero pivot has condition number inf (not a
        # LinAlgError), in a batch alongside the finite ones.
        inverse, info = inv_ex(A)
        from . import where
        singular = info > 0
        result = matrix_norm(A, ord=p) * matrix_norm(
            where(singular.unsqueeze(-1).unsqueeze(-1), _math.inf, inverse), ord=p)
        # As PyTorch (for NumPy): every NaN of the product (0 * inf for a zero matrix, a NaN in
        # A) is inf, which also covers the singular ones (their norm times inf).
        result = result.nan_to_num(_math.inf, _math.inf, -_math.inf)
    return result


def solve_triangular(input, B, *, upper, left=True, unitriangular=False):
    """X with ``A @ X = B`` (or ``X @ A = B`` when ``left=False``) for triangular A: only the
    triangle named by ``upper`` is read (its diagonal taken as ones with ``unitriangular``), so
    A's gradient lands in that triangle alone."""
    A = _as_tensor(input, "linalg_solve_triangular", "input")
    _as_tensor(B, "linalg_solve_triangular", "B", 2)
    for name, flag in (("upper", upper), ("left", left), ("unitriangular", unitriangular)):
        _core.check_bool("linalg_solve_triangular", name, flag)
    _check_triangular_operands(A, B, left)
    if A._array.dtype.kind not in "fc":
        raise NotImplementedError('"triangular_solve_cpu" not implemented for '
                                  f"'{_core.scalar_type_name_of(A._array.dtype)}'")
    _check_float(A, "linalg.solve_triangular")
    from .creation import eye
    triangle = A.triu() if upper else A.tril()
    if unitriangular:
        identity = eye(A.shape[-1], dtype=A.dtype)
        triangle = triangle * (1 - identity) + identity
    if B.dtype != A.dtype:
        B = B.to(A.dtype)                           # (PyTorch's result takes A's dtype)
    if not left:                                    # X A = B: A^T X^T = B^T
        triangle, B, upper = triangle.mT, B.mT, not upper
    A_b, B_b = _broadcast_batch(triangle, B)
    result = _TriangularSolve.apply(A_b, B_b, upper, left)
    if left:
        return result
    # (PyTorch's node is the solve's own for either side, not the transpose's)
    return _core._name_grad_fn(result.mT, "LinalgSolveTriangularBackward0")


def _check_triangular_operands(A, B, left):
    """PyTorch's checks of linalg.solve_triangular's operands (B a matrix: no vector form)."""
    name = "linalg.solve_triangular"
    _check_square(A, name)
    if B.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")


def _substitute(T, B, upper, block=64):
    """X with T X = B for triangular T (zeros off its triangle), by substitution as LAPACK's
    trsm: accurate for the ill-conditioned triangles an LU solve with pivoting gets wrong (a
    random triangle's condition grows exponentially with its size; fuzz 60624567).  Blocked as
    trsm: the rows already solved enter each block of rows through one product, the block is
    solved column by column as MKL's trsm rounds (bit for bit in real triangles of 1, 2, 4 and
    16 rows; not yet in 3 or 6): each solved row is scaled by its diagonal's reciprocal and
    taken off the rows still to solve by a fused multiply-add (one rounding, through the wider
    dtype of the LU's update).
    A zero on the diagonal gives inf/NaN, no error, as PyTorch's."""
    from ._more_math import _FMA_WIDE
    n = T.shape[-1]
    X = _np.array(B, dtype=_np.result_type(T, B))
    wide = _FMA_WIDE.get(X.dtype) if n <= 16 else None
    starts = range(0, n, block)
    with _np.errstate(all="ignore"):
        for start in (reversed(starts) if upper else starts):
            stop = min(start + block, n)
            solved = slice(stop, n) if upper else slice(0, start)
            if solved.start != solved.stop:
                X[..., start:stop, :] -= T[..., start:stop, solved] @ X[..., solved, :]
            for j in (range(stop - 1, start - 1, -1) if upper else range(start, stop)):
                X[..., j, :] *= (1 / T[..., j, j])[..., None]
                rest = slice(start, j) if upper else slice(j + 1, stop)
                if rest.start == rest.stop:
                    continue
                if wide is None:
                    X[..., rest, :] -= T[..., rest, j, None] * X[..., j, None, :]
                else:
                    X[..., rest, :] = (X[..., rest, :].astype(wide)
                                       - T[..., rest, j, None].astype(wide)
                                       * X[..., j, None, :].astype(wide))
    return X


class _TriangularSolve(_Function):
    """X = T^-1 B for a triangular T (the caller takes the triangle and broadcasts the batch):
    _Solve's gradients (gB = T^-H G, gT = -gB X^H, which the caller's triu/tril keeps in the
    triangle), each solve by substitution."""

    @staticmethod
    def forward(ctx, T, B, upper, column_major=True):
        # (column_major=False for X A = B, solved as A^T X^T = B^T: X^T row-major makes the X the
        # caller returns column-major, as PyTorch's for either side)
        X = _tensor(_substitute(T._array, B._array, upper), T, lapack=column_major)
        ctx.save_for_backward(T, X)
        ctx.upper = upper
        return X

    @staticmethod
    def backward(ctx, grad):
        T, X = ctx.saved_tensors
        grad_B = _TriangularSolve.apply(_adjoint(T), grad, not ctx.upper)
        return -(grad_B @ _adjoint(X)), grad_B, None, None


_torch_grad_fn_name(_TriangularSolve, "LinalgSolveTriangularBackward0")


def vecdot(x, y, *, dim=-1):
    """The dot product of x and y along ``dim``, broadcasting the other dims (x conjugated, as
    PyTorch's: the inner product of complex vectors)."""
    _as_tensor(x, "linalg_vecdot", "x", 1)
    _as_tensor(y, "linalg_vecdot", "y", 2)
    if x.dtype != y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x "
                           f"of type {_core.scalar_type_name_of(x._array.dtype)} and y of type "
                           f"{_core.scalar_type_name_of(y._array.dtype)} instead")
    if x.ndim == 1 and y.ndim == 1 and x.shape != y.shape:
        # two vectors: PyTorch's vdot, which does not broadcast
        n, m = x.shape[0], y.shape[0]
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to "
                           f"have the same number of elements, but got {n} and {m} elements "
                           "respectively")
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError("linalg.vecdot: Expected a floating point or complex tensor as input. "
                           f"Got {_core.scalar_type_name_of(x._array.dtype)}")
    result = ((x.conj() if x.is_complex() else x) * y).sum(dim)
    return result


def matrix_rank(input, tol=None, hermitian=False, *, atol=None, rtol=None):
    """The number of singular values above the tolerance, per matrix (int64).  ``tol`` is
    PyTorch's older spelling of an absolute tolerance (atol=tol, rtol=0)."""
    A = _as_tensor(input, "linalg_matrix_rank")
    atol, rtol = _legacy_tolerance("linalg_matrix_rank", "tol", tol, atol, rtol,
                                   _MATRIX_RANK_SIGNATURES, absolute=True)
    _core.check_bool("linalg_matrix_rank", "hermitian", hermitian, 0, _MATRIX_RANK_SIGNATURES)
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least "
                           "2 dimensions.")
    _check_float(A, "torch.linalg.matrix_rank")
    _refuse_complex_tolerance("torch.linalg.matrix_rank", atol, rtol)
    with _no_grad():
        S = eigvalsh(A).abs() if hermitian else svdvals(A)
        tolerance = _count_tolerance(S, atol, rtol, A.shape)
        return (S > tolerance).sum(dim=-1)


# PyTorch's signatures of pinv and matrix_rank, which its parser lists for a call that fits none
_PINV_SIGNATURES = "".join(f" * (Tensor input, {rest})\n" for rest in (
    "*, Tensor atol = None, Tensor rtol = None, bool hermitian = False, Tensor out = None",
    "*, float atol = None, float rtol = None, bool hermitian = False, Tensor out = None",
    "Tensor rcond, bool hermitian = False, *, Tensor out = None",
    "float rcond, bool hermitian = False, *, Tensor out = None"))
_MATRIX_RANK_SIGNATURES = _PINV_SIGNATURES.replace("Tensor rcond", "Tensor tol").replace(
    "float rcond", "float tol")


def _refuse_complex_tolerance(fn, atol, rtol):
    """PyTorch's refusal of a complex tolerance tensor (a real number compares the magnitudes)."""
    for name, tol in (("atol", atol), ("rtol", rtol)):
        if isinstance(tol, _core.TensorBase) and tol.is_complex():
            raise RuntimeError(f"{fn}: {name} tensor of complex type is not supported. Got "
                               f"{_core.scalar_type_name_of(tol._array.dtype)}")


def _legacy_tolerance(fn, name, value, atol, rtol, signatures, absolute):
    """(atol, rtol) from the older positional tolerance (matrix_rank's ``tol``, absolute;
    pinv's ``rcond``, relative), which PyTorch's overloads do not let mix with atol/rtol."""
    if value is None:
        return atol, rtol
    if atol is not None or rtol is not None:
        given = ", ".join(f"{k}={type(v).__name__ if not isinstance(v, _core.TensorBase) else 'Tensor'}"
                          for k, v in (("atol", atol), ("rtol", rtol)) if v is not None)
        raise TypeError(f"{fn}() received an invalid combination of arguments - got (Tensor, "
                        f"{'Tensor' if isinstance(value, _core.TensorBase) else type(value).__name__}, "
                        f"{given}), but expected one of:\n{signatures}")
    return (value, 0.0) if absolute else (0.0, value)


def pinv(input, rcond=None, hermitian=False, *, atol=None, rtol=None):
    """The Moore-Penrose pseudo-inverse through the SVD (torch.linalg.pinv); singular values at
    or below the tolerance count as zero.  ``rcond`` is PyTorch's older spelling of a relative
    tolerance (rtol=rcond, atol=0)."""
    A = _as_tensor(input, "linalg_pinv")
    atol, rtol = _legacy_tolerance("linalg_pinv", "rcond", rcond, atol, rtol, _PINV_SIGNATURES,
                                   absolute=False)
    _core.check_bool("linalg_pinv", "hermitian", hermitian, 0, _PINV_SIGNATURES)
    if A.ndim < 2 or A._array.dtype.kind not in "fc" or A._array.dtype == _np.float16:
        raise RuntimeError(
            f"linalg.pinv({_core.scalar_type_name_of(A._array.dtype)}{{{list(A.shape)}}}): "
            "expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble "
            "types")
    _refuse_complex_tolerance("torch.linalg.pinv", atol, rtol)
    return _PseudoInverse.apply(A, atol, rtol, hermitian)


class _PseudoInverse(_Function):
    """pinv's forward through the SVD (eigh when hermitian); its gradient from the
    pseudo-inverse P itself, dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P, as
    PyTorch differentiates it.  Differentiating through the factorisation instead is wrong at
    repeated singular values and at dropped (zero) ones, where a rank-deficient A sits."""

    @staticmethod
    def forward(ctx, A, atol, rtol, hermitian):
        from . import where, zeros_like
        if hermitian:
            values, vectors = eigh(A)
            magnitude = values.abs()
            keep = magnitude > _count_tolerance(magnitude, atol, rtol, A.shape)
            safe = where(keep, values, 1 + zeros_like(values))
            inverse = where(keep, 1 / safe, zeros_like(values))
            pseudo_inverse = (vectors * inverse.unsqueeze(-2)) @ _adjoint(vectors)
        else:
            U, S, Vh = svd(A, full_matrices=False)
            keep = S > _count_tolerance(S, atol, rtol, A.shape)
            # The division runs on safe values so a dropped zero gives no inf.
            safe = where(keep, S, 1 + zeros_like(S))
            inverse = where(keep, 1 / safe, zeros_like(S))
            pseudo_inverse = (_adjoint(Vh) * inverse.unsqueeze(-2)) @ _adjoint(U)
        ctx.save_for_backward(A, pseudo_inverse)
        return pseudo_inverse

    @staticmethod
    def backward(ctx, grad):
        # The adjoint of the differential above:
        # -P^H G P^H + (I - A P) G^H P P^H + P^H P G^H (I - P A), with each (I - X) product
        # expanded so no identity is formed.
        A, P = ctx.saved_tensors
        P_h, grad_h = _adjoint(P), _adjoint(grad)
        left = grad_h @ P @ P_h
        right = P_h @ P @ grad_h
        grad_A = -(P_h @ grad @ P_h) + left - A @ (P @ left) + right - (right @ P) @ A
        return grad_A, None, None, None


_torch_grad_fn_name(_PseudoInverse, "LinalgPinvBackward0")


def matrix_power(input, n):
    """A to the integer power n by repeated squaring (n < 0 inverts first; n = 0 gives the
    identity), as torch.linalg.matrix_power."""
    A = _as_tensor(input, "linalg_matrix_power", "input")
    if isinstance(n, bool) or not isinstance(n, (int, _np.integer)):
        raise TypeError("linalg_matrix_power(): argument 'n' (position 2) must be int, not "
                        f"{_type_name(n)}")
    _check_square(A, "linalg.matrix_power")
    if n == 0:
        # As PyTorch: the identity copied into a tensor that stays in A's graph (zero
        # gradient), not a fresh constant.
        from . import eye
        return A.clone().copy_(eye(A.shape[-1], dtype=A.dtype).expand(*A.shape))
    if n == 1:
        return A.clone()
    if n < 0:
        A = inv(A)
        n = -n
    if n == 3:
        return (A @ A) @ A          # (PyTorch's order for 3; in float32 an ulp apart from A @ A²)
    result = None
    power = A
    while n:
        if n & 1:
            result = power if result is None else result @ power
        n >>= 1
        if n:
            power = power @ power
    return result


def multi_dot(tensors):
    """The product of a chain of matrices; the first may be a row vector and the last a column
    vector (1-D), as torch.linalg.multi_dot."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"linalg_multi_dot(): argument 'tensors' (position 1) must be tuple of "
                        f"Tensors, not {_type_name(tensors)}")
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, _core.TensorBase):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{_type_name(t)}")
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first, last = tensors[0], tensors[-1]
    if first.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got "
                           f"{first.ndim}D")
    if last.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last.ndim}D")
    for i, t in enumerate(tensors[1:-1], start=1):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    for i, t in enumerate(tensors[1:], start=1):
        if t.dtype != first.dtype:
            raise RuntimeError(
                "multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                f"{_core.c_type_name_of(first._array.dtype)} and tensor {i} "
                f"{_core.c_type_name_of(t._array.dtype)}")
    matrices = list(tensors)
    if first.ndim == 1:
        matrices[0] = first.unsqueeze(0)
    if last.ndim == 1:
        matrices[-1] = last.unsqueeze(-1)
    for i in range(len(matrices) - 1):
        if matrices[i].shape[1] != matrices[i + 1].shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {list(matrices[i].shape)} "
                f"and {list(matrices[i + 1].shape)} cannot be multiplied")
    out_shape = ([first.shape[0]] if first.ndim == 2 else []) + \
        ([last.shape[1]] if last.ndim == 2 else [])
    # (a view of the last product, as PyTorch's: the result is a view)
    return _chain_product(matrices).view(out_shape)


def _chain_product(matrices):
    """The product of a chain of 2-D tensors in PyTorch's multi_dot order: the order matters
    beyond rounding, since each product saves its operands for backward (a later in-place write
    into a matrix refuses only the backward of a product that saved it)."""
    n = len(matrices)
    if n == 2:
        return matrices[0].mm(matrices[1])
    if n == 3:
        # (a x b) (b x c) (c x d): (AB)C unless A(BC) costs strictly fewer multiplications
        a, b = matrices[0].shape
        c, d = matrices[2].shape
        if a * c * (b + d) > b * d * (a + c):
            return matrices[0].mm(matrices[1].mm(matrices[2]))
        return matrices[0].mm(matrices[1]).mm(matrices[2])
    split = _chain_order([m.shape[0] for m in matrices] + [matrices[-1].shape[1]])

    def product(i, j):
        if i == j:
            return matrices[i]
        k = split[i][j]
        return product(i, k).mm(product(k + 1, j))
    return product(0, n - 1)


def _chain_order(p):
    """split[i][j]: where the cheapest product of matrices i..j (matrix k is p[k] x p[k + 1])
    splits, as PyTorch's matrix_chain_order (the classic dynamic programme; a tie keeps the
    first split)."""
    n = len(p) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or q < cost[i][j]:
                    cost[i][j], split[i][j] = q, k
    return split


def _same_scalar_type(input, other) -> None:
    """PyTorch's check of kernels that take no promotion (cross, cdist): other's dtype must be
    input's."""
    if input._array.dtype != other._array.dtype:
        name = _core.scalar_type_name_of
        raise RuntimeError(f"expected scalar type {name(input._array.dtype)} but found "
                           f"{name(other._array.dtype)}")


def cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along dim, broadcasting the rest (torch.linalg.cross)."""
    from ._extra_ops import _check_tensor
    _check_tensor(input, "linalg_cross")
    _check_tensor(other, "linalg_cross", "other", 2)
    _same_scalar_type(input, other)
    if input._array.dtype == _np.bool_:
        raise NotImplementedError("\"cross\" not implemented for 'Bool'")
    if input.ndim != other.ndim:
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions.")
    from ._extra_ops import _dim
    _dim(dim, input.ndim)                       # (PyTorch's IndexError for a dim out of range)
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[dim]} and {other.shape[dim]}")
    # the whole shapes broadcast first, as PyTorch's infer_size: a mismatch names its dimension
    # in the inputs, not in the slices along dim below (cross of (3, 3) and (3, 2) along 0)
    from ._extra_ops import _broadcast_shapes
    _broadcast_shapes(tuple(input.shape), tuple(other.shape))
    from . import stack
    axis = dim if dim < 0 else dim - input.ndim

    def part(t, i):
        return t[(Ellipsis, i) + (slice(None),) * (-axis - 1)]

    a = [part(input, i) for i in range(3)]
    b = [part(other, i) for i in range(3)]
    product = stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]], dim=axis)
    return _core._name_grad_fn(product, "LinalgCrossBackward0")


# ---------------------------------------------------------------------------------------------
# QR and least squares

def _qr_backward_tall(Q, R, grad_Q, grad_R):
    """The adjoint of A = Q R for m >= n (reduced Q): with M = R gR^H - gQ^H Q and copyltu(M)
    the Hermitian matrix built from M's lower triangle (real diagonal), gA = (gQ + Q copyltu(M))
    R^-H."""
    M = R @ _adjoint(grad_R) - _adjoint(grad_Q) @ Q
    symmetric = M.tril() + _adjoint(M.tril(-1))
    if M.is_complex():          # R's diagonal is real: only Re diag(M) moves it
        from . import eye
        identity = eye(M.shape[-1], dtype=M.real.dtype)
        symmetric = symmetric - 1j * identity * M.diagonal(0, -2, -1).imag.unsqueeze(-2)
    # (a triangular solve, as PyTorch's: a singular R gives inf / NaN, where inv(R) raised)
    return solve_triangular(_adjoint(R), grad_Q + Q @ symmetric, upper=False, left=False)


def _householder_input(arr: _np.ndarray) -> _np.ndarray:
    """arr with its zeros made +0.0, for a Householder QR (geqrf): LAPACK's reflector takes the
    sign of each column's leading entry, and numpy's LAPACK reads -0.0 as negative where
    PyTorch's reads it as positive, so a -0.0 there flipped a whole row of R and column of Q
    (qr([[-0.0], [0.5]]): R = 0.5 here, -0.5 in PyTorch; fuzz 65100597)."""
    return arr + 0.0


class _QR(_Function):
    @staticmethod
    def forward(ctx, A, mode):
        Q, R = _np.linalg.qr(_householder_input(A._array),
                            mode="complete" if mode == "complete" else "reduced")
        Q, R = _tensor(Q, A, lapack=True), _tensor(R, A, lapack=True)
        ctx.save_for_backward(Q, R)
        _keep_factored_input(ctx, A)
        ctx.mode = mode
        return Q, R

    @staticmethod
    def backward(ctx, grad_Q, grad_R):
        with _no_grad():     # the outputs are re-derived below when the graph is needed
            Q, R = ctx.saved_tensors
        m, n = Q.shape[-2], R.shape[-1]
        if ctx.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                               "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                               "going to differentiate through linalg.qr.")
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                               "and nrows > ncols.")
        if _is_grad_enabled():
            # create_graph: see _Eigh.backward.
            Q, R = _QR.apply(_factored_input(ctx), ctx.mode)
        if m >= n:
            return _qr_backward_tall(Q, R, grad_Q, grad_R), None
        # Wide: A = Q [R1 R2] with X = A[:, :m] = Q R1 square; Y = A[:, m:] = Q R2 moves Q's
        # cotangent by Y gR2^T (Y from the saved factors, as PyTorch's: A may be written since).
        Y, grad_R2 = Q @ R[..., :, m:], grad_R[..., :, m:]
        grad_X = _qr_backward_tall(Q, R[..., :, :m], grad_Q + Y @ _adjoint(grad_R2),
                                   grad_R[..., :, :m])
        from . import cat
        return cat([grad_X, Q @ grad_R2], dim=-1), None


_torch_grad_fn_name(_QR, "LinalgQrBackward0")


def qr(A, mode="reduced"):
    """A = Q R per matrix (torch.linalg.qr): mode 'reduced', 'complete' or 'r' (an empty Q)."""
    A = _as_tensor(A, "linalg_qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    _check_matrix(A, "linalg.qr")
    _check_float(A, "linalg.qr")
    Q, R = _QR.apply(A, mode)
    if mode == "r":
        from . import empty
        Q = empty(0, dtype=A.dtype)
    return _return_type("linalg_qr")((Q, R))


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(input, b, rcond=None, *, driver=None):
    """The least-squares solution of A X = B (torch.linalg.lstsq, CPU default driver 'gelsy'),
    through the pseudo-inverse.  The other fields follow the driver as PyTorch's do: ``rank``
    for every driver but 'gels' (which refuses a rank-deficient A instead); ``residuals``, the
    squared residual of each column, when m > n, every matrix has full rank and the driver is
    not 'gelsy'; ``singular_values`` for 'gelsd' and 'gelss'.  Fields a driver does not
    compute are empty; residuals and singular values are real.  B is a batch of vectors when it
    has one dimension fewer."""
    A = _as_tensor(input, "linalg_lstsq", "input")
    B = _as_tensor(b, "linalg_lstsq", "b", 2)
    # PyTorch's order of checks: rank, dtypes, shapes, driver, then a floating dtype
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if B.ndim < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if A.dtype != B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype "
                           f"{_core.scalar_type_name_of(A._array.dtype)} and other's dtype "
                           f"{_core.scalar_type_name_of(B._array.dtype)}")
    if not (A.ndim >= B.ndim and A.ndim - B.ndim <= 1):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to "
                           "other.dim() and (input.dim() - other.dim()) <= 1")
    # A vector right-hand side is 1-D or exactly A's shape without its last dim (linalg.solve's
    # rule); any other B with one dim fewer than A is a matrix, (..., m, k).
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector and B.shape[-1] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-1)")
    if not vector and B.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    if driver is None:
        driver = "gelsy"
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of "
                           "(gels, gelsy, gelsd, gelss)")
    _check_float(A, "torch.linalg.lstsq")
    m, n = A.shape[-2], A.shape[-1]
    eps = _np.finfo(A._array.dtype).eps
    rtol = eps * max(m, n) if rcond is None else rcond
    from . import empty
    real = A.real.dtype if A.is_complex() else A.dtype
    with _no_grad():
        rank = matrix_rank(A, rtol=rtol)
    quick = None
    if driver == "gels":
        quick = _gels_quick_returns(A)
        _refuse_rank_deficient_gels(rank, quick, min(m, n))
    B_matrix = _lstsq_broadcast_rhs(A, B.unsqueeze(-1) if vector else B)
    # (laid out in LAPACK's buffer of max(m, n) rows, as PyTorch's)
    solution = _LapackLayout.apply(pinv(A, rtol=rtol) @ B_matrix, max(m, n), (A, B))
    # (gels refused the rank-deficient matrices it did not return quickly on)
    full_rank = driver == "gels" or not rank.numel() or bool((rank == min(m, n)).all())
    if m > n and full_rank and driver != "gelsy":
        residuals = (A @ solution - B_matrix).abs().pow(2).sum(dim=-2)
        if quick is not None and quick.any():
            # LAPACK's quick return zeroes B, whose rows below n are what it reports
            from . import where
            residuals = where(_wrap_mask(quick, A.shape[:-2]).unsqueeze(-1), 0.0, residuals)
        _core._name_grad_fn(residuals, "LinalgLstsqBackward0")
    else:
        # (empty, yet an output of the recorded solve in PyTorch: requires grad as solution)
        residuals = _core._name_grad_fn(solution.abs().reshape(-1)[:0], "LinalgLstsqBackward0")
    if vector:
        solution = solution.squeeze(-1)
    _core._name_grad_fn(solution, "LinalgLstsqBackward0")
    if driver in ("gelsd", "gelss"):
        with _no_grad():
            singular_values = svdvals(A)
    else:
        singular_values = empty(0, dtype=real)
    if driver == "gels":
        rank = empty(0, dtype=rank.dtype)
    result = _return_type("linalg_lstsq")
    return result((solution, residuals, rank, singular_values))


def _lstsq_broadcast_rhs(A, B):
    """B (..., m, k) expanded to the batch PyTorch's lstsq solves: the broadcast of A's batch
    dims with B's first A.ndim - 2 dims.  A matrix B with one dim fewer than A contributes its
    own row dim there, so PyTorch solves a (1, m, n) A against an (m, k) B m times, and refuses
    a (p, m, n) A with p not 1 or m; both as it does, with its broadcasting errors."""
    from .creation import _broadcast_shapes
    batch = _broadcast_shapes(tuple(A.shape[:A.ndim - 2]), tuple(B.shape[:A.ndim - 2]))
    # (PyTorch copies B into the solution buffer: a copy_'s broadcast, the buffer as tensor a)
    _broadcast_shapes(tuple(batch) + tuple(B.shape[-2:]), tuple(B.shape))
    return B.expand(*batch, *B.shape[-2:])


def _gels_quick_returns(A):
    """Per matrix of A (flattened batch), whether LAPACK's gels returns at once without
    factoring: an empty or all-zero matrix (its solution zero, its B zeroed)."""
    m, n = A.shape[-2], A.shape[-1]
    count = int(_np.prod(A.shape[:-2], dtype=_np.int64))
    flat = A._array.reshape((count, m * n))
    return ~(_np.abs(flat).max(axis=-1, initial=0) > 0)


def _wrap_mask(mask, batch_shape):
    from . import tensor
    return tensor(mask.reshape(tuple(batch_shape)))


def _refuse_rank_deficient_gels(rank, quick, full):
    """'gels' solves through a QR (m >= n) or LQ (m < n) factorization with no rank revealing
    and fails on a zero diagonal entry of its triangular factor, which PyTorch reports as a
    LinAlgError naming that entry (the numerical rank + 1 here), except where it returned at
    once (`quick`)."""
    for matrix_rank_, returned in zip(rank.reshape(-1)._array, quick):
        if not returned and matrix_rank_ < full:
            raise LinAlgError(
                "torch.linalg.lstsq: The least squares solution could not be computed because "
                f"the input matrix does not have full rank (error code: {matrix_rank_ + 1}).")


def householder_product(input, tau):
    """The first n columns of the product H_1 ... H_k of Householder reflectors
    H_i = I - tau_i v_i v_i^H, v_i stored below the diagonal of column i of ``A`` (m, n) with an
    implicit unit leading entry (LAPACK's orgqr; ``geqrf``'s output gives the Q of the QR
    decomposition).  Batched; differentiable in ``A`` and ``tau`` (one rank-one update per
    reflector, from recorded ops).

    Examples
    --------
    >>> A = tapegrad.tensor([[1., 2.], [3., 4.], [5., 6.]])
    >>> a, tau = tapegrad.geqrf(A)
    >>> Q = tapegrad.linalg.householder_product(a, tau)
    >>> bool(tapegrad.allclose(Q.T @ Q, tapegrad.eye(2), atol=1e-6))
    True
    """
    name = "torch.linalg.householder_product"
    A = _as_tensor(input, "linalg_householder_product", "input")
    tau = _as_tensor(tau, "linalg_householder_product", "tau", 2)
    if A.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {tau.ndim} and input.ndim is equal to {A.ndim}")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if n < tau.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tau.dtype != A.dtype:
        names = {"float32": "Float", "float64": "Double", "float16": "Half"}
        raise RuntimeError(f"{name}: tau dtype {names.get(str(tau.dtype)[6:], tau.dtype)} does "
                           f"not match input dtype {names.get(str(A.dtype)[6:], A.dtype)}")
    _check_float(A, name)
    from . import eye
    Q = eye(m, n, dtype=A.dtype).expand(*A.shape[:-2], m, n)
    if tau.shape[-1] == 0:
        # No reflector: Q is the identity, yet an output of A and tau as in PyTorch (requires
        # grad, zero gradient).  Their empty slices add nothing, whatever values they hold.
        Q = Q + A[..., :0, :0].sum((-2, -1), keepdim=True) + \
            tau[..., :0].sum(-1, keepdim=True).unsqueeze(-1)
    Q = _apply_reflectors(A, tau, Q, left=True, adjoint=False)
    return _in_lapack_layout(Q, "LinalgHouseholderProductBackward0", (A, tau))


def _apply_reflectors(A, tau, C, *, left, adjoint):
    """op(Q) C (``left``) or C op(Q) for Q = H_1 ... H_k, H_i = I - tau_i v_i v_i^H with v_i
    below the diagonal of column i of ``A`` and a unit leading entry, op the conjugate
    transpose when ``adjoint`` (LAPACK's ormqr).  One rank-one update per reflector, from
    recorded ops, so differentiable in A, tau and C."""
    from . import eye
    m, k = A.shape[-2], tau.shape[-1]
    reflectors = A[..., :, :k].tril(-1) + eye(m, k, dtype=A.dtype)     # unit leading entries
    # Q C applies H_k first; Q^H C = H_k^H ... H_1^H C applies H_1^H first; on the right the
    # other way round.
    order = range(k) if left == adjoint else reversed(range(k))
    for i in order:
        v = reflectors[..., :, i:i + 1]
        scale = tau[..., i:i + 1].unsqueeze(-1)
        if adjoint:
            scale = scale.conj()
        C = C - scale * (v @ (v.mH @ C)) if left else C - scale * ((C @ v) @ v.mH)
    return C


# The LU family, the _ex variants and the small composites (their own module).
from ._linalg_factor import (cholesky_ex, diagonal, inv_ex, lu, lu_factor,  # noqa: E402
                             lu_factor_ex, lu_solve, matmul, solve_ex, tensorinv, tensorsolve,
                             vander)
__all__ += ["cholesky_ex", "diagonal", "inv_ex", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
            "matmul", "solve_ex", "tensorinv", "tensorsolve", "vander"]
# The LDL family (Bunch-Kaufman; its own module).
from ._linalg_ldl import ldl_factor, ldl_factor_ex, ldl_solve  # noqa: E402
__all__ += ["ldl_factor", "ldl_factor_ex", "ldl_solve"]

from . import _out_arg  # noqa: E402
from ._public_calls import install as _install_public_calls  # noqa: E402
_install_public_calls(globals(), _out_arg.LINALG_OUT_FUNCTIONS, "linalg_")  # the public functions' entry (the meta device dispatches there)

# A missing name is reported under PyTorch's module name (module 'torch...' has no attribute).
from ._torch_names import report_missing_names_as_torch as _report_missing_names_as_torch  # noqa: E402
_report_missing_names_as_torch(__name__)
