"""float16 composites computed in float32, as PyTorch's CPU kernels compute half precision.

PyTorch accumulates float16 in float32 (its "opmath" type) and rounds the result once.  A
composite of float16 ops would round every intermediate instead: squares of values beyond 256
overflow (a norm of [300] is inf), and cancellations in normalisation gradients lose every
digit.  The composites that square or normalise widen their float16 operands to float32 here
and narrow the result back, so values and gradients are PyTorch's to rounding.
"""
from __future__ import annotations as _annotations

import numpy as np

from . import _core

_FLOAT16 = np.dtype(np.float16)


def widen_half(*tensors):
    """The tensors with each float16 one cast to float32 (a recorded, differentiable cast; None
    passes through), and whether all of them were float16 (so the result narrows back; a mix
    with float32 or float64 keeps its promotion)."""
    widened, all_half = [], True
    for t in tensors:
        if t is not None:
            if t.dtype == _core.float16:
                t = t.to(_core.float32)
            else:
                all_half = False
        widened.append(t)
    return widened, all_half


def narrow_half(result, was_half):
    """result cast back to float16 when all its operands were float16 and widened."""
    if was_half and result.dtype == _core.float32:
        return result.to(_core.float16)
    return result


def in_float32_if_half(fn, *tensors):
    """fn(*tensors), computed in float32 and rounded once to float16 when every tensor given (None
    aside) is float16, as PyTorch's kernels of several steps compute half precision (their opmath):
    addcmul's 300 * 300 overflowed float16 before -250 was added; celu's x / 1e-5 overflowed.  A
    mix with float32 or float64 keeps its promotion.  The dtype test comes first, so per-step
    calls in float32 (the optimizers' addcmul_) pay one comparison per operand."""
    for t in tensors:
        if t is not None and t._array.dtype != _FLOAT16:
            return fn(*tensors)
    widened, half = widen_half(*tensors)
    return narrow_half(fn(*widened), half)


def refuse_half(input, kernel: str) -> None:
    """PyTorch's NotImplementedError for a CPU kernel without a float16 form (its dispatch
    macro lists float and double only), raised where its kernel would start."""
    if input.dtype == _core.float16:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Half'")
