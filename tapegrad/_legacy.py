"""PyTorch's legacy constructors: `Tensor(data)`, `Tensor(*sizes)`, `FloatTensor(...)` and the
other typed tensor classes, and `autograd.Variable`.

`Tensor(...)` reaches `legacy_value` through Tensor.__init__ (tensor.py): results of ops are
made by the compiled core with TensorBase's own allocator, which does not call __init__, so the
op path pays nothing for these constructors.  Every path below either returns a fully
initialised tensor or raises: none leaves an empty object behind.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import sys
from collections.abc import Mapping

import numpy as np

from . import _core
from ._uninitialised import uninitialised
from ._device import as_device, is_device_like
from ._torch_names import torch_module_name
from .tensor import Size, invalid_arguments, is_int


_SIGNATURES = ("\n * (*, torch.device device = None)\n * (torch.Storage storage)\n"
               " * (Tensor other)\n * (tuple of ints size, *, torch.device device = None)\n"
               " * (object data, *, torch.device device = None)\n")


def _default_float() -> np.dtype:
    """Tensor(...)'s dtype: the default dtype (float32 unless the package lets scripts set it)."""
    import tapegrad
    get_default_dtype = getattr(tapegrad, "get_default_dtype", None)
    return np.dtype(np.float32) if get_default_dtype is None else get_default_dtype().np_dtype


def _check_legacy_device(device) -> None:
    if device is None:
        return
    if not is_device_like(device):
        raise TypeError(f"new(): argument 'device' must be torch.device, not "
                        f"{_type_name(device)}")
    d = as_device(device)
    if d.type != "cpu":
        raise RuntimeError(f"legacy constructor expects device type: cpu but device type: "
                           f"{d.type} was passed")


def _is_size_int(x) -> bool:
    """Whether the legacy constructor reads x as a size: an int as is_int says, or a 0-d integer
    ndarray (PyTorch's size parser takes any integer with __index__ but bool, as zeros() does:
    Tensor(np.array(2)) is an uninitialised tensor of 2 elements, not tensor(2.))."""
    return is_int(x) or (isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype.kind in "iu")


def _sized(shape, np_dt) -> np.ndarray:
    shape = [int(s) for s in shape]
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(shape)}")
    return uninitialised(tuple(shape), np_dt)


def _check_int_range(values: np.ndarray, np_dt) -> None:
    """Python numbers bound for an integer tensor must fit it, as PyTorch checks each one: a
    float within [min, max] of the type (it is then truncated); an int too, except that an
    unsigned type also takes ints down to -max, stored modulo 2**bits as C converts them."""
    if values.size == 0 or np_dt.kind not in "iu" or values.dtype.kind == "b":
        return
    info = np.iinfo(np_dt)
    low = -int(info.max) if np_dt.kind == "u" and values.dtype.kind in "iu" else int(info.min)
    if values.dtype.kind == "f" and bool(np.isnan(values).any()):
        fits = False
    else:
        fits = low <= values.min() and values.max() <= info.max
    if not fits:
        raise RuntimeError(f"value cannot be converted to type {np_dt.name} without overflow")


def _is_sequence(x) -> bool:
    """Whether PyTorch's reading of nested data descends into x: a list, a tuple or a numpy
    array of one dim or more (a list of arrays is measured as a list of lists)."""
    return isinstance(x, (list, tuple)) or (isinstance(x, np.ndarray) and x.ndim > 0)


def _sequence_items(x):
    """x's items as PyTorch reads an element of nested data at a dimension that is not the last
    (PySequence_Fast): a list, tuple or array as it is, any other iterable as a list (a dict's
    keys, a string's characters); None when x is not iterable ("not a sequence")."""
    if _is_sequence(x):
        return x
    if isinstance(x, (np.ndarray, _core.TensorBase)):      # (0-d: not iterable)
        return None
    try:
        return list(iter(x))
    except TypeError:
        return None


