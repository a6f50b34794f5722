"""Gradient clipping, vectorised per parameter as PyTorch's."""
from __future__ import annotations as _annotations

import math
import warnings

import numpy as np

from ... import _core


def _grads(parameters):
    if isinstance(parameters, _core.TensorBase):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _tensors(tensors):
    if isinstance(tensors, _core.TensorBase):
        return [tensors]
    return [t for t in tensors if t is not None]


def _refuse_sparse(grads, op: str) -> None:
    """PyTorch's error for a sparse gradient (embedding(sparse=True)'s): clipping runs `op`,
    which has no sparse kernel."""
    if any(getattr(g, "is_sparse", False) for g in grads):
        raise NotImplementedError(f"Could not run 'aten::{op}' with arguments from the "
                                  f"'SparseCPU' backend. This could be because the operator "
                                  f"doesn't exist for this backend.")


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None):
    """The ``norm_type`` norm of the norms of `tensors` (usually gradients), as one 0-d tensor."""
    grads = _tensors(tensors)
    _refuse_sparse(grads, "linalg_vector_norm")
    norm_type = float(norm_type)
    if not grads:
        return _core.wrap_array(np.asarray(0.0, dtype=np.float32))
    # the norms are real: a complex gradient's norm has its real dtype, as PyTorch's
    dtype = np.empty(0, grads[0]._array.dtype).real.dtype
    if norm_type == math.inf:
        # np.max propagates NaN (Python's max() would drop it depending on the order)
        norms = [np.abs(g._array).max() if g._array.size else 0.0 for g in grads]
        total = np.asarray(np.max(np.asarray(norms, dtype=dtype)), dtype=dtype)
    else:
        # PyTorch accumulates float16 norms in float32 and rounds each norm to float16
        acc = np.float32 if dtype.itemsize < 4 else dtype
        # (promoted, not cast: a complex gradient keeps its imaginary part)
        per = np.asarray([np.linalg.norm(g._array.ravel().astype(
            np.promote_types(g._array.dtype, acc), copy=False), norm_type) for g in grads],
            dtype=dtype)
        total = np.asarray(np.linalg.norm(per.astype(acc), norm_type), dtype=dtype)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` "
                           "is non-finite, so it cannot be clipped. To disable this error and "
                           "scale the gradients by the non-finite norm anyway, set "
                           "`error_if_nonfinite=False`")
    return _core.wrap_array(total)


def clip_grads_with_norm_(parameters, max_norm: float, total_norm, foreach=None) -> None:
    """Scale the gradients of `parameters` in place by ``max_norm / (total_norm + 1e-6)`` when
    that is below 1 (`total_norm` as :func:`get_total_norm` computes it)."""
    grads = _grads(parameters)
    if not grads:
        return
    total = np.asarray(total_norm._array if isinstance(total_norm, _core.TensorBase)
                       else total_norm)
    # PyTorch: clip_coef = max_norm / (total_norm + 1e-6) in the norm's dtype (its scalar
    # division is reciprocal() * max_norm), clamped to 1 and multiplied into every gradient.  A
    # NaN coefficient (a NaN norm) survives the clamp, so the gradients become NaN.
    dt = total.dtype.type
    with _core.IeeeResults():                        # inf/nan propagate silently, as in PyTorch
        clip_coef = (dt(1) / (total + dt(1e-6))) * dt(max_norm)
        if not clip_coef >= 1.0:
            for g in grads:
                g._array *= g._array.dtype.type(clip_coef)


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None):
    """Scale gradients in place so their joint norm is at most max_norm; returns the norm."""
    if isinstance(parameters, _core.TensorBase):
        parameters = [parameters]
    parameters = list(parameters)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None):
    """The deprecated name of `clip_grad_norm_` (PyTorch's FutureWarning, then the same)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient element into [-clip_value, clip_value] in place."""
    # (a Python float, as PyTorch reads it: -clip_value of a numpy unsigned scalar wrapped around)
    clip_value = float(clip_value)
    grads = _grads(parameters)        # (once: `parameters` is usually a generator)
    _refuse_sparse(grads, "clamp_min_")
    for g in grads:
        np.clip(g._array, -clip_value, clip_value, out=g._array)
