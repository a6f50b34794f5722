"""PyTorch's older top-level spellings of linear algebra (torch.inverse, torch.det,
torch.logdet, torch.slogdet, torch.cholesky, torch.pinverse, torch.matrix_power, torch.svd) and
the matching Tensor methods, all forwarding to tapegrad.linalg.

tapegrad.linalg is imported on the first call, not here, so that `import tapegrad` stays free of
the autograd machinery linalg needs.
"""
from __future__ import annotations as _annotations

from . import _core
from ._class_members import has_member

_CHOLESKY_DEPRECATED = (
    "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a "
    "future PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\n"
    "L = torch.linalg.cholesky(A)\nand\nU = torch.cholesky(A, upper=True)\nshould be replaced "
    "with\nU = torch.linalg.cholesky(A).mH\nThis transform will produce equivalent results for "
    "all valid (symmetric positive definite) inputs.")


def _linalg():
    from . import linalg
    return linalg


def inverse(input):
    """torch.inverse: torch.linalg.inv."""
    return _linalg().inv(input)


def det(input):
    """torch.det: torch.linalg.det."""
    return _linalg().det(input)


def slogdet(input):
    """torch.slogdet: (sign, logabsdet) as torch.return_types.slogdet."""
    sign, logabsdet = _linalg().slogdet(input)
    return _core.return_types.slogdet((sign, logabsdet))


def logdet(input):
    """log det(A): nan for a negative determinant, -inf for a zero one (torch.logdet)."""
    linalg = _linalg()
    linalg._as_tensor(input, "logdet")
    linalg._check_square(input, "logdet")
    linalg._check_float(input, "logdet")
    sign, logabsdet = linalg.slogdet(input)
    if input.is_complex():
        return sign.log() + logabsdet       # (PyTorch's composition for complex matrices)
    # PyTorch's where(sign == -1, nan, logabsdet): a negative determinant's NaN has gradient 0
    # (adding log(sign) gave the same values but passed logabsdet's gradient through the NaN)
    return _core.where(sign == -1, float("nan"), logabsdet)


def cholesky(input, upper=False):
    """The deprecated torch.cholesky (upper as a positional flag)."""
    _core.check_bool("cholesky", "upper", upper)
    _core.warn_once(_CHOLESKY_DEPRECATED, "aten/src/ATen/native/BatchLinearAlgebra.cpp:1765")
    return _core._name_grad_fn(_linalg()._cholesky(input, upper, "cholesky"), "CholeskyBackward0")


def pinverse(input, rcond=1e-15):
    """torch.pinverse: the pseudo-inverse, dropping singular values below rcond * largest."""
    return _linalg().pinv(input, rtol=rcond)


def matrix_power(input, n):
    """torch.matrix_power: torch.linalg.matrix_power."""
    return _linalg().matrix_power(input, n)


def svd(input, some=True, compute_uv=True):
    """The old torch.svd: returns V (not Vh); some=False gives full square factors and
    compute_uv=False zero-filled square U and V."""
    linalg = _linalg()
    _core.check_bool("svd", "some", some)
    _core.check_bool("svd", "compute_uv", compute_uv)
    if input.ndim < 2:
        raise RuntimeError(f"linalg.svd: input should have at least 2 dimensions, but has "
                           f"{input.ndim} dimensions instead")
    result_type = _core.return_types.svd
    if not compute_uv:
        from . import zeros
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        U = zeros(*batch, m, m, dtype=input.dtype)
        V = zeros(*batch, n, n, dtype=input.dtype)
        return result_type((U, linalg.svdvals(input), V))
    U, S, Vh = linalg.svd(input, full_matrices=not some)
    return result_type((U, S, Vh.mH))     # V = Vh^H (for complex A not Vh^T)


FUNCTIONS = ("inverse", "det", "slogdet", "logdet", "cholesky", "pinverse", "matrix_power", "svd")
METHODS = FUNCTIONS


# The named tuples of tapegrad.linalg's results and of the aliases above, made at import (as
# torch.return_types has them all, before any call): tapegrad.linalg is loaded on first use.
RETURN_TYPES = {
    "linalg_slogdet": ("sign", "logabsdet"), "slogdet": ("sign", "logabsdet"),
    "linalg_eigh": ("eigenvalues", "eigenvectors"), "linalg_eig": ("eigenvalues", "eigenvectors"),
    "linalg_svd": ("U", "S", "Vh"), "svd": ("U", "S", "V"), "linalg_qr": ("Q", "R"),
    "linalg_lstsq": ("solution", "residuals", "rank", "singular_values"),
    "linalg_lu_factor": ("LU", "pivots"), "linalg_lu_factor_ex": ("LU", "pivots", "info"),
    "linalg_lu": ("P", "L", "U"), "linalg_inv_ex": ("inverse", "info"),
    "linalg_solve_ex": ("result", "info"), "linalg_cholesky_ex": ("L", "info"),
    "linalg_ldl_factor": ("LD", "pivots"), "linalg_ldl_factor_ex": ("LD", "pivots", "info"),
}


def register(namespace: dict, tensor_cls) -> None:
    """Add the functions to the tapegrad namespace and the methods to Tensor (existing names
    win), and the linalg result types to tapegrad.return_types."""
    from ._extra_ops import register_return_types
    register_return_types(RETURN_TYPES)
    g = globals()
    for name in FUNCTIONS:
        namespace.setdefault(name, g[name])
    for name in METHODS:
        if not has_member(tensor_cls, name):
            setattr(tensor_cls, name, g[name])


__all__ = list(FUNCTIONS)
