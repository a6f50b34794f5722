"""Helpers the distributions share: broadcasting parameters, probs <-> logits, lazy properties."""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core, _vmap
from .._type_info import finfo
from ..creation import _broadcast_shapes, empty, tensor

__all__ = ["broadcast_all", "clamp_probs", "euler_constant", "is_tensor_like", "lazy_property",
           "logits_to_probs", "probs_to_logits", "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060   # Euler-Mascheroni constant


def broadcast_all(*values):
    """The arguments as tensors of one broadcast shape: numbers become tensors of the first
    tensor's dtype (float32 when there is none); tensors are expanded (gradients flow back)."""
    tensors = [v for v in values if _is_tensor(v)]
    for v in values:
        # PyTorch's scalars here are Python's int, float and bool (np.float64, a float
        # subclass, passes; np.float32, np.int64 and complex numbers are refused)
        if not (_is_tensor(v) or isinstance(v, (int, float, bool))):
            raise ValueError("Input arguments must all be instances of Number, torch.Tensor or "
                             "objects implementing __torch_function__.")
    dtype = tensors[0].dtype if tensors else None     # None: float32, tensor()'s default
    out = [v if _is_tensor(v) else tensor(float(v), dtype=dtype) for v in values]
    shape = ()
    for t in out:
        shape = _broadcast_shapes(shape, tuple(t.shape))
    return tuple(t if tuple(t.shape) == shape else t.expand(*shape) for t in out)


def _is_tensor(value) -> bool:
    # a vmap's BatchedTensor (a sample of torch.func.hessian's or vmap's batch) is a tensor to
    # PyTorch: a distribution built inside a mapped function takes it as a parameter
    return isinstance(value, (_core.TensorBase, _vmap.BatchedTensor))


def _finfo_of(t):
    """torch.finfo of t's dtype.  Not numpy's finfo of the storage: a bfloat16 tensor's storage is
    float32, whose eps (1.2e-7) and min are not bfloat16's (eps 2**-7): clamp_probs would clamp
    bfloat16 probabilities to 1 - 1.2e-7, which rounds to 1, and log1p(-p) would be -inf.
    (An integral tensor raises torch.finfo's TypeError, as in PyTorch's clamp_probs.)"""
    return finfo(t.dtype)


def _eps(t) -> float:
    return _finfo_of(t).eps


def clamp_probs(probs):
    """Probabilities kept inside (eps, 1 - eps), so their logs stay finite."""
    eps = _eps(probs)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary: bool = False):
    """log(p) for categorical probabilities, log(p / (1 - p)) for binary ones (clamped)."""
    clamped = clamp_probs(probs)
    if is_binary:
        return clamped.log() - (-clamped).log1p()
    return clamped.log()


def logits_to_probs(logits, is_binary: bool = False):
    """sigmoid(logits) for binary logits, softmax over the last dimension otherwise."""
    if is_binary:
        return logits.sigmoid()
    return logits.softmax(-1)


class lazy_property:
    """Computed on first access and cached in the instance (probs from logits and vice versa)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        # computed in grad mode, as PyTorch's: the cached value keeps its graph even when first
        # read under no_grad (probs of logits that require grad requires grad)
        from ..grad_mode import enable_grad
        with enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value


def _standard_normal(shape, dtype, device):
    """N(0, 1) draws of `shape` from tapegrad's stream: what a script's own distribution
    subclass calls in its rsample (PyTorch's private helper, used by the truncated-normal
    policies of DrQ-style agents)."""
    return empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim: int):
    """value summed over its `dim` rightmost dims (dim 0: value itself); Independent and the
    transforms reduce event dims with it, and scripts' custom distributions import it."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.ndim - dim]) + (-1,)).sum(-1)


def is_tensor_like(value) -> bool:
    """Whether ``value`` is a tensor (PyTorch also counts objects defining __torch_function__)."""
    return isinstance(value, _core.TensorBase) or hasattr(type(value), "__torch_function__")


def _tril_flat_index(n: int, diag: int) -> np.ndarray:
    """Positions, in a row-major flattened n x n matrix, of the entries on or below diagonal
    `diag`, in row order."""
    rows, cols = np.nonzero(np.arange(n) < np.arange(n)[:, None] + (diag + 1))
    return rows * n + cols


def tril_matrix_to_vec(mat, diag: int = 0):
    """The entries of a (batch of) D x D matrix on or below diagonal ``diag``, in row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    return flat[..., _core_index(_tril_flat_index(n, diag))]


def vec_to_tril_matrix(vec, diag: int = 0):
    """A (batch of) D x D lower-triangular matrix holding ``vec`` on or below diagonal ``diag``,
    in row order (zeros elsewhere); inverse of tril_matrix_to_vec."""
    m = vec.shape[-1]
    root = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(root) - root > _finfo_of(vec).eps:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as the "
                         f"lower triangular part of a square D x D matrix.")
    n = round(root)
    inside = _tril_flat_index(n, diag)
    if inside.size != m:
        # (the test above, PyTorch's, lets such sizes through; its write into the triangle
        # then refuses them)
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(vec.shape)} cannot be "
                           f"broadcast to indexing result of shape "
                           f"{list(vec.shape[:-1]) + [inside.size]}")
    # gather from vec with a zero appended: positions outside the triangle read the zero
    source = np.full(n * n, m, dtype=np.int64)
    source[inside] = np.arange(m)
    from .. import cat
    padded = cat([vec, vec.new_zeros(tuple(vec.shape[:-1]) + (1,))], -1)
    return padded[..., _core_index(source)].reshape(tuple(vec.shape[:-1]) + (n, n))


def _core_index(positions: np.ndarray):
    from ..creation import _make
    return _make(np.ascontiguousarray(positions, dtype=np.int64), False)
