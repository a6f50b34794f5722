"""Gradient clipping, vectorised per parameter as PyTorch's."""
from __future__ import annotations as _annotations

import math
import warnings

import numpy as np

from ... import _core, _step_phases


def _grads(parameters):
    if isinstance(parameters, _core.TensorBase):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _tensors(tensors):
    """get_total_norm's tensors: PyTorch takes a list holding None only from clip_grad_norm_,
    which leaves out the parameters without a gradient; given directly, a None is refused."""
    if isinstance(tensors, _core.TensorBase):
        return [tensors]
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if t is None:
            if i == 0:          # (PyTorch reads the first tensor's device first)
                raise AttributeError("'NoneType' object has no attribute 'device'")
            raise RuntimeError(f"Tensors of the first list of nested Tensor lists are supposed "
                               f"to be defined but the {i}-th Tensor is not.")
    return tensors


def _refuse_sparse(grads, op: str) -> None:
    """PyTorch's error for a sparse gradient (embedding(sparse=True)'s): clipping runs `op`,
    which has no sparse kernel."""
    if any(getattr(g, "is_sparse", False) for g in grads):
        raise NotImplementedError(f"Could not run 'aten::{op}' with arguments from the "
                                  f"'SparseCPU' backend. This could be because the operator "
                                  f"doesn't exist for this backend.")


_REDUCED_FLOATS = (_core.float16, _core.bfloat16)
_PLAIN_FLOATS = {_core.float32: np.float32, _core.float64: np.float64}
_CLAMP_SIGNATURES = ("\n * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)"
                     "\n * (Tensor input, Number min = None, Number max = None, *, Tensor out = None)\n")


def _norm_value(grad, norm_type: float):
    """One gradient's norm as a numpy number, accumulated as PyTorch's _foreach_norm does (a
    float16 gradient's in float32; bfloat16's storage is float32 already).  An empty gradient's
    finite-order norm is 0; its inf norm has no identity: an error."""
    a = grad._array.ravel()
    if a.size == 0:
        if norm_type == math.inf:
            raise RuntimeError("_foreach_norm cannot compute the infinity norm on an empty "
                               "tensor because the operation does not have an identity")
        return 0.0
    if norm_type == math.inf:
        return np.abs(a).max()      # (np.max propagates NaN)
    # (promoted, not cast: a complex gradient keeps its imaginary part)
    return np.linalg.norm(a.astype(np.promote_types(a.dtype, np.float32), copy=False), norm_type)


def _norms_tensor(norms: list, dtype):
    """The norms of the gradients of one dtype as a 1-d tensor of that dtype's real type: each
    norm rounded to it, as _foreach_norm returns them."""
    from ... import complex64, complex128, float32, float64
    real = {complex64: float32, complex128: float64}.get(dtype, dtype)
    return _core.wrap_array(np.asarray(norms, dtype=np.float64)).to(real)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None):
    """The ``norm_type`` norm of the norms of `tensors` (usually gradients), as one 0-d tensor."""
    grads = _tensors(tensors)
    _refuse_sparse(grads, "linalg_vector_norm")
    norm_type = float(norm_type)
    if not grads:
        return _core.wrap_array(np.asarray(0.0, dtype=np.float32))
    by_dtype: dict = {}
    for g in grads:
        by_dtype.setdefault(g.dtype, []).append(_norm_value(g, norm_type))
    if len(by_dtype) == 1:
        (dtype, values), = by_dtype.items()
        if dtype in _PLAIN_FLOATS:
            # one float32 or float64 dtype (a model's usual case): the arithmetic below without
            # its tensor round trips (cat, casts), which cost more than the norms of a small
            # model; the same numbers, as neither cast rounds here
            total = _core.wrap_array(np.asarray(np.linalg.norm(
                np.asarray(values, dtype=_PLAIN_FLOATS[dtype]), norm_type)))
            _check_finite(total, norm_type, error_if_nonfinite)
            return total
    from ... import cat
    # PyTorch norms each gradient in its own dtype and stacks the norms, so their dtypes promote
    # (float16 with float32 gives float32, float32 with float64 float64): the total is not in
    # the first gradient's dtype, and a mixed-precision model's float32 gradients are not scaled
    # by a float16 coefficient.
    norms = cat([_norms_tensor(values, dtype) for dtype, values in by_dtype.items()])
    # vector_norm of the norms, as its kernel computes it (a float16 or bfloat16 one accumulated
    # in float32 and rounded once), in numpy: the public op's checks cost more than the sum
    a = norms._array
    value = np.linalg.norm(a.astype(np.promote_types(a.dtype, np.float32), copy=False), norm_type)
    total = _core.wrap_array(np.asarray(value, dtype=np.float64)).to(norms.dtype)
    _check_finite(total, norm_type, error_if_nonfinite)
    return total


