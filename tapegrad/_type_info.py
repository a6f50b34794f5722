"""torch.finfo / torch.iinfo: the numerical limits of tapegrad's dtypes (numpy's, which are the
same IEEE and two's-complement types), with PyTorch's attribute names, types and repr."""
from __future__ import annotations

from ._torch_names import TorchNamedClass

from tapegrad._core import type_name as _type_name
import numpy as np

from . import _core


def _check_dtype(type_, fn: str):
    if not isinstance(type_, _core.dtype):
        raise TypeError(f"{fn}(): argument 'type' (position 1) must be torch.dtype, not "
                        f"{_type_name(type_)}")
    return np.dtype(_core.np_dtype_of(type_))


class finfo(metaclass=TorchNamedClass):
    """Limits of a floating point dtype (default: float32): bits, eps, max, min, tiny,
    smallest_normal, resolution, dtype (its name)."""

    __module__ = "tapegrad"
    __hash__ = None    # as in PyTorch: comparable, not hashable

    def __init__(self, type=None):  # noqa: A002  (PyTorch's parameter name)
        if type is _core.bfloat16:
            self._bfloat16()
            return
        if type is None:
            np_dtype = np.dtype(np.float32)
        elif type is _core.complex32:   # (a name only in tapegrad: its parts are float16)
            np_dtype = np.dtype(np.float16)
        else:
            np_dtype = _check_dtype(type, "finfo")
        if np_dtype.kind == "c":        # PyTorch's finfo of a complex dtype is its parts' dtype's
            np_dtype = np.dtype(f"f{np_dtype.itemsize // 2}")
        if np_dtype.kind != "f":
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo "
                            "to handle 'torch.finfo'")
        info = np.finfo(np_dtype)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = float(info.smallest_normal)
        self.smallest_normal = self.tiny
        self.resolution = 10.0 ** -int(info.precision)   # PyTorch's: exactly 1e-06, not float32's
        self.dtype = np_dtype.name

    def _bfloat16(self) -> None:
        # float32's exponent range with 8 significand bits (numpy has no bfloat16 to ask)
        self.bits = 16
        self.eps = 2.0 ** -7
        self.max = (2 - 2.0 ** -7) * 2.0 ** 127
        self.min = -self.max
        self.tiny = self.smallest_normal = 2.0 ** -126
        self.resolution = 0.01
        self.dtype = "bfloat16"

    def __eq__(self, other):
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo(metaclass=TorchNamedClass):
    """Limits of an integer dtype: bits, max, min, dtype (its name)."""

    __module__ = "tapegrad"
    __hash__ = None

    def __init__(self, type):  # noqa: A002
        np_dtype = _check_dtype(type, "iinfo")
        if np_dtype.kind == "b":
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if np_dtype.kind not in "iu":
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        info = np.iinfo(np_dtype)
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = np_dtype.name

    def __eq__(self, other):
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