def _ragged_error(data, dim: int = 0):
    """PyTorch's error for nested data that does not form a box of numbers (None when it does).
    As PyTorch it measures the shape along the first items, then stores depth first, in order:
    the first element that breaks the shape, or is not a number where a number goes, names the
    error (so torch.FloatTensor((obs, info)), a gymnasium reset() result, is a ValueError about
    the info dict's length, not a TypeError)."""
    if not _is_sequence(data) or not len(data):
        return None
    first = len(data[0]) if _is_sequence(data[0]) else None
    if first is None:                           # the last dimension: each item is one number
        for d in data:
            if isinstance(d, np.ndarray) and d.ndim:        # (numpy's own refusal of float(array))
                return TypeError("only 0-dimensional arrays can be converted to Python scalars")
            if not (hasattr(type(d), "__float__") or hasattr(type(d), "__index__")):
                return TypeError(f"must be real number, not {_type_name(d)}")
        return None
    for d in data:
        items = _sequence_items(d)
        if items is None:
            return TypeError("not a sequence")
        if len(items) != first:
            return ValueError(f"expected sequence of length {first} at dim {dim + 1} "
                              f"(got {len(items)})")
        error = _ragged_error(items, dim + 1)
        if error is not None:
            return error
    return None


def _from_data(data, np_dt) -> np.ndarray:
    """An array of dtype np_dt from nested Python sequences (new) or a numpy array: the array
    itself when it already has dtype np_dt, else a converted copy."""
    if isinstance(data, np.ndarray):
        _core.check_numpy_convertible(data)     # (read as torch.from_numpy reads it)
        if data.dtype.kind not in "biuf":
            raise TypeError(f"can't convert np.ndarray of type {data.dtype}")
        from .creation import _warn_if_read_only, _array_of_its_own, keep_numpy_strides
        _warn_if_read_only(data)
        if data.dtype == np_dt:
            # PyTorch reads the array as torch.from_numpy does and converts only to another
            # dtype: Tensor(float32 array) shares its memory, writes reach the array
            own = _array_of_its_own(data)
            keep_numpy_strides(own)
            return own
        return np.array(data, dtype=np_dt, copy=True, order="K")    # (its layout, as .to())
    from .creation import (_WIDE_INT_RESULTS, _nested_array, _python_leaves, _storing_error,
                           _with_wide_ints_read)
    data, values = _nested_array(data, np_dt)
    if values.dtype.kind in "US" and isinstance(data, (list, tuple)):
        raise _storing_error(data, np_dt)
    if values.dtype in _WIDE_INT_RESULTS:
        if values.dtype.kind == "O" and not all(isinstance(v, int) for v in _python_leaves(data)):
            raise _storing_error(data, np_dt)
        values = _with_wide_ints_read(data, values, np.dtype(np_dt))
    if values.dtype.kind == "c" and np.dtype(np_dt).kind == "b":
        return np.array(values != 0, order="C")     # (a complex number is true when nonzero)
    if values.dtype.kind not in "biuf":
        raise _storing_error(data, np_dt)
    _check_int_range(values, np_dt)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.array(values, dtype=np_dt, order="C")


def _check_alias_dtype(other: _core.TensorBase, np_dt) -> None:
    """FloatTensor(other) & co. share other's storage, so other must already have their dtype."""
    if np_dt is not None and other._array.dtype != np_dt:
        opts = ("TensorOptions(dtype={}, device=cpu, layout=Strided, requires_grad=false "
                "(default), pinned_memory=false (default), memory_format=(nullopt))")
        raise TypeError(f"expected {opts.format(_core.c_type_name_of(np_dt))} (got "
                        f"{opts.format(_core.c_type_name_of(other._array.dtype))})")


def legacy_value(np_dt, args: tuple, kwargs: dict):
    """What the legacy constructor call `cls(*args, **kwargs)` holds: a new ndarray, or the tensor
    whose storage it shares (Tensor(other)).  np_dt is the typed class's dtype (None for Tensor:
    default-dtype data, any dtype for a shared tensor)."""
    kw = dict(kwargs)
    device = kw.pop("device", None)
    size = kw.pop("size", None)
    if kw or (size is not None and args):
        raise invalid_arguments("new", args, kwargs, _SIGNATURES)
    _check_legacy_device(device)
    data_dt = _default_float() if np_dt is None else np_dt
    if size is not None:
        if not isinstance(size, (tuple, list)) or not all(is_int(s) for s in size):
            raise invalid_arguments("new", args, kwargs, _SIGNATURES)
        return _sized(size, data_dt)
    if not args:
        return np.empty(0, dtype=data_dt)
    if _is_size_int(args[0]):
        for i, s in enumerate(args):
            if not _is_size_int(s):
                raise TypeError(f"new(): argument 'size' failed to unpack the object at pos "
                                f"{i + 1} with error \"type must be tuple of ints,but got "
                                f"{_type_name(s)}\"")
        return _sized(args, data_dt)
    if len(args) > 1:
        raise invalid_arguments("new", args, kwargs, _SIGNATURES)
    data = args[0]
    if isinstance(data, Size):
        return _sized(data, data_dt)
    if isinstance(data, _core.TensorBase):
        _check_alias_dtype(data, np_dt)
        return data
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    if isinstance(data, (list, tuple, np.ndarray)):
        return _from_data(data, data_dt)
    storage = sys.modules.get("tapegrad.storage")     # loaded once any storage exists
    if storage is not None and storage.is_storage(data):
        return _storage_elements(storage, data, np.dtype(data_dt))
    if _follows_sequence_protocol(data):    # range, deque, array.array, memoryview: PySequence_Check
        return _from_data(data, data_dt)     # (read item by item: creation._read_sequence_objects)
    raise TypeError(f"new(): data must be a sequence (got {_type_name(data)})")


