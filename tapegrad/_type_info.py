"""torch.finfo / torch.iinfo: the numerical limits of tapegrad's dtypes (numpy's, which are the
same IEEE and two's-complement types), with PyTorch's attribute names, types and repr."""
from __future__ import annotations as _annotations

from ._torch_names import TorchNamedClass

from tapegrad._core import type_name as _type_name
import numpy as np

from . import _core


def _check_dtype(type_, fn: str):
    # PyTorch's argument parser takes Python's float/int/bool/complex as float64/int64/bool/
    # complex128 here as for any dtype argument
    if not (isinstance(type_, _core.dtype) or type_ in (float, int, bool, complex)):
        raise TypeError(f"{fn}(): argument 'type' (position 1) must be torch.dtype, not "
                        f"{_type_name(type_)}")
    return np.dtype(_core.np_dtype_of(type_))


class _Limits:
    """Read-only fields, as PyTorch's finfo/iinfo attributes are: a script that assigns one
    gets PyTorch's AttributeError instead of silently changing the limits it reads later."""

    __slots__ = ()

    def __setattr__(self, name, value):
        if name in type(self).__slots__:
            raise AttributeError(f"attribute '{name}' of 'torch.{type(self).__name__}' objects "
                                 "is not writable")
        raise AttributeError(f"'torch.{type(self).__name__}' object has no attribute '{name}'")

    def _set(self, **fields) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __reduce__(self):
        raise TypeError(f"cannot pickle 'torch.{type(self).__name__}' object")


_NO_TYPE = object()


# The float8 dtypes' (eps, max, smallest normal), as PyTorch's numeric_limits give them (its
# fnuz formats' eps is 2^-3 for both, one bit below their mantissa's).
_FLOAT8_LIMITS = {"float8_e4m3fn": (0.125, 448.0, 2.0 ** -6),
                  "float8_e5m2": (0.25, 57344.0, 2.0 ** -14),
                  "float8_e4m3fnuz": (0.125, 240.0, 2.0 ** -7),
                  "float8_e5m2fnuz": (0.125, 57344.0, 2.0 ** -15),
                  "float8_e8m0fnu": (1.0, 2.0 ** 127, 2.0 ** -127)}


class finfo(_Limits, metaclass=TorchNamedClass):
    """Limits of a floating point dtype (default: the default dtype): bits, eps, max, min, tiny,
    smallest_normal, resolution, dtype (its name)."""
    _c_type_name = "torch.finfo"  # (its name in PyTorch's messages)

    __module__ = "tapegrad"
    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")
    __hash__ = None    # as in PyTorch: comparable, not hashable

    def __init__(self, type=_NO_TYPE):  # noqa: A002  (PyTorch's parameter name)
        if type is _NO_TYPE:            # finfo() is the default dtype's (None is refused)
            type = _core.get_default_dtype()
        if type is _core.bfloat16:
            self._bfloat16()
            return
        if isinstance(type, _core.dtype) and type.name in _FLOAT8_LIMITS:
            eps, big, tiny = _FLOAT8_LIMITS[type.name]
            # (e8m0fnu has no sign: its min is its smallest value)
            self._set(bits=8, eps=eps, max=big, min=tiny if type.name == "float8_e8m0fnu"
                      else -big, tiny=tiny, smallest_normal=tiny, resolution=1.0,
                      dtype=type.name)
            return
        if type is _core.complex32:   # (a name only in tapegrad: its parts are float16)
            np_dtype = np.dtype(np.float16)
        else:
            np_dtype = _check_dtype(type, "finfo")
        if np_dtype.kind == "c":        # PyTorch's finfo of a complex dtype is its parts' dtype's
            np_dtype = np.dtype(f"f{np_dtype.itemsize // 2}")
        if np_dtype.kind != "f":
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo "
                            "to handle 'torch.finfo'")
        info = np.finfo(np_dtype)
        self._set(bits=int(info.bits), eps=float(info.eps), max=float(info.max),
                  min=float(info.min), tiny=float(info.smallest_normal),
                  smallest_normal=float(info.smallest_normal),
                  # PyTorch's: exactly 1e-06, not float32's
                  resolution=10.0 ** -int(info.precision), dtype=np_dtype.name)

    def _bfloat16(self) -> None:
        # float32's exponent range with 8 significand bits (numpy has no bfloat16 to ask)
        big = (2 - 2.0 ** -7) * 2.0 ** 127
        self._set(bits=16, eps=2.0 ** -7, max=big, min=-big, tiny=2.0 ** -126,
                  smallest_normal=2.0 ** -126, resolution=0.01, dtype="bfloat16")

    def __eq__(self, other):
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


# A quantized dtype's values live in an integer type: (its numpy twin, PyTorch's ScalarType name).
_QUANTIZED_STORAGE = {"qint8": (np.int8, "QInt8"), "quint8": (np.uint8, "QUInt8"),
                      "qint32": (np.int32, "QInt32"), "quint4x2": (np.uint8, "QUInt4x2"),
                      "quint2x4": (np.uint8, "QUInt2x4")}


class iinfo(_Limits, metaclass=TorchNamedClass):
    """Limits of an integer dtype: bits, max, min, dtype (its name)."""
    _c_type_name = "torch.iinfo"  # (its name in PyTorch's messages)

    __module__ = "tapegrad"
    __slots__ = ("bits", "max", "min", "dtype", "_quantized")
    __hash__ = None

    def __getattr__(self, name):
        # (reached only for an unset slot: the dtype of a quantized dtype's limits)
        if name == "dtype" and hasattr(self, "_quantized"):
            raise NotImplementedError(f"\"dtype\" not implemented for '{self._quantized}'")
        raise AttributeError(f"'torch.iinfo' object has no attribute '{name}'")

    def __init__(self, type):  # noqa: A002
        if isinstance(type, _core.dtype) and type.name in _QUANTIZED_STORAGE:
            # PyTorch answers a quantized dtype's limits from the integer type that holds its
            # values (FakeQuantize checks quant_min / quant_max against them), but has no dtype
            # name to give: reading .dtype (or the repr) raises, see __getattr__.
            info = np.iinfo(_QUANTIZED_STORAGE[type.name][0])
            self._set(bits=int(info.bits), max=int(info.max), min=int(info.min))
            object.__setattr__(self, "_quantized", _QUANTIZED_STORAGE[type.name][1])
            return
        # (bfloat16 has no numpy dtype to ask: it is a float type, refused as the others are)
        np_dtype = np.dtype(np.float32) if type is _core.bfloat16 or (
            isinstance(type, _core.dtype) and type.name in _FLOAT8_LIMITS) else \
            _check_dtype(type, "iinfo")
        if np_dtype.kind == "b":
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if np_dtype.kind not in "iu":
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        info = np.iinfo(np_dtype)
        self._set(bits=int(info.bits), max=int(info.max), min=int(info.min), dtype=np_dtype.name)

    def __eq__(self, other):
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
