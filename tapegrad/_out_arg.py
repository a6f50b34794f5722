"""PyTorch's out= semantics for ops written in Python (the compiled ops have their own, in
src/tapegrad/ops_inplace.pxi; this mirrors it for the facade).

An op with out= is not differentiable: PyTorch refuses it when grad mode is on and out or an
operand requires grad.  The result is cast into out's dtype when type promotion allows it (same
kind or wider), and out is resized to the result's shape, with PyTorch's deprecation warning
unless out was empty.
"""
from __future__ import annotations

import warnings

import numpy as np

from . import _core
from .grad_mode import is_grad_enabled, no_grad

TensorBase = _core.TensorBase


def check_out_autograd(name: str, out, operands) -> None:
    """PyTorch's refusal of out= when something would need a gradient."""
    tensors = [t for t in operands if isinstance(t, TensorBase)]
    outs = out if isinstance(out, (tuple, list)) else (out,)
    if is_grad_enabled() and any(t.requires_grad for t in (*tensors, *outs)
                                 if isinstance(t, TensorBase)):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")


def compute_then_write(name: str, out, operands, compute):
    """compute() run without recording, its result (a tensor, or a tuple matching a tuple `out`)
    written into out; returns out (a tuple of tensors keeps the result's tuple type)."""
    check_out_autograd(name, out, operands)
    with no_grad():
        result = compute()
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{name}(): argument 'out' must be tuple of {len(result)} Tensors")
        written = [write_into(name, o, r) for o, r in zip(out, result)]
        return type(result)(written) if hasattr(result, "_fields") else tuple(written)
    return write_into(name, out, result)


def write_into(name: str, out, result):
    """result's values in out (cast to out's dtype, out resized to result's shape)."""
    if not isinstance(out, TensorBase):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    values, target = result._array, out._array
    if not _castable(values.dtype, target.dtype):
        raise RuntimeError(f"result type {_core.scalar_type_name_of(values.dtype)} can't be "
                           f"cast to the desired output type "
                           f"{_core.scalar_type_name_of(target.dtype)}")
    if target.shape != values.shape:
        if target.size:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(target.shape)}, which does not match the required output shape "
                f"{list(values.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
                "t.resize_(0).", UserWarning, stacklevel=4)
        out._array = np.ascontiguousarray(values.astype(target.dtype)).reshape(values.shape)
        return out
    with no_grad():
        out.copy_(result)
    return out


def require_dtype(name: str, out, np_dtype, label: str = "Long") -> None:
    """Ops whose out must have one exact dtype (nonzero's Long indices)."""
    if isinstance(out, TensorBase) and out._array.dtype != np.dtype(np_dtype):
        raise RuntimeError(f"{name}: Expected out tensor to have scalar type {label} but got "
                           f"scalar type{_core.scalar_type_name_of(out._array.dtype)}")


def _castable(src: np.dtype, dst: np.dtype) -> bool:
    # PyTorch's canCast: no float to integer, no non-bool to bool; widths do not matter.
    rank = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
    return rank[src.kind] <= rank[dst.kind]
