"""torch.nn.utils.parametrizations: orthogonal, weight_norm and spectral_norm as
parametrizations (``nn.utils.parametrize``): the stored tensors live under
``module.parametrizations.<name>``, and ``module.<name>`` is recomputed on access."""
from __future__ import annotations as _annotations

from enum import Enum, auto

import tapegrad as _tg
from ...grad_mode import no_grad
from ...tensor import Tensor
from .. import functional as F
from ..modules.module import Module
from . import parametrize
from .spectral_norm import (_is_conv_transpose, check_power_iterations, power_step,
                            weight_to_matrix)
from .weight_norm import _weight_norm

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.size(-2), Q.size(-1)
    eps = 10.0 * n * _tg.finfo(Q.dtype).eps
    return bool(_tg.allclose(Q.mH @ Q, _tg.eye(k, dtype=Q.dtype), atol=eps))


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of A = QR (A tall) with R's diagonal made non-negative."""
    X, tau = _tg.geqrf(A)
    Q = _tg.linalg.householder_product(X, tau)
    return Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """Maps any matrix (batch) to an orthogonal one of the same shape: through the matrix
    exponential or Cayley map of a skew-symmetric matrix made from its lower triangle, or a
    product of Householder reflectors stored below its diagonal; with the dynamic trivialization
    the result is multiplied by an orthogonal ``base`` that assignment resets."""

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = _tg.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _tg.matrix_exp(A)
            else:
                eye = _tg.eye(n, dtype=A.dtype)
                Q = _tg.linalg.solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _tg.linalg.householder_product(A, tau)
            # The diagonal's signs (+-1, stored by right_inverse) flip the reflectors' columns.
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix "
                                              "exponential or the Cayley parametrizations when "
                                              "use_trivialization=False.")
                A, tau = _tg.geqrf(Q)
                # Store the signs of R's diagonal on the diagonal (a reflector with tau == 0
                # is the identity, so its column's sign flips back).
                signs = A.diagonal(dim1=-2, dim2=-1).sign()
                signs = _tg.where(tau == 0.0, -signs, signs)
                on_diagonal = _tg.eye(n, k, dtype=_tg.bool)
                A = _tg.where(on_diagonal, signs.unsqueeze(-2), A)
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                N = _tg.randn(*(Q.size()[:-2] + (n, n - k)), dtype=Q.dtype)
                Q = _make_orthogonal(_tg.cat([Q, N], dim=-1))
            self.base = Q
            # The parametrization of -I is I (for every map), so the product base @ I = Q.
            neg_id = _tg.zeros_like(Q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Make the matrix (or batch of matrices) ``module.<name>`` orthogonal: orthonormal columns
    when it is tall, orthonormal rows when it is wide.

    ``orthogonal_map`` is ``"matrix_exp"``, ``"cayley"`` or ``"householder"`` (default:
    ``"matrix_exp"`` for square or complex matrices, ``"householder"`` otherwise).  With
    ``use_trivialization`` (default) an orthogonal ``base`` is stored in
    ``module.parametrizations.<name>[0].base`` and the initial value is the original matrix made
    orthogonal by QR.

    Examples
    --------
    >>> m = tapegrad.nn.utils.parametrizations.orthogonal(tapegrad.nn.Linear(5, 5))
    >>> Q = m.weight
    >>> bool(tapegrad.dist(Q.T @ Q, tapegrad.eye(5)) < 1e-5)
    True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.size(-2) == weight.size(-1)
                          or weight.is_complex() else "householder")
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    """(g, v) -> g * v / ||v||, the norm over every dimension but ``dim``."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor):
        return _tg.norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||``: the magnitude ``g`` is stored as
    ``parametrizations.<name>.original0`` and the direction ``v`` as ``original1``.  The norm is
    taken per slice along ``dim`` (over the whole tensor with ``dim=None``).  A state dict of
    the hook-based ``nn.utils.weight_norm`` (``<name>_g``/``<name>_v``) loads into it.

    Examples
    --------
    >>> m = tapegrad.nn.utils.parametrizations.weight_norm(tapegrad.nn.Linear(20, 40), name="weight")
    >>> m.parametrizations.weight.original0.size()
    torch.Size([40, 1])
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def load_hook_based_keys(state_dict, prefix, local_metadata, strict, missing_keys,
                             unexpected_keys, error_msgs) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(load_hook_based_keys)
    return module


class _SpectralNorm(Module):
    """W -> W / sigma(W), sigma estimated by the power method on W reshaped to a matrix with rows
    along ``dim``; the singular vectors are buffers ``_u``, ``_v``, refined
    ``n_power_iterations`` times per access in training mode.  A vector is just normalized."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        check_power_iterations(n_power_iterations)
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            matrix = weight_to_matrix(weight, self.dim)
            h, w = matrix.size()
            with no_grad():
                u = matrix.new_empty(h).normal_(0, 1)
                v = matrix.new_empty(w).normal_(0, 1)
                self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            # Start from good estimates rather than random vectors.
            for _ in range(15):
                power_step(matrix, self._u, self._v, self.eps, left_first=True)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        return weight_to_matrix(weight, self.dim)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        matrix = weight_to_matrix(weight, self.dim)
        if self.training:
            for _ in range(self.n_power_iterations):
                power_step(matrix, self._u, self._v, self.eps, left_first=True)
        sigma = _tg.vdot(self._u.clone(), _tg.mv(matrix, self._v.clone()))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Reparametrize ``module.<name>`` as itself divided by its largest singular value (the
    tensor reshaped to a matrix with rows along ``dim``: 0, or 1 for ConvTranspose layers),
    estimated by the power method (``n_power_iterations`` per access in training mode).

    Examples
    --------
    >>> m = tapegrad.nn.utils.parametrizations.spectral_norm(tapegrad.nn.Linear(20, 40))
    >>> m.parametrizations.weight.original.size()
    torch.Size([40, 20])
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if _is_conv_transpose(module) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
