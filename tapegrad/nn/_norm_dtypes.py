"""The dtype rule PyTorch's CPU normalisation kernels (batch_norm, group_norm, instance_norm)
apply to their parameter tensors: the same dtype as the input, or the one "mixed" form of a
float16 input with float32 parameters. Nothing is promoted: a float64 weight on a float32 input
raises there, where a promoting computation would silently give a float64 result."""
from __future__ import annotations as _annotations

from .. import _core


def _type_name(t) -> str:
    return _core.scalar_type_name_of(t._array.dtype)


def check_parameter_dtypes(input, *parameters) -> bool:
    """Raise PyTorch's RuntimeError unless the parameters (None skipped) suit input; return
    whether the call is mixed (float16 input, float32 parameters: the result stays float16)."""
    given = [p for p in parameters if p is not None]
    if all(p.dtype == input.dtype for p in given) or not input.is_floating_point():
        return False        # (an integer input meets the kernel's own NotImplementedError)
    if given[0].dtype == input.dtype:
        # (the first parameter fixes the kernel's type; a later one must follow it)
        other = next(p for p in given if p.dtype != input.dtype)
        raise RuntimeError(f"expected scalar type {_type_name(input)} but found "
                           f"{_type_name(other)}")
    if any(p.dtype != _core.float32 for p in given):
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    if input.dtype != _core.float16:
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    return True
