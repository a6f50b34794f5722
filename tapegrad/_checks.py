"""PyTorch's ``torch._check`` family: assertions that library and model code (torchvision,
export-friendly models) write instead of ``assert``, so that they survive ``python -O`` and name
the exception type they raise.  Each takes a condition that must be a Python bool (a tensor is
refused: ``_check_tensor_all`` is the tensor form) and an optional callable returning the
message, called only when the check fails."""
from __future__ import annotations as _annotations

import builtins

from . import _core

_DEFAULT_MESSAGE = ("Expected cond to be True, but got False. (Could this error message be "
                    "improved? If so, please report an enhancement request to PyTorch.)")


def _check_with(error_type, cond, message):
    """Raise error_type(message()) unless cond is True (the others' shared body)."""
    if isinstance(cond, _core.TensorBase):
        raise TypeError("cond must be a bool, but got a Tensor. For tensor conditions, use "
                        "torch._check_tensor_all() to assert that all elements are true.")
    if not isinstance(cond, builtins.bool):
        raise TypeError(f"cond must be a bool, but got {type(cond)}")
    if cond:
        return
    if not (isinstance(error_type, type) and issubclass(error_type, Exception)
            and not issubclass(error_type, Warning)):
        raise AssertionError("error_type must be an Exception type that is not a Warning")
    if message is None:
        raise error_type(_DEFAULT_MESSAGE)
    if not callable(message):
        raise TypeError("message must be a callable")
    raise error_type(str(message()))


def _check(cond, message=None):
    """RuntimeError(message()) unless cond is True."""
    _check_with(RuntimeError, cond, message)


def _check_index(cond, message=None):
    """IndexError(message()) unless cond is True."""
    _check_with(IndexError, cond, message)


def _check_value(cond, message=None):
    """ValueError(message()) unless cond is True."""
    _check_with(ValueError, cond, message)


def _check_type(cond, message=None):
    """TypeError(message()) unless cond is True."""
    _check_with(TypeError, cond, message)


def _check_not_implemented(cond, message=None):
    """NotImplementedError(message()) unless cond is True."""
    _check_with(NotImplementedError, cond, message)


def _check_tensor_all_with(error_type, cond, message=None):
    """error_type(message()) unless every element of the bool tensor cond is True."""
    if not isinstance(cond, _core.TensorBase):
        raise TypeError(f"cond must be a tensor, but got {type(cond)}")
    if cond._array.dtype.kind != "b":
        raise TypeError(f"cond tensor must have dtype torch.bool, but got {cond.dtype}")
    _check_with(error_type, builtins.bool(cond._array.all()), message)


def _check_tensor_all(cond, message=None):
    """RuntimeError(message()) unless every element of the bool tensor cond is True."""
    _check_tensor_all_with(RuntimeError, cond, message)


NAMES = ("_check_with", "_check", "_check_index", "_check_value", "_check_type",
         "_check_not_implemented", "_check_tensor_all_with", "_check_tensor_all")
