"""Bit shifts (<<, >>, bitwise_left_shift, bitwise_right_shift) and the in-place operator forms
the compiled core lacks (&=, |=, ^=, <<=, >>=, **=, //=, %=).

Shifts follow PyTorch's integer rules: the operands promote as for arithmetic, a shift by a
negative amount or by at least the type's width gives 0 (a right shift of a negative value gives
-1), floating types are refused.  They never require grad (integer results).

An in-place operator computes the out-of-place result and writes it into self with copy_, after
PyTorch's check that the result type casts to self's dtype, so the project's in-place rules
(leaf, view and version checks, recording on non-leaves) apply; **= first clones self so the
power's saved input is not the tensor being overwritten.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import numpy as np

from . import _core
from ._class_members import has_member

TensorBase = _core.TensorBase


def _result_dtype(input, other) -> np.dtype:
    """PyTorch's promotion of input and other (one may be a number): a zero-dim tensor or a
    number only decides the dtype from a higher category (int8 << bool tensor is int8, a bool
    tensor << 2 is int64)."""
    return np.dtype(_core.np_dtype_of(_core.result_type(input, other)))


def _takes(other) -> bool:
    """Whether PyTorch's operators take `other`: a tensor or a (Python or numpy) number.  For
    anything else, an ndarray included, they return NotImplemented and Python goes on to the
    other operand's reflected method (`t << array`: numpy's ufunc; see _core.as_operand), and an
    in-place operator falls back to the out-of-place one, rebinding the name."""
    return isinstance(other, (TensorBase, bool, int, float, complex, np.generic))


def _shift(input, other, left: bool, name: str):
    if not isinstance(input, TensorBase) and not isinstance(other, TensorBase):
        raise TypeError(f"{name}(): expected a Tensor")
    if not (_takes(input) and _takes(other)):
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({_type_name(input)}, {_type_name(other)}), but expected one of:\n"
                        f" * (Tensor input, Tensor other)\n * (Scalar self, Tensor other)\n"
                        f" * (Tensor input, Scalar other)")
    input, other = _core.number_operand(input), _core.number_operand(other)
    from ._extra_ops import _check_broadcast   # (imported here: _extra_ops imports this module)
    _check_broadcast(input, other)             # (PyTorch's RuntimeError, not numpy's ValueError)
    dt = _result_dtype(input, other)
    if dt.kind not in "iu":
        raise NotImplementedError(f"\"{'lshift' if left else 'rshift'}_cpu\" not implemented for "
                                  f"'{_core.scalar_type_name_of(dt)}'")
    a = np.asarray(input._array if isinstance(input, TensorBase) else input).astype(dt)
    b = np.asarray(other._array if isinstance(other, TensorBase) else other).astype(dt)
    # C leaves shifts by a negative amount or by the width undefined; PyTorch defines them.
    valid = (b >= 0) & (b < dt.itemsize * 8)
    amount = np.where(valid, b, 0).astype(dt)
    if left:
        out = np.where(valid, np.left_shift(a, amount), 0)
    else:
        out = np.where(valid, np.right_shift(a, amount), np.where(a < 0, -1, 0))
    from ._extra_ops import _wrap_like
    return _wrap_like(np.asarray(out, dtype=dt), input, other)


def bitwise_left_shift(input, other):
    """input shifted left by other bits (integer tensors)."""
    return _shift(input, other, True, "bitwise_left_shift")


def bitwise_right_shift(input, other):
    """input shifted right by other bits, sign-filling (integer tensors)."""
    return _shift(input, other, False, "bitwise_right_shift")


def check_in_place_operand(self, other, floating=False, cast_message=None,
                           overlap=True) -> None:
    """PyTorch's checks of `self.<op>_(other)` for a binary op, made (as its TensorIterator makes
    them) before the kernel is looked up: other must broadcast to self's shape, and the operands'
    promoted dtype must cast to self's (`int_tensor &= float_tensor` is the cast error, not the
    missing float kernel's)."""
    if not isinstance(other, (TensorBase, bool, int, float, complex, np.generic)):
        return
    # (an operand partly sharing self's memory first, as TensorIterator checks overlap before
    # shapes and dtypes: `x[1:] <<= x[:-1]` would read values the write already changed;
    # `overlap`=False: the caller checks it, or the op, a composite, reads other first)
    if overlap:
        _core._check_operands_overlap(self, (other,))
    if isinstance(other, TensorBase) and other._array.shape != self._array.shape:
        from ._extra_ops import _broadcast_shapes
        _broadcast_shapes(self._array.shape, other._array.shape)   # (PyTorch's error if not)
        shape = np.broadcast_shapes(self._array.shape, other._array.shape)
        if shape != self._array.shape:
            raise RuntimeError(f"output with shape {list(self._array.shape)} doesn't match the "
                               f"broadcast shape {list(shape)}")
    result_type = _core.result_type(self, other)
    if result_type is _core.bfloat16:
        # (an integer or bool self with a bfloat16 operand: numpy has no bfloat16, whose casts
        # are float32's - to a floating or complex self only)
        promoted, promoted_name = np.dtype(np.float32), "BFloat16"
    else:
        promoted = np.dtype(_core.np_dtype_of(result_type))
        if floating and promoted.kind in "biu":     # (an op computing in floats: its caller's)
            promoted = np.dtype(_core.np_dtype_of(_core.get_default_dtype()))
        promoted_name = _core.scalar_type_name_of(promoted)
    if not _core.can_cast_np(promoted, self._array.dtype):
        # (cast_message: an op's own wording of the refusal, a format string of {out})
        template = cast_message or (f"result type {promoted_name} can't be "
                                    f"cast to the desired output type {{out}}")
        raise RuntimeError(template.format(out=_core.scalar_type_name_of(self._array.dtype)))