def _check_finite(total, norm_type: float, error_if_nonfinite: bool) -> None:
    if error_if_nonfinite and not np.isfinite(total._array):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` "
                           "is non-finite, so it cannot be clipped. To disable this error and "
                           "scale the gradients by the non-finite norm anyway, set "
                           "`error_if_nonfinite=False`")


def clip_grads_with_norm_(parameters, max_norm: float, total_norm, foreach=None) -> None:
    """Scale the gradients of `parameters` in place by ``max_norm / (total_norm + 1e-6)`` when
    that is below 1 (`total_norm` as :func:`get_total_norm` computes it)."""
    grads = _grads(parameters)
    if not grads:
        return
    from ... import no_grad
    if not isinstance(total_norm, _core.TensorBase):
        # PyTorch's clip_coef is then a Python number, which its torch.clamp refuses
        from ...tensor import invalid_arguments
        raise invalid_arguments("clamp", (max_norm / (total_norm + 1e-6),), {"max": 1.0},
                                _CLAMP_SIGNATURES)
    with no_grad(), _core.IeeeResults():   # inf/nan propagate silently, as in PyTorch
        # PyTorch: clip_coef = max_norm / (total_norm + 1e-6) in the norm's dtype, clamped to 1
        # and multiplied into every gradient (in the gradient's dtype).  A NaN coefficient (a
        # NaN norm) survives the clamp, so the gradients become NaN.
        clip_coef = max_norm / (total_norm + 1e-6)
        coef = clip_coef.item()
        if not coef >= 1.0:
            for g in grads:
                if g.dtype in _REDUCED_FLOATS:
                    # PyTorch's CPU mul reads a scalar operand in float32 (its opmath), not
                    # rounded to the gradient's dtype first; only the product is rounded.
                    g.copy_(g.float() * clip_coef.float())
                else:
                    # (the coefficient in the gradient's dtype, as PyTorch's mul casts it)
                    g._array *= g._array.dtype.type(coef)


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None):
    """Scale gradients in place so their joint norm is at most max_norm; returns the norm."""
    if _step_phases.noting is not None:     # a compiled whole step captures its phases
        return _step_phases.note("clip_grad_norm_", _clip_grad_norm,
                                 _step_phases.parameters_of(parameters),
                                 (max_norm, norm_type, error_if_nonfinite, foreach), {})
    return _clip_grad_norm(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def _clip_grad_norm(parameters, max_norm, norm_type, error_if_nonfinite, foreach):
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
    if _step_phases.noting is not None:     # a compiled whole step captures its phases
        return _step_phases.note("clip_grad_value_", _clip_grad_value,
                                 _step_phases.parameters_of(parameters), (clip_value, foreach), {})
    return _clip_grad_value(parameters, clip_value, foreach)


def _clip_grad_value(parameters, clip_value, foreach):
    # (a Python float, as PyTorch reads it: -clip_value of a numpy unsigned scalar wrapped around)
    clip_value = float(clip_value)
    grads = _grads(parameters)        # (once: `parameters` is usually a generator)
    _refuse_sparse(grads, "clamp_min_")
    # PyTorch clamps dtype group by dtype group, complex groups last (its dtype order), and
    # complex numbers have no order: the real gradients are clipped, then clamp raises.
    complex_grads = [g for g in grads if g._array.dtype.kind == "c"]
    for g in grads:
        if g._array.dtype.kind != "c":
            np.clip(g._array, -clip_value, clip_value, out=g._array)
    if complex_grads:
        from ..._complex import refuse
        refuse("clamp", complex_grads[0])