def _follows_sequence_protocol(data) -> bool:
    """Python's sequence protocol as PyTorch's legacy constructors test it (PySequence_Check):
    indexable by position, mappings excluded.  (Named apart from _is_sequence, the nesting test
    of tensor data: sharing that name replaced it, and a string, indexable, then recursed for
    ever in _ragged_error.)"""
    return not isinstance(data, Mapping) and hasattr(type(data), "__getitem__") and hasattr(type(data), "__len__")


def _storage_elements(storage, data, np_dt: np.dtype) -> np.ndarray:
    """Tensor(storage): the whole storage as a 1-d array of np_dt, sharing its memory."""
    if isinstance(data, storage.TypedStorage):
        if data.dtype.np_dtype != np_dt:
            raise RuntimeError(f"Expected a Storage of type {_STORAGE_TYPE_NAMES[np_dt.name]} "
                               f"or an UntypedStorage, but got type "
                               f"{_STORAGE_TYPE_NAMES[data.dtype.np_dtype.name]} for argument 1 "
                               f"'storage'")
        data = data.untyped()
    raw = data._bytes
    return raw[:raw.size - raw.size % np_dt.itemsize].view(np_dt)


_STORAGE_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
                       "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                       "uint8": "Byte", "bool": "Bool"}


class LegacyTensorClassMeta(type):
    """What the metaclasses of the legacy tensor classes share (the dense ones here, torch.cuda's
    and torch.sparse's): a dtype, the device and layout flags, PyTorch's repr."""

    dtype = None
    is_cuda = False
    is_sparse = False

    def __repr__(cls) -> str:
        return f"<class '{torch_module_name(cls.__module__)}.{cls.__qualname__}'>"


def legacy_tensor_class(metaclass, name: str, dt, module: str, doc: str) -> type:
    """A legacy tensor class `name` of dtype `dt` made by `metaclass`, living in `module`."""
    cls = metaclass(name, (), {"__module__": module, "__doc__": doc})
    cls.dtype = dt
    return cls


class TypedTensorMeta(LegacyTensorClassMeta):
    """The metaclass of FloatTensor, LongTensor, ...: calling one builds a tensor of its dtype;
    isinstance(t, FloatTensor) asks whether t is a float32 tensor (none of them is a subclass of
    Tensor: as in PyTorch, every tensor's class is Tensor)."""

    def __call__(cls, *args, **kwargs):
        value = legacy_value(cls.dtype.np_dtype, args, kwargs)
        if isinstance(value, _core.TensorBase):
            # The same storage; differentiable (a view) when the source records, as PyTorch's.
            return value.view(value._array.shape) if value.requires_grad else value.detach()
        return _core.wrap_array(value)

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, _core.TensorBase) and obj._array.dtype == cls.dtype.np_dtype


def _typed_tensor_class(name: str, dt) -> type:
    return legacy_tensor_class(TypedTensorMeta, name, dt, "tapegrad",
                               f"Legacy constructor of {dt} tensors: {name}(data), "
                               f"{name}(*sizes), {name}(size=...).")


FloatTensor = _typed_tensor_class("FloatTensor", _core.float32)
DoubleTensor = _typed_tensor_class("DoubleTensor", _core.float64)
HalfTensor = _typed_tensor_class("HalfTensor", _core.float16)
LongTensor = _typed_tensor_class("LongTensor", _core.int64)
IntTensor = _typed_tensor_class("IntTensor", _core.int32)
ShortTensor = _typed_tensor_class("ShortTensor", _core.int16)
CharTensor = _typed_tensor_class("CharTensor", _core.int8)
ByteTensor = _typed_tensor_class("ByteTensor", _core.uint8)
BoolTensor = _typed_tensor_class("BoolTensor", _core.bool_)