def _write_back(self, result, op=None):
    """self's values replaced by result's, refused as PyTorch when result's type does not
    cast to self's dtype (`t &= long_tensor` on a bool t).  `op`: (name, operands, kwargs) of
    the op whose in-place form this is, for how the refusal names self's dtype."""
    if result is NotImplemented:
        return NotImplemented
    res_dt, own_dt = result._array.dtype, self._array.dtype
    if res_dt != own_dt and not _core.can_cast_np(res_dt, own_dt):
        from ._ops_inplace import output_type_name
        own = (_core.scalar_type_name_of(own_dt) if op is None else
               output_type_name(*op, own_dt))
        raise RuntimeError(f"result type {_core.scalar_type_name_of(res_dt)} can't be cast to the "
                           f"desired output type {own}")
    return self.copy_(result)


def _become_result(self, result, op=None):
    """Finish `self.<op>_()` computed out of place as `result` (from a clone of self): self
    becomes the op's output, as PyTorch's in-place ops make it: self adopts result's record, or,
    where it cannot (a view), result is written back into self and the record reads its saved
    output through self (so a second derivative reaches self's history, and a later write into
    self is refused at backward)."""
    if _core._adopt_in_place_result(self, result):
        return self
    out = _write_back(self, result, op)
    _core._note_written_view(self, result)
    return out


def _operator(fn):
    """fn as an operator: NotImplemented for an operand PyTorch's operators do not take."""
    def operator(self, other):
        return fn(self, other) if _takes(other) else NotImplemented
    return operator


@_operator
def _iand(self, other):
    check_in_place_operand(self, other)
    return _write_back(self, self & other)


@_operator
def _ior(self, other):
    check_in_place_operand(self, other)
    return _write_back(self, self | other)


@_operator
def _ixor(self, other):
    check_in_place_operand(self, other)
    return _write_back(self, self ^ other)


@_operator
def _ilshift(self, other):
    check_in_place_operand(self, other)
    return _write_back(self, bitwise_left_shift(self, other))


@_operator
def _irshift(self, other):
    check_in_place_operand(self, other)
    return _write_back(self, bitwise_right_shift(self, other))


@_operator
def _ifloordiv(self, other):
    return self.floor_divide_(other)


@_operator
def _imod(self, other):
    return self.remainder_(other)


@_operator
def _ipow(self, other):
    _core._check_operands_overlap(self, (other,))
    source = _core._in_place_operand(self)
    result = source ** other
    if isinstance(result, _core.TensorBase):
        return _become_result(self, result)
    return _write_back(self, result)


def register(namespace: dict, tensor_cls) -> None:
    """The functions in the tapegrad namespace, the operators on Tensor (existing names win)."""
    namespace.setdefault("bitwise_left_shift", bitwise_left_shift)
    namespace.setdefault("bitwise_right_shift", bitwise_right_shift)
    methods = {
        "bitwise_left_shift": bitwise_left_shift,
        "bitwise_right_shift": bitwise_right_shift,
        "__lshift__": _operator(bitwise_left_shift),
        "__rshift__": _operator(bitwise_right_shift),
        "__rlshift__": _operator(lambda self, other: bitwise_left_shift(other, self)),
        "__rrshift__": _operator(lambda self, other: bitwise_right_shift(other, self)),
        "__iand__": _iand, "__ior__": _ior, "__ixor__": _ixor, "__ilshift__": _ilshift,
        "__irshift__": _irshift, "__ipow__": _ipow, "__ifloordiv__": _ifloordiv,
        "__imod__": _imod,
    }
    for name, fn in methods.items():
        if not has_member(tensor_cls, name):
            setattr(tensor_cls, name, fn)
