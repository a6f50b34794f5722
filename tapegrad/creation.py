"""Tensor creation functions (tensor, zeros, ones, arange, linspace, eye, ...); the random ones live in
tapegrad._random and are re-exported here."""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import math
import numbers
import sys
import warnings
import weakref

import numpy as np

from . import _core, _ops_shape
from ._aten_range import aten_float_range
from ._device import check_device, check_unpinned
from ._extra_ops import _check_tensor
from ._real_torch import real_tensor_or_item, real_tensor_or_none
from ._layout import sparse_factory_layout, sparse_coo, strided
from ._memory_format import empty_array
from ._preserve_layout import empty_like_layout, like_layout
from .tensor import Tensor, is_int


def _default_float() -> np.dtype:
    """The default float dtype (set_default_dtype), read at each call: the core holds it."""
    return _core.get_default_dtype().np_dtype


def _np_dtype(dtype, fn: str = None):
    """The numpy dtype of factory `fn`'s `dtype=` argument (None stays None): PyTorch's TypeError
    for what it does not take as a dtype."""
    return None if dtype is None else _core.np_dtype_of(dtype, fn)


def _check_not_bool(dt: np.dtype, kernel: str) -> None:
    """PyTorch has no bool kernel for ranges (arange, linspace) or running sums."""
    if dt == np.bool_:
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


def _check_real_range(dt: np.dtype, kernel: str) -> None:
    """arange's kernel has neither bool nor complex instances (the windows, built on it, inherit
    the refusal of complex)."""
    _check_not_bool(dt, kernel)
    if dt.kind == "c":
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_core.scalar_type_name_of(dt)}'")


def _make(arr: np.ndarray, requires_grad: bool) -> Tensor:
    return _core.wrap_array(arr, requires_grad)


def _check_placement(fn: str, device, pin_memory: bool = False) -> None:
    """The `device=` and `pin_memory=` arguments of factory `fn`: the CPU, unpinned, is all there
    is (pinned memory needs an accelerator, as in a PyTorch build without one)."""
    check_device(device, fn)
    check_unpinned(pin_memory)


def _size_args(size, fn: str, position: int = 1) -> tuple:
    """zeros(2, 3), zeros((2, 3)), zeros([2, 3]) and zeros(t.shape) all mean shape (2, 3).
    `fn` and `position` name factory and argument in the wrong-type message."""
    packed = len(size) == 1 and isinstance(size[0], (tuple, list))
    if packed:
        size = tuple(size[0])
    if len(size) > 64:
        _ops_shape.check_ndim(len(size))
    for s in size:                      # (the common case first: plain non-negative ints)
        if type(s) is not int or s < 0:
            break
    else:
        return size if type(size) is tuple else tuple(size)
    # A one-element integer tensor is an int there, as PyTorch's argument parser takes it
    # (zeros(torch.tensor(3)) is zeros(3)); float and bool tensors stay refused.
    # A 0-d integer ndarray is one too: the parser takes any integer with __index__ but bool.
    size = tuple(int(s._array.reshape(-1)[0]) if isinstance(s, _core.TensorBase)
                 and s._array.size == 1 and s._array.dtype.kind in "iu" else
                 int(s) if isinstance(s, np.ndarray) and s.ndim == 0 and s.dtype.kind in "iu"
                 else s for s in size)
    for i, s in enumerate(size):
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise _size_type_error(fn, position, i, _type_name(s), packed)
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    return tuple(int(s) for s in size)


def _size_type_error(fn: str, position: int, i: int, type_name: str, packed: bool) -> TypeError:
    """PyTorch's message for a non-int at index i of a size: its argument parser decides from the
    first element whether the argument is a tuple of ints, then unpacks the rest (1-based)."""
    if i > 0:
        return TypeError(f"{fn}(): argument 'size' failed to unpack the object at pos {i + 1} "
                         f"with error \"type must be tuple of ints,but got {type_name}\"")
    found = f", but found element of type {type_name} at pos 0" if packed else f", not {type_name}"
    return TypeError(f"{fn}(): argument 'size' (position {position}) must be tuple of ints{found}")


def _infer_dtype(arr: np.ndarray):
    """PyTorch's inference for Python data: floats -> the default dtype, ints -> int64, bools -> bool."""
    kind = arr.dtype.kind
    if kind == "f":
        return _default_float()
    if kind in "iu":
        return np.dtype(np.int64)
    if kind == "b":
        return np.dtype(np.bool_)
    raise TypeError(f"Could not infer dtype of {arr.dtype}")


def _first_leaf(data):
    while isinstance(data, (list, tuple)) and data:
        data = data[0]
    return data


def _sequence_dtype(data, arr: np.ndarray):
    """PyTorch's dtype for a nested sequence: each element counts with its own type - a numpy
    scalar with its dtype, a Python float as the default float, an int as int64, a bool as bool
    - and floats win over ints (torch.promote_types, not numpy's float32 + int64 = float64).
    The elements are walked only when numpy values or tensors are in play (anywhere: a float64
    array after lists of Python floats makes float64) or numpy's dtype is not what Python
    numbers give.  A complex element makes the result complex, as wide as the widest float or
    complex element (a Python complex as the default complex dtype)."""
    if not _items_of_numpy_or_tensor(data)[0]:
        # Python numbers only: their kind decides, whatever width numpy read them in (an
        # array.array('f') of floats is float32 to numpy and was walked as one int leaf:
        # tensor(array.array('f', [1.5])) was silently int64 [1])
        if arr.dtype.kind == "c":
            return _default_complex()
        if arr.dtype.kind in "fiub":
            return _infer_dtype(arr)
    floats, complexes, others = [], [], []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, (np.generic, np.ndarray, _core.TensorBase)):
            # numpy scalars, arrays and tensors (torch.tensor([t0, t1]) of 0-d tensors) count
            # with their own dtype: a float tensor must never be read as an int, a complex128
            # one never narrowed to complex64.
            dt = item._array.dtype if isinstance(item, _core.TensorBase) else item.dtype
            (floats if dt.kind == "f" else complexes if dt.kind == "c" else others).append(dt)
        elif isinstance(item, float):
            floats.append(_default_float())
        elif isinstance(item, complex):
            complexes.append(_default_complex())
        else:
            others.append(np.dtype(np.bool_) if isinstance(item, bool) else np.dtype(np.int64))
    if any(d in _BAREBONES_UNSIGNED for d in others):
        return _promoted_in_order(data)
    if complexes:
        # (PyTorch promotes float64 with complex64 to complex128)
        wide = any(d.itemsize >= 16 for d in complexes) or any(d.itemsize >= 8 for d in floats)
        return np.dtype(np.complex128 if wide else np.complex64)
    if floats:
        return max(floats, key=lambda d: d.itemsize)
    return np.result_type(*others) if others else _infer_dtype(arr)


# uint16/32/64 promote with nothing but themselves and floats in PyTorch (c10::promoteTypes).
_BAREBONES_UNSIGNED = (np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64))


def _promoted_in_order(data):
    """The dtype of nested data holding uint16/32/64 values, promoted item by item in order as
    PyTorch infers it: such a type meets another integer type (or bool, or complex) only as an
    error, and yields to a float type."""
    result = None
    for leaf in _python_leaves(data):
        if isinstance(leaf, (np.generic, np.ndarray)):
            dt = leaf.dtype
        elif isinstance(leaf, bool):
            dt = np.dtype(np.bool_)
        elif isinstance(leaf, float):
            dt = _default_float()
        elif isinstance(leaf, complex):
            dt = _default_complex()
        else:
            dt = np.dtype(np.int64)
        if result is None or dt == result:
            result = dt
        elif result in _BAREBONES_UNSIGNED or dt in _BAREBONES_UNSIGNED:
            if dt.kind == "f" or result.kind == "f":
                result = dt if dt.kind == "f" else result
            else:
                raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, "
                                   f"attempted to promote {_core.scalar_type_name_of(result)} "
                                   f"and {_core.scalar_type_name_of(dt)}")
        elif result.kind in "iub" and dt.kind in "fc" or dt.kind in "iub" and result.kind in "fc":
            result = dt if dt.kind in "fc" else result
        else:
            result = np.promote_types(result, dt)
    return result


_PYTHON_RESULT_DTYPES = (np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.bool_))

# What numpy makes of Python data holding an int past int64: uint64 (all in [0, 2**64)), float64
# (mixed with ints below 2**63) or object (beyond) - object also for data that are not numbers.
_WIDE_INT_RESULTS = (np.dtype(np.uint64), np.dtype(np.float64), np.dtype(object))
_LONG_LONG_OVERFLOW = "Overflow when unpacking long long"


def _with_wide_ints_read(data, arr: np.ndarray, target):
    """`arr` (np.array of Python data) as PyTorch reads the data when an int in it may lie past
    int64: every int is unpacked as a C long long when the dtype inferred (no float or complex in
    the data) or given is an integer type - ValueError past int64, a given uint64 taking up to
    2**64 - 1 - and as a double otherwise.  (numpy's uint64 or float64 for such ints had wrapped
    to -2**63 or silently become float32.)  Data that are not numbers raise PyTorch's inference
    error."""
    if arr.dtype.kind == "O":
        error = _inference_error(data)
        if error is not None:
            raise error
    elif not (arr.size and np.abs(arr).max() >= 2.0 ** 63):
        return arr      # no int past int64 in it (one C pass spares walking a list of floats)
    leaves = list(_python_leaves(data))
    wide = [v for v in leaves if type(v) is int and not -2 ** 63 <= v < 2 ** 63]
    if not wide:
        return arr
    kinds = {_leaf_kind(v) for v in leaves}
    inferred_kind = "c" if "c" in kinds else "f" if "f" in kinds else "i"    # floats win
    kind = target.kind if target is not None else inferred_kind
    if kind in "fcb":
        return np.array(leaves, dtype=np.complex128 if kind == "c" else np.float64).reshape(arr.shape)
    if target == np.dtype(np.uint64) and all(0 <= v < 2 ** 64 for v in wide):
        return np.array(leaves, dtype=np.uint64).reshape(arr.shape)
    raise ValueError(_LONG_LONG_OVERFLOW)


def _leaf_kind(v) -> str:
    """numpy's kind letter of one number of tensor data (a tensor was made a numpy scalar)."""
    if isinstance(v, np.generic):
        return v.dtype.kind
    return "b" if isinstance(v, bool) else "i" if isinstance(v, int) else \
        "f" if isinstance(v, float) else "c" if isinstance(v, complex) else "O"


def _python_leaves(data):
    """The items of nested sequences `data` (lists, tuples, ranges), in order."""
    if not isinstance(data, (list, tuple, range)):
        yield data
        return
    for item in data:
        yield from _python_leaves(item)


def _inference_error(data):
    """PyTorch's error when it infers the dtype of nested data (None when every leaf is a
    number): it walks the items in order and stops at the first that is a string (TypeError)
    or neither a number, an array, a tensor nor a sequence (RuntimeError)."""
    for leaf in _python_leaves(data):
        if isinstance(leaf, (bool, int, float, complex, np.ndarray, _core.TensorBase)):
            continue
        if isinstance(leaf, np.generic):
            if leaf.dtype.kind in "biufc":
                continue
            return TypeError(f"new(): invalid data type 'numpy.{type(leaf).__name__}'")
        if isinstance(leaf, (str, bytes)):
            return TypeError(f"new(): invalid data type '{type(leaf).__name__}'")
        # (the C type's tp_name, as PyTorch prints it: decimal.Decimal, datetime.date)
        return RuntimeError(f"Could not infer dtype of {_type_name(leaf)}")
    return None


def _check_complex_to_real(data, target) -> None:
    """PyTorch stores a Python complex into a real dtype with Python's own conversion, which
    refuses it (tensor([1.5+2j], dtype=float32) is a TypeError, not 1.5); a numpy complex scalar
    goes into a float dtype (its real part) but not into an integer one."""
    if target.kind not in "iuf":
        return
    for leaf in _python_leaves(data):
        if isinstance(leaf, complex) or (isinstance(leaf, np.complexfloating) and target.kind != "f"):
            if target.kind == "f":
                raise TypeError(f"must be real number, not {_type_name(leaf)}")
            raise TypeError(f"'{_type_name(leaf)}' object cannot be interpreted as an integer")


def _storing_error(data, np_dt) -> Exception:
    """PyTorch's error when it stores nested data holding a non-number into a tensor of a known
    dtype (the legacy constructors, new_tensor): Python's own conversion error for the first
    item that is not a number - to a double for a float dtype, to an integer otherwise.  A
    string first in line is measured as one more nesting, as torch.tensor measures it."""
    first = _first_leaf(data)
    if isinstance(first, str) and first is not data:
        return _string_data_error(data)
    for leaf in _python_leaves(data):
        if isinstance(leaf, (bool, int, float, np.number, np.bool_, np.ndarray, _core.TensorBase)):
            continue
        if isinstance(leaf, complex) and np.dtype(np_dt).kind in "cb":
            continue
        if np.dtype(np_dt).kind in "fc":
            return TypeError(f"must be real number, not {_type_name(leaf)}")
        return TypeError(f"'{_type_name(leaf)}' object cannot be interpreted as an integer")
    return TypeError(f"new(): invalid data type '{_type_name(data)}'")


def _numbers_for_dtype(data, np_dt):
    """Data given to torch.tensor with a dtype, its items read as PyTorch reads them: each by
    Python's conversion to that dtype, so a float or complex dtype takes anything float() takes
    (Decimal, Fraction: converted here), and any other item raises that conversion's TypeError
    ("must be real number, not NoneType"), where without a dtype the inference error is raised."""
    from ._legacy import _follows_sequence_protocol

    def readable(v):        # items the array reading below takes as they are
        return (isinstance(v, (bool, int, float, complex, np.ndarray, _core.TensorBase))
                or (isinstance(v, np.generic) and v.dtype.kind in "biufc")
                or (not isinstance(v, (str, bytes, np.generic)) and _follows_sequence_protocol(v)))

    leaves = list(_python_leaves(data))
    if all(readable(v) for v in leaves):
        return data
    if np.dtype(np_dt).kind in "fc" and all(
            readable(v) or (not isinstance(v, (str, bytes, np.generic))
                            and hasattr(type(v), "__float__")) for v in leaves):
        return _with_leaves_mapped(data, lambda v: v if readable(v) else float(v))
    raise _storing_error(data, np_dt)


def _with_leaves_mapped(data, fn):
    """Nested lists/tuples `data` with fn applied to every item that is not one."""
    if isinstance(data, (list, tuple, range)):
        return [_with_leaves_mapped(v, fn) for v in data]
    return fn(data)


_FOREIGN_BYTE_ORDER = ("given numpy array has byte order different from the native byte order. "
                       "Conversion between byte orders is currently not supported.")


def _string_data_error(data) -> Exception:
    """PyTorch's error for strings in tensor data: it reads a leading string as one more nested
    sequence (ValueError), a string after numbers (or alone) as an element of a bad type."""
    first = data
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    if isinstance(first, str) and first is not data:
        # (PyTorch names the type of the string's first item, a str even for a numpy.str_)
        return ValueError(f"too many dimensions '{_type_name(first[0] if first else first)}'")
    text = next((v for v in _python_leaves(data) if isinstance(v, (str, bytes))), "")
    return TypeError(f"new(): invalid data type '{_type_name(text)}'")


def _check_byte_order(array: np.ndarray) -> None:
    """PyTorch refuses a numpy array of non-native byte order (it would share or copy its bytes
    as they are); the C kernels read native bytes only, so such an array must never get in."""
    if not array.dtype.isnative:
        raise ValueError(_FOREIGN_BYTE_ORDER)


def tensor(data, dtype=None, requires_grad: bool = False, *, device=None,
           pin_memory: bool = False) -> Tensor:
    """A new leaf tensor holding a copy of `data` (nested lists, scalars, arrays or tensors)."""
    if type(data) is list and dtype is None and data and (device is None or device == "cpu") \
            and not pin_memory:
        arr = _plain_number_array(data)
        if arr is not None:
            if requires_grad and arr.dtype.kind != "f":
                raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                                   "gradients")
            return _make(arr, requires_grad)
    _check_placement("tensor", device, pin_memory)
    numbers = None                  # (the values of Python data, before any dtype's rounding)
    if isinstance(data, _core.TensorBase):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                      "requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=_core.user_stacklevel())
        if dtype is None and not isinstance(_np_dtype(data.dtype, "tensor"), np.dtype):
            # a dtype numpy lacks (bfloat16 in float32 storage, float8 as uint8 bits): its
            # array's dtype is not the tensor's, and the copy below came out float32 or uint8
            copied = data.detach().clone()
            return copied.requires_grad_() if requires_grad else copied
        arr = np.array(data._array, copy=True)
    elif isinstance(data, np.ndarray):
        # read as torch.from_numpy reads it (same refusals: negative strides, dtypes), then copied
        _core.check_numpy_convertible(data)
        arr = np.array(data, copy=True)
    elif isinstance(data, np.generic):          # a numpy scalar keeps its dtype too
        if data.dtype.kind not in "biufc":
            raise TypeError(f"new(): invalid data type 'numpy.{type(data).__name__}'")
        arr = np.array(data, copy=True)
        _core.check_numpy_convertible(arr)      # (PyTorch reads it as a 0-d array)
    elif _is_typed_storage(data):
        arr = np.array(data, copy=True)     # its elements, in its dtype
    else:
        real = real_tensor_or_none(data)
        if real is not None:        # a real torch tensor: copied as a tensor is (and warned)
            return tensor(real, dtype, requires_grad, device=device, pin_memory=pin_memory)
        # With a dtype, items that are not numbers are read by that dtype's conversion (walked
        # only when numpy's reading shows such items: objects, strings, or a failure)
        with_dtype = dtype is not None and not isinstance(data, (str, bytes))
        if not isinstance(data, _PYTHON_SCALARS):
            from ._legacy import _follows_sequence_protocol
            if with_dtype and not _follows_sequence_protocol(data):
                data = _numbers_for_dtype(data, _np_dtype(dtype, "tensor"))
            elif not _follows_sequence_protocol(data):
                # PyTorch reads numbers and sequences only: an object numpy would convert (by
                # __array__) is refused as a set or None is
                raise RuntimeError(f"Could not infer dtype of {_type_name(data)}")
            # (read here, so that their errors are not taken for the inference error below)
            data = _read_sequence_objects(data, infer=dtype is None)
        try:
            data, arr = _nested_array(data, _np_dtype(dtype, "tensor"))
        except (TypeError, ValueError):
            # PyTorch infers the dtype from every item before it stores any: None among the
            # items is refused as such, not as a ragged nesting.  With a dtype it measures the
            # nesting first (the ragged error stands) and converts each item as it stores it.
            error = None if with_dtype else _inference_error(data)
            if error is None:
                raise
            raise error from None
        if with_dtype and arr.dtype.kind in "OUS":
            converted = _numbers_for_dtype(data, _np_dtype(dtype, "tensor"))
            if converted is not data:
                data, arr = _nested_array(converted, _np_dtype(dtype, "tensor"))
        if arr.dtype.kind in "US" or (arr.dtype.kind == "O" and isinstance(_first_leaf(data), str)):
            raise _string_data_error(data)
        if arr.dtype in _WIDE_INT_RESULTS:
            arr = _with_wide_ints_read(data, arr, _np_dtype(dtype, "tensor"))
        numbers = arr
        if arr.dtype.kind == "c" and dtype is not None:
            _check_complex_to_real(data, _np_dtype(dtype, "tensor"))
        if dtype is None:       # with an explicit dtype, convert once (no float32 rounding first)
            with _core.IeeeResults():       # (1e40 as float32 is inf, silently as in PyTorch)
                arr = arr.astype(_sequence_dtype(data, arr), copy=False)
        if not arr.dtype.isnative:
            # a list of big-endian arrays: PyTorch converts their values element by element
            arr = arr.astype(arr.dtype.newbyteorder("="))
    target = _np_dtype(dtype, "tensor")
    if target is not None and numbers is not None:
        # Python numbers must fit an integer dtype as PyTorch checks each (it wrapped silently:
        # tensor([250], dtype=int8) held -6)
        from ._legacy import _check_int_range
        _check_int_range(numbers, target)
    if target is not None:
        if arr.dtype.kind == "c" and isinstance(data, np.ndarray):
            # (a sequence of numpy complex scalars PyTorch reads one by one with float(), which
            # gives numpy's ComplexWarning, as the cast below does)
            arr = _core.complex_cast_to(arr, target.kind)
        with _core.IeeeResults():
            arr = arr.astype(target, copy=False)
    if requires_grad and arr.dtype.kind not in "fc":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")
    if isinstance(data, np.ndarray):
        keep_numpy_strides(arr)
    return _make(arr, requires_grad)


_PYTHON_NUMBERS = frozenset((float, int, bool))
_FLOAT_OR_INT = frozenset((float, int))


def _plain_number_array(data: list):
    """tensor()'s common case without its nested walks: a list of Python floats and/or ints, or
    a list of such lists, as the array the general route makes of it (floats -> the default
    float dtype, ints alone -> int64).  None for anything else (bools, numpy values, tensors,
    ragged rows, ints beyond int64), which takes the general route and its errors."""
    types = set(map(type, data))
    if types == _LIST:
        row_types = set()
        for row in data:
            row_types |= set(map(type, row))
        if not row_types or not row_types <= _FLOAT_OR_INT:
            return None
        types = row_types
    elif not types <= _FLOAT_OR_INT:
        return None
    try:
        arr = np.array(data)
    except ValueError:
        return None                     # (ragged)
    if float in types:
        if arr.dtype.kind != "f":
            return None
        with _core.IeeeResults():       # (1e40 as float32 is inf, silently as in PyTorch)
            return arr.astype(_default_float(), copy=False)
    # an int beyond int64 (numpy made uint64, float64 or objects of them): the general route's
    # _with_wide_ints_read gives PyTorch's error
    return arr if arr.dtype == np.int64 else None


_LIST = frozenset((list,))
_PYTHON_SCALARS = (bool, int, float, complex, list, tuple)


def _items_of_numpy_or_tensor(data) -> tuple[bool, bool]:
    """(whether a numpy value or a tensor is anywhere in nested sequence `data`, whether an
    ndarray is one of its items).  A sequence of Python numbers only is checked at C speed (the
    set of its item types), so the walk costs one Python step per sequence, not per number."""
    if not isinstance(data, (list, tuple)):
        return isinstance(data, (np.generic, np.ndarray, _core.TensorBase)), False
    foreign = array_item = False
    stack = [data]
    while stack:
        seq = stack.pop()
        if set(map(type, seq)) <= _PYTHON_NUMBERS:
            continue
        for item in seq:
            if isinstance(item, (list, tuple)):
                stack.append(item)
            elif isinstance(item, np.ndarray):
                foreign = array_item = True
            elif isinstance(item, (np.generic, _core.TensorBase)):
                foreign = True
    return foreign, array_item


_warned_list_of_arrays = False


def _warn_list_of_arrays() -> None:
    """PyTorch's TORCH_WARN_ONCE (once per process, whatever the warning filters) when it stores
    an ndarray item of a sequence element by element; the warning names the user's line."""
    global _warned_list_of_arrays
    if _warned_list_of_arrays:
        return
    _warned_list_of_arrays = True
    _core.torch_warn("Creating a tensor from a list of numpy.ndarrays is extremely slow. Please "
                     "consider converting the list to a single numpy.ndarray with numpy.array() "
                     "before converting to a tensor.", "torch/csrc/utils/tensor_new.cpp:252")


def _nested_array(data, target=None):
    """(data, np.array(data)) for nested Python sequences as PyTorch reads them: a tensor inside
    is one number (_tensors_as_scalars); a ragged nesting raises PyTorch's error; an ndarray
    item of a non-empty result warns once (PyTorch stores it element by element).  target is
    the numpy dtype the values will be stored in (None: the one PyTorch infers from data); it
    decides the error for a tensor item of other than one element."""
    data = _read_sequence_objects(data, infer=target is None)
    try:
        data, arr = _rectangular_array(data)
    except _NotOneElementItem:
        raise _not_one_element_error(data, target) from None
    if arr.size and isinstance(data, (list, tuple)) and _items_of_numpy_or_tensor(data)[1]:
        _warn_list_of_arrays()
    return data, arr


# ---- sequence objects (pandas Series, deque, user classes) read item by item ----------------
#
# PyTorch reads data that is neither a tensor nor an ndarray through Python's sequence protocol
# only, never through __array__: it measures the shape along obj[0], obj[0][0], ... (an
# IndexError or KeyError there is "could not determine the shape"), infers the dtype from
# obj[i] for every i (the dtype of each item: a float64 Series is float64, an int8 one int8; an
# obj[i] that fails raises as is), and stores the values in iteration order.  numpy's reading of
# the same object (by __array__) made a float64 Series float32 silently, and took a Series whose
# index is not 0..n-1 or a DataFrame, both of which PyTorch refuses (Series[i] looks up a label).

_MAX_DIMS = 64
_NOT_SEQUENCE_OBJECTS = (list, tuple, range, str, bytes, np.ndarray, np.generic, _core.TensorBase)


def _is_sequence_object(obj) -> bool:
    from ._legacy import _follows_sequence_protocol
    return (not isinstance(obj, _NOT_SEQUENCE_OBJECTS) and not _is_typed_storage(obj)
            and _follows_sequence_protocol(obj))


def _holds_sequence_objects(data) -> bool:
    """Whether data is, or nested lists/tuples data hold, a sequence object.  A list of numbers
    is checked at C speed (the set of its item types)."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            if not all(t in _PYTHON_NUMBERS or issubclass(t, np.generic)
                       for t in set(map(type, item))):
                stack.extend(item)
        elif _is_sequence_object(item):
            return True
    return False


def _first_item_depth(data) -> int:
    """How many sequences deep data[0][0]... goes, measured as PyTorch measures the shape."""
    depth, obj = 0, data
    while isinstance(obj, (list, tuple, range, np.ndarray)) or _is_sequence_object(obj):
        if isinstance(obj, np.ndarray):
            return depth + obj.ndim
        depth += 1
        if depth > _MAX_DIMS:
            raise ValueError(f"too many dimensions '{type(obj).__name__}'")
        if len(obj) == 0:
            break
        try:
            obj = obj[0]
        except Exception:
            raise ValueError("could not determine the shape of object type "
                             f"'{type(obj).__name__}'") from None
    return depth


def _read(data, infer: bool, dim: int = 0):
    """data with each sequence object replaced by the list of its items: their values in
    iteration order, each number of the type obj[i] has when the dtype is inferred (a Series
    iterates over Python floats, while Series[i] and so PyTorch's inference see numpy.float64).
    obj[i] for every i is looked up then, as PyTorch's inference does: a failing lookup (a
    Series whose index has no label i) raises its own error.  A sequence object of numpy
    numbers of one type that is data itself becomes an ndarray of that type (the tensor's
    dtype and values, read at numpy's speed)."""
    if _is_sequence_object(data):
        values = list(data)
        typed = [data[i] for i in range(len(data))] if infer else values
        if len(values) != len(data):
            raise ValueError(f"expected sequence of length {len(data)} at dim {dim} "
                             f"(got {len(values)})")
        kinds = set(map(type, typed))
        if len(kinds) == 1 and set(map(type, values)) <= _PYTHON_NUMBERS:
            # (the common case, a Series of one dtype)
            kind = kinds.pop()
            if issubclass(kind, np.generic) and np.dtype(kind).kind in "biufc":
                array = np.array(values, dtype=kind)
                # (inside a list an ndarray would be an item PyTorch warns about: numbers there)
                return list(array) if dim else array
            return values
        return [_typed_as(_read(value, infer, dim + 1), item) for value, item in zip(values, typed)]
    if isinstance(data, (list, tuple)) and _holds_sequence_objects(data):
        return [_read(item, infer, dim + 1) for item in data]
    return data


def _typed_as(value, item):
    """value as a number of item's numpy type, when value is a Python number and item numpy's."""
    if (type(value) in _PYTHON_NUMBERS or type(value) is complex) and isinstance(item, np.generic) \
            and item.dtype.kind in "biufc":
        return item.dtype.type(value)
    return value


def _read_sequence_objects(data, infer: bool):
    """data with its sequence objects read as PyTorch reads them (see above), as nested lists;
    data itself when it holds none.  infer: the dtype is to be inferred (no dtype given)."""
    if not _holds_sequence_objects(data):
        return data
    # real torch tensors among the items are tensors, not sequence objects to walk
    data = _with_leaves_mapped(data, real_tensor_or_item)
    if not _holds_sequence_objects(data):
        return data
    depth = _first_item_depth(data)
    values = _read(data, infer)
    if _first_item_depth(values) < depth:
        # iteration gave a number where indexing gave a sequence (a DataFrame iterates over its
        # column labels)
        raise TypeError("not a sequence")
    return values


def _rectangular_array(data):
    from ._legacy import _ragged_error
    first = _first_leaf(data)
    if isinstance(first, np.ndarray) and first.ndim == 0 and first is not data:
        # PyTorch measures the shape along the first items: a 0-d array has no len()
        raise TypeError("len() of unsized object")
    if isinstance(first, _core.TensorBase):
        data = _tensors_as_scalars(data)
    try:
        return data, np.array(data)
    except ValueError as e:
        error = e
    scalars = _tensors_as_scalars(data)     # a tensor further in (refused if not one element)
    try:
        return scalars, np.array(scalars)
    except ValueError:
        raise (_ragged_error(data) or ValueError(
            f"expected a rectangular nested sequence of numbers: {error}")) from None


class _NotOneElementItem(ValueError):
    """A tensor of other than one element inside a sequence given to torch.tensor & co.; the
    caller that knows the stored dtype turns it into PyTorch's error (_not_one_element_error)."""


def _not_one_element_error(data, target) -> Exception:
    """PyTorch stores each item of a sequence with the conversion of the dtype it stores into:
    an integer or bool dtype reads a tensor item by __index__ (TypeError), a floating or
    complex one by float() / complex() (ValueError).  torch.tensor([tensor([1, 2])]) infers
    int64, so beginners building a tensor from a list of int label tensors see the TypeError."""
    if target is None:
        target = _sequence_dtype(data, np.empty(0))     # (the walk counts each tensor's dtype)
    if np.dtype(target).kind in "biu":
        return TypeError("only integer tensors of a single element can be converted to an index")
    return ValueError("only one element tensors can be converted to Python scalars")


def _tensors_as_scalars(data):
    """Inside a sequence given to torch.tensor, PyTorch reads each tensor as one number (its
    only element, whatever its shape: [tensor([0.5]), tensor([[2.]])] is a tensor of shape [2])
    and refuses a tensor of any other size.  Each becomes a numpy scalar of its dtype, so the
    element still counts with its own dtype (_sequence_dtype)."""
    if isinstance(data, _core.TensorBase):
        if data._array.size != 1:
            raise _NotOneElementItem()
        from .tensor import _warn_scalar_of_grad_tensor
        _warn_scalar_of_grad_tensor(data)       # PyTorch reads it as float(t) does
        return data._array.reshape(())[()]
    if isinstance(data, (list, tuple)):
        return [_tensors_as_scalars(item) for item in data]
    return data


def _is_typed_storage(data) -> bool:
    # No storage exists before tapegrad.storage is loaded, so this costs no import.
    storage = sys.modules.get("tapegrad.storage")
    return storage is not None and isinstance(data, storage.TypedStorage)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like tensor(), but shares memory with a numpy array or tensor when no conversion is needed."""
    check_device(device, "as_tensor")
    if isinstance(data, _core.TensorBase):
        # A tensor converts like Tensor.to (recorded, shared when the dtype already matches).
        return data if dtype is None else data.to(dtype)
    if isinstance(data, np.ndarray):
        if dtype is None or _np_dtype(dtype, "as_tensor") == data.dtype:
            return _shared_with_numpy(data)
        _warn_if_read_only(data)          # PyTorch reads it through a shared tensor, then converts
    real = real_tensor_or_none(data)
    if real is not None:            # a real torch tensor: shared as a tensor is
        return as_tensor(real, dtype=dtype)
    return tensor(data, dtype=dtype)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with numpy array `array`."""
    shared = _core.plainly_shared(array)        # (the common case, compiled)
    return shared if shared is not None else _shared_with_numpy(array)


def _shared_with_numpy(array) -> Tensor:
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {_type_name(array)})")
    _warn_if_read_only(array)
    own = _array_of_its_own(array)
    keep_numpy_strides(own)
    return _core.tensor_from_numpy(own)


def _array_of_its_own(array: np.ndarray) -> np.ndarray:
    """The ndarray a tensor sharing `array`'s memory holds: a view of its own, so reassigning the
    caller's array's shape or dtype (a.shape = (2, 3)) leaves the tensor's sizes alone, as in
    PyTorch, instead of silently reshaping it.  A read-only array is held itself: PyTorch writes
    through such a tensor anyway, and numpy lets only the array owning the memory be made
    writable again (a view of it cannot)."""
    return array.view() if array.flags.writeable else array


# Empty arrays whose strides a tensor reports as numpy gives them.  numpy gives a new empty array
# zero strides, and PyTorch keeps them for a tensor read from an ndarray (from_numpy, as_tensor,
# tensor), while its own empty tensors (factories, op results, reshapes) have row-major ones:
# Tensor.stride() reports those for any other empty array with zero strides.
# id -> array (ndarrays are unhashable, so no WeakSet).
_NUMPY_EMPTY_ARRAYS: "weakref.WeakValueDictionary[int, np.ndarray]" = \
    weakref.WeakValueDictionary()


def keep_numpy_strides(array: np.ndarray) -> None:
    if array.size == 0 and not any(array.strides):
        _NUMPY_EMPTY_ARRAYS[id(array)] = array


def has_numpy_strides(array: np.ndarray) -> bool:
    """Whether a tensor on this (empty, zero-strided) array was read from an ndarray."""
    return _NUMPY_EMPTY_ARRAYS.get(id(array)) is array


# PyTorch warns once per program (TORCH_WARN_ONCE) when it wraps a read-only array in a tensor:
# from_numpy, as_tensor and the legacy constructors (torch.Tensor(array)) alike; writes through the
# tensor reach the array anyway.  torch.tensor copies and never warns.
_warned_not_writable = False


def _warn_if_read_only(array: np.ndarray) -> None:
    global _warned_not_writable
    if not _warned_not_writable and not array.flags.writeable:
        _warned_not_writable = True
        _core.torch_warn("The given NumPy array is not writable, and PyTorch does not support "
                         "non-writable tensors. This means writing to this tensor will result in "
                         "undefined behavior. You may want to copy the array to protect its data "
                         "or make it writable before converting it to a tensor. This type of "
                         "warning will be suppressed for the rest of this program.",
                         "torch/csrc/utils/tensor_numpy.cpp:213")


def _default_complex() -> np.dtype:
    """The complex dtype of Python complex numbers: complex64, complex128 when the default
    float dtype is float64 (PyTorch's default complex dtype follows it)."""
    default = _default_float()
    if default == np.float16:
        return _core.complex32.np_dtype     # (PyTorch's complex32, which tapegrad refuses)
    return np.dtype(np.complex128 if default == np.float64 else np.complex64)


def _number_argument(value, fn: str, keyword: str = "fill_value", position=2, kind="Number"):
    """A Number-typed argument (full's fill_value, addcmul's value=) as PyTorch's argument parser
    reads it: a Python or numpy number, or the item of a 0-d tensor that does not require grad
    (TypeError for anything else: a string, None, a list would otherwise reach numpy, which
    parses or broadcasts them; a tensor requiring grad would silently lose its gradient)."""
    if isinstance(value, (bool, int, float, complex)):
        return value
    if isinstance(value, (np.number, np.bool_)) or (isinstance(value, _core.TensorBase)
                                                    and value.ndim == 0
                                                    and not value.requires_grad):
        return value.item()
    where = "" if position is None else f" (position {position})"
    raise TypeError(f"{fn}(): argument '{keyword}'{where} must be {kind}, not "
                    f"{_type_name(value)}")


def _fill_scalar(value, dt, numel: int):
    """Number `value` as fill_ stores it into `numel` elements of numpy dtype `dt` (PyTorch's
    checked conversion; its one-element fill converts to float16 unchecked, rounding to inf)."""
    return _core._scalar_to_dtype(value, dt, numel == 1)


def _filled(size, value, dtype, requires_grad, fn: str, user_value: bool = False) -> Tensor:
    """`value` in shape `size`; a `user_value` (full's, full_like's) is read and converted as
    PyTorch's fill_value (zeros' 0 and ones' 1 fit every dtype as they are)."""
    shape = _size_args(size, fn)
    dt = _np_dtype(dtype, fn) or _default_float()
    if requires_grad and dt.kind not in "fc":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    if not user_value and value == 0:
        return _make(np.zeros(shape, dtype=dt), requires_grad)
    if user_value:
        value = _fill_scalar(_number_argument(value, fn), dt, math.prod(shape))
    # (np.empty then fill: np.full's Python-level wrapper cost more than the fill itself)
    arr = np.empty(shape, dtype=dt)
    arr.fill(value)
    return _make(arr, requires_grad)


def _sparse_zeros(shape: tuple, dtype, requires_grad: bool, layout, fn: str):
    """A sparse tensor of `shape` in `layout` with no entries (zeros and empty with a sparse
    layout): for COO every dimension sparse; the default float dtype unless `dtype` is given."""
    from ._sparse_coo import _sparse_coo_tensor
    dt = _core.np_dtype_to_dtype(_np_dtype(dtype) or _default_float())
    if layout is not sparse_coo:
        from ._sparse_compressed import empty_compressed
        return empty_compressed(tuple(shape), layout, dt, requires_grad, fn)
    return _sparse_coo_tensor(_make(np.zeros((len(shape), 0), dtype=np.int64), False),
                              _make(np.zeros(0, dtype=dt.np_dtype), False), shape,
                              requires_grad=requires_grad)


def _in_layout_of(result: Tensor, input: Tensor, memory_format, fn: str) -> Tensor:
    """The *_like factory fn's result in the layout its memory_format names (PyTorch's default,
    preserve_format, is input's)."""
    arr = like_layout(result._array, input, memory_format, fn)
    return result if arr is result._array else _make(arr, result.requires_grad)


def _keyword_size(size: tuple, kw_size, fn: str) -> tuple:
    """The shape given positionally (zeros(2, 3), zeros((2, 3))) or as size=(2, 3); none at all
    is PyTorch's missing-argument TypeError (a 0-d tensor is zeros(()))."""
    if kw_size is None:
        if not size:
            raise TypeError(f'{fn}() missing 1 required positional arguments: "size"')
        return size
    if size:
        raise TypeError(f"{fn}() got multiple values for argument 'size'")
    if not isinstance(kw_size, (tuple, list)):
        raise TypeError(f"{fn}(): argument 'size' must be tuple of ints, not "
                        f"{_type_name(kw_size)}")
    return (tuple(kw_size),)


def zeros(*size, dtype=None, layout=None, device=None, requires_grad: bool = False,
          pin_memory: bool = False, **kwargs) -> Tensor:
    """A tensor of zeros of the given shape.

    Parameters
    ----------
    *size : int, or one sequence of ints
        The shape: ``zeros(2, 3)`` or ``zeros((2, 3))``; ``zeros(())`` is a 0-d tensor. It may
        instead be given as the keyword ``size=(2, 3)``.
    dtype : tapegrad.dtype, optional
        Default: the default float dtype (float32, see ``set_default_dtype``).
    device : optional
        Only the CPU is accepted (a CUDA device raises as PyTorch without CUDA).
    layout : tapegrad.layout, optional
        ``tapegrad.strided`` (the default) or ``tapegrad.sparse_coo`` (a sparse tensor with no
        entries).
    requires_grad : bool, default False
        Make the result a leaf that records operations (floating dtypes only).

    Examples
    --------
    >>> tapegrad.zeros(2, 3).shape
    torch.Size([2, 3])
    >>> tapegrad.zeros(2, dtype=tapegrad.int64)
    tensor([0, 0])
    """
    _check_placement("zeros", device, pin_memory)
    shape = _keyword_size(size, _only_size(kwargs, "zeros"), "zeros")
    sparse_layout = sparse_factory_layout(layout, "zeros")
    if sparse_layout:
        return _sparse_zeros(_size_args(shape, "zeros"), dtype, requires_grad, sparse_layout,
                             "torch.zeros")
    try:
        return _filled(shape, 0, dtype, requires_grad, "zeros")
    except RuntimeError as e:
        if "negative dimension" not in str(e):
            raise
        # PyTorch's zeros words this one check its own way (ones/empty/full use the other).
        raise RuntimeError("zeros: Dimension size must be non-negative.") from None


def ones(*size, dtype=None, layout=None, device=None, requires_grad: bool = False,
         pin_memory: bool = False, **kwargs) -> Tensor:
    """A tensor of ones of the given shape (``ones(2, 3)`` or ``ones((2, 3))``); ``dtype``, ``device``
    and ``requires_grad`` as for ``zeros``.

    Examples
    --------
    >>> tapegrad.ones(2, requires_grad=True)
    tensor([1., 1.], requires_grad=True)
    """
    _check_placement("ones", device, pin_memory)
    sparse_factory_layout(layout, "ones", "full")
    return _filled(_keyword_size(size, _only_size(kwargs, "ones"), "ones"), 1, dtype,
                   requires_grad, "ones")


def _only_size(kwargs: dict, fn: str):
    """`size` from **kwargs; any other name is an unexpected keyword, as Python would say."""
    size = kwargs.pop("size", None)
    if kwargs:
        raise TypeError(f"{fn}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return size


def full(size, fill_value, dtype=None, requires_grad: bool = False, *, layout=None, device=None,
         pin_memory: bool = False) -> Tensor:
    """A tensor of shape ``size`` (a sequence of ints) filled with ``fill_value``.

    Without ``dtype``, the dtype follows the value as in PyTorch: bool for a bool, int64 for an
    int, the default float dtype for a float.

    Examples
    --------
    >>> tapegrad.full((2,), 7), tapegrad.full((2,), 7.)
    (tensor([7, 7]), tensor([7., 7.]))
    """
    _check_placement("full", device, pin_memory)
    sparse_factory_layout(layout, "full", "full")
    if not isinstance(size, (tuple, list)):     # (PyTorch's parser takes no single int here)
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{_type_name(size)}")
    numpy_bool = isinstance(fill_value, np.bool_)   # (PyTorch's parser reads it as a float)
    fill_value = _number_argument(fill_value, "full")
    if dtype is None:                   # inferred as a tapegrad dtype: _filled checks `dtype=`
        dtype = _core.np_dtype_to_dtype(
            _default_float() if numpy_bool else
            np.dtype(np.bool_) if isinstance(fill_value, bool) else
            np.dtype(np.int64) if isinstance(fill_value, int) else
            _default_complex() if isinstance(fill_value, complex) else _default_float())
    return _filled((tuple(size),), fill_value, dtype, requires_grad, "full", True)


def empty(*size, dtype=None, layout=None, device=None, requires_grad: bool = False,
          pin_memory: bool = False, memory_format=None, **kwargs) -> Tensor:
    """An uninitialised tensor of the given shape: its values are whatever the memory held, so write
    them before reading. ``dtype`` defaults to the default float dtype.
    """
    _check_placement("empty", device, pin_memory)
    shape = _size_args(_keyword_size(size, _only_size(kwargs, "empty"), "empty"), "empty")
    sparse_layout = sparse_factory_layout(layout, "empty")
    if sparse_layout:
        return _sparse_zeros(shape, dtype, requires_grad, sparse_layout, "torch.empty")
    dt = _np_dtype(dtype, "empty") or _default_float()
    _check_requires_grad(dt, requires_grad)
    if getattr(memory_format, "_name", None) == "preserve_format":    # no input to preserve
        raise RuntimeError("unsupported memory format Preserve")
    return _make(empty_array(shape, dt, memory_format, "empty"), requires_grad)


# The *_like factories: input's shape, and its dtype unless given, laid out as memory_format names
# (by default, preserve_format, as input is).

def _plain_like_call(input, dtype, layout, device, pin_memory, requires_grad,
                     memory_format) -> bool:
    """A *_like call with no options on a row-major dense tensor (optimizers' state, masks in
    training loops): its result is a fresh array of input's shape and dtype, which the general
    path would reach only after its argument and layout checks (2 us of a 3 us call)."""
    return (dtype is None and layout is None and device is None and pin_memory is False
            and requires_grad is False and memory_format is None and isinstance(input, Tensor)
            and input._array.flags.c_contiguous)

def zeros_like(input: Tensor, dtype=None, *, layout=None, device=None,
               pin_memory: bool = False, requires_grad: bool = False,
               memory_format=None) -> Tensor:
    """Zeros with ``input``'s shape and (unless ``dtype`` is given) its dtype; a new leaf, not
    connected to ``input``'s graph.  A sparse ``input`` gives a sparse tensor with no entries.
    """
    if _plain_like_call(input, dtype, layout, device, pin_memory, requires_grad, memory_format):
        return _make(np.zeros(input._array.shape, input._array.dtype), False)
    check_unpinned(pin_memory)
    if getattr(input, "layout", strided) is not strided and not isinstance(input, Tensor):
        from ._sparse_coo import zeros_like_sparse
        check_device(device, "zeros_like")
        return zeros_like_sparse(input, dtype, requires_grad)
    _check_tensor(input, "zeros_like")
    check_device(device, "zeros_like")
    sparse_layout = sparse_factory_layout(layout, "zeros_like")
    if sparse_layout:
        return _sparse_zeros(tuple(input.shape), dtype or input.dtype, requires_grad,
                             sparse_layout, "torch.zeros_like")
    return _in_layout_of(_filled(input.shape, 0, dtype or input.dtype,
                                 requires_grad, "zeros_like"),
                         input, memory_format, "zeros_like")


def ones_like(input: Tensor, dtype=None, *, layout=None, device=None,
              pin_memory: bool = False, requires_grad: bool = False,
              memory_format=None) -> Tensor:
    """Ones with ``input``'s shape and (unless ``dtype`` is given) its dtype."""
    if _plain_like_call(input, dtype, layout, device, pin_memory, requires_grad, memory_format):
        arr = np.empty(input._array.shape, input._array.dtype)
        arr.fill(1)                     # (np.ones's Python wrapper costs more than the fill)
        return _make(arr, False)
    check_unpinned(pin_memory)
    _check_tensor(input, "ones_like")
    check_device(device, "ones_like")
    sparse_factory_layout(layout, "ones_like", "empty_strided")
    return _in_layout_of(_filled(input.shape, 1, dtype or input.dtype,
                                 requires_grad, "ones_like"),
                         input, memory_format, "ones_like")


def full_like(input: Tensor, fill_value, dtype=None, *, layout=None, device=None,
              pin_memory: bool = False,
              requires_grad: bool = False, memory_format=None) -> Tensor:
    """``fill_value`` in ``input``'s shape and (unless ``dtype`` is given) its dtype (the value is
    cast to it: ``full_like(int_tensor, 2.7)`` holds 2).
    """
    check_unpinned(pin_memory)
    _check_tensor(input, "full_like")
    check_device(device, "full_like")
    sparse_factory_layout(layout, "full_like", "empty_strided")
    return _in_layout_of(_filled(input.shape, fill_value, dtype or input.dtype,
                                 requires_grad, "full_like", True),
                         input, memory_format, "full_like")


def empty_like(input: Tensor, dtype=None, *, layout=None, device=None,
               pin_memory: bool = False, requires_grad: bool = False,
               memory_format=None) -> Tensor:
    """An uninitialised tensor with ``input``'s shape and (unless ``dtype`` is given) its dtype."""
    check_unpinned(pin_memory)
    _check_tensor(input, "empty_like")
    check_device(device, "empty_like")
    sparse_factory_layout(layout, "empty_like", "empty_strided")
    dt = _np_dtype(dtype or input.dtype, "empty_like")
    _check_requires_grad(dt, requires_grad)
    return _make(empty_like_layout(input, dt, memory_format, "empty_like"), requires_grad)


_ARANGE_SIGNATURES = (
    "(Number end, *, Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
    "torch.device device = None, bool pin_memory = False, bool requires_grad = False)",
    "(Number start, Number end, *, torch.dtype dtype = None, torch.layout layout = None, "
    "torch.device device = None, bool pin_memory = False, bool requires_grad = False)",
    "(Number start, Number end, Number step = 1, *, Tensor out = None, torch.dtype dtype = None, "
    "torch.layout layout = None, torch.device device = None, bool pin_memory = False, "
    "bool requires_grad = False)")


def _is_number_argument(v) -> bool:
    """What PyTorch's parser reads as a Number: a Python or numpy number, or a tensor (0-d; the
    callers refuse others with their own message)."""
    return isinstance(v, (numbers.Number, np.generic, _core.TensorBase)) and \
        not isinstance(v, (np.str_, np.bytes_))


def _invalid_combination(fn: str, given, signatures) -> TypeError:
    """PyTorch's parser's refusal of positional arguments that fit none of fn's signatures."""
    lines = "".join(f"\n * {signature}" for signature in signatures)
    return TypeError(f"{fn}() received an invalid combination of arguments - got "
                     f"({', '.join(_type_name(v) for v in given)}), but expected one of:"
                     f"{lines}\n")


def arange(start=None, end=None, step=None, dtype=None, requires_grad: bool = False, *,
           layout=None, device=None, pin_memory: bool = False) -> Tensor:
    """Values from start (default 0) up to but excluding end, every step; int64 for ints.

    PyTorch's three signatures are (end), (start, end) and (start, end, step): a lone bound,
    positional or `end=`, is the end; a step needs both bounds."""
    _check_placement("arange", device, pin_memory)
    sparse_factory_layout(layout, "arange", "arange.start_out")
    if (start is None or end is None) and (step is not None or (start is None and end is None)):
        given = ", ".join(f"{name}={_type_name(value)}" for name, value in
                          (("start", start), ("end", end), ("step", step)) if value is not None)
        lines = "".join(f"\n * {signature}" for signature in _ARANGE_SIGNATURES)
        raise TypeError(f"arange() received an invalid combination of arguments - got "
                        f"({given}), but expected one of:{lines}\n")
    given = [v for v in (start, end, step) if v is not None]
    if not all(map(_is_number_argument, given)):
        # PyTorch's parser: one bound fits one signature, whose refusal names the argument;
        # more fit several, and it lists them
        if len(given) == 1:
            raise TypeError(f"arange(): argument 'end' (position 1) must be Number, not "
                            f"{_type_name(given[0])}")
        raise _invalid_combination("arange", given, _ARANGE_SIGNATURES)
    if any(isinstance(v, _core.TensorBase) and (v.ndim or v.requires_grad) for v in given):
        # (PyTorch's Number parser takes a 0-d tensor that does not require grad only; a
        # one-element 1-d one was read, and one requiring grad lost its gradient)
        if len(given) == 1:
            raise TypeError("arange(): argument 'end' (position 1) must be Number, not Tensor")
        lines = "".join(f"\n * {signature}" for signature in _ARANGE_SIGNATURES)
        raise TypeError(f"arange() received an invalid combination of arguments - got "
                        f"({', '.join(_type_name(v) for v in given)}), but expected one of:"
                        f"{lines}\n")
    # 0-d tensors count as their values (an integer tensor as an int, for the dtype)
    start, end = _scalar_arg(start), _scalar_arg(end)
    step = 1 if step is None else _scalar_arg(step)
    if end is None:
        start, end = 0, start
    elif start is None:
        start = 0
    if step == 0 or step != step:
        raise RuntimeError("step must be nonzero")
    if dtype is None:
        all_int = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dt = np.dtype(np.int64) if all_int else _default_float()
    else:
        dt = _np_dtype(dtype, "arange")
        _check_real_range(dt, "arange_cpu")
    _check_requires_grad(dt, requires_grad)
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {_bound_text(start)} -> {_bound_text(end)}")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dt.kind in "iu":
        if (dt == np.int64 and type(start) is int and type(end) is int and type(step) is int
                and max(abs(start), abs(end), abs(step)) < 2 ** 53):
            # Python ints well inside int64: numpy's count and values are the kernel's exactly
            return _make(np.arange(start, end, step, dtype=np.int64), requires_grad)
        return _make(_integer_range(start, end, step, dt), requires_grad)
    # (An infinite step counts ceil(span / inf) = 0 values, where numpy gives the start.)
    values = (np.arange(start, end, step, dtype=np.float64) if math.isfinite(step)
              else np.empty(0, dtype=np.float64))
    if dt in (np.float32, np.float64):
        # ATen's lanes: numpy's start + i * ((start + step) - start) differs in the last bits
        values = aten_float_range(start, step, values.size, dt, _core._kernel_threads())
    return _make(values.astype(dt), requires_grad)


def _bound_text(v) -> str:
    """A bound as PyTorch's Scalar prints it in arange's message: 0.0 as 0, 1.5, inf, nan."""
    if isinstance(v, (float, np.floating)) and math.isfinite(v) and float(v).is_integer():
        return str(int(v))
    return str(v)


def _truncated_to_int64(*values) -> list:
    """Range bounds as ATen's integer kernels read them: converted to int64, their accumulate
    type (truncated toward zero; NaN, infinities and values past int64 refused)."""
    for v in values:
        if not (math.isfinite(v) and -2 ** 63 <= v < 2 ** 63):
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
    return [int(v) for v in values]


def _integer_range(start, end, step, dt) -> np.ndarray:
    """arange's values for an integer dtype as PyTorch's kernel makes them: start and step
    truncated to int64 (its accumulate type), start + i * step written as dt (wrapping); the
    count from the truncated bounds for int64 - ceil in integer arithmetic, a step truncated to
    0 refused - and from the bounds as given for the narrower types.  (arange(0, 5, 1.5,
    dtype=int64) is [0, 1, 2, 3, 4]; computed with the float step it had lost its last value.)"""
    first, last, stride = _truncated_to_int64(start, end, step)
    if dt == np.dtype(np.int64):
        if stride == 0:
            raise ValueError("step must be nonzero")
        sign = 1 if stride > 0 else -1
        span = last - first + stride - sign
        count = abs(span) // abs(stride) * (1 if (span >= 0) == (stride > 0) else -1)
    else:
        count = math.ceil((float(end) - float(start)) / float(step))
    values = first + np.arange(max(count, 0), dtype=np.int64) * stride
    return values.astype(dt)


# -- more creation functions -----------------------------------------------------------------------

def _check_requires_grad(dt, requires_grad: bool) -> None:
    if requires_grad and np.dtype(dt).kind not in "fc":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")


def _scalar_arg(x):
    """A Python number from a number or a one-element tensor (start/end/mean/std arguments)."""
    if isinstance(x, _core.TensorBase):
        return x.item()
    # (a numpy number's own arithmetic would wrap: arange(np.uint8(250), np.uint8(10), -60);
    # an np.bool_ stays, which arange reads as a float as PyTorch does)
    return x.item() if isinstance(x, np.number) else x


def _count_arg(x, fn: str, name: str, position: int) -> int:
    """An int argument such as `steps`: a Python/numpy int, or (as PyTorch's argument parser
    allows) a 0-d integer tensor."""
    if (isinstance(x, _core.TensorBase) and x.ndim == 0 and x._array.dtype.kind in "iu"):
        return int(x.item())
    if not is_int(x):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be int, not "
                        f"{_type_name(x)}")
    return int(x)


def _endpoints_as(dt, start, end):
    """linspace's start and end (None: unused) as PyTorch's kernel reads them: converted to dt
    with the checked conversion of every number written into a tensor (an integer dtype's
    endpoints as stored: uint8's -200 is 56; a float dtype's only checked, its values computed
    from the numbers as given)."""
    converted = []
    for v in (start, end):
        if v is not None and not isinstance(v, (complex, np.complexfloating)):
            stored = _core._scalar_to_dtype(v, dt)
            v = stored if dt.kind in "iu" else v
        converted.append(v)
    return converted


def _range_dtype(fn: str, dtype, start, end) -> np.dtype:
    """linspace's and logspace's result dtype: `dtype`, else the default float, or its complex
    counterpart when an endpoint is complex (PyTorch infers that one from the endpoints, and
    refuses a given real dtype then rather than dropping the imaginary part)."""
    dt = _np_dtype(dtype, fn)
    if not any(isinstance(v, (complex, np.complexfloating)) for v in (start, end)):
        return dt or _default_float()
    inferred = np.result_type(_default_float(), np.complex64)
    if dt is not None and dt.kind != "c":
        raise RuntimeError(f"torch.{fn}(): inferred dtype c10::complex<"
                           f"{'float' if inferred == np.complex64 else 'double'}> can't be safely "
                           f"cast to passed dtype {_core.scalar_type_name_of(dt)}")
    return dt or inferred


def _complex_range(dt: np.dtype, start, end, steps: int) -> np.ndarray:
    """linspace's values in complex dtype dt, as PyTorch's kernel counts them: the first half up
    from start, the second down from end, in dt's precision."""
    s, e = dt.type(start), dt.type(end)
    step = (e - s) / dt.type(steps - 1)
    idx = np.arange(steps)
    with _core.IeeeResults():
        return np.where(idx < steps // 2, s + step * idx.astype(dt),
                        e - step * (steps - idx - 1).astype(dt)).astype(dt)


def _round_to_float16(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).astype(np.float32).astype(np.float16).astype(np.float32)


def _sixteen_bit_linspace(start, end, steps: int, round_to) -> np.ndarray:
    """linspace's values in a 16-bit float dtype (float16, bfloat16), as float32 values that
    `round_to` (float32 -> the dtype's nearest values) has rounded.  PyTorch's kernel computes
    in the dtype itself, whose arithmetic runs each operation in float32 and rounds its result:
    the step, each index (exact up to 2048 / 256 only), each product and each sum are rounded,
    so a value can be several of the dtype's ulps from the exactly spaced one (bfloat16's
    linspace(-1, 1, 12)[5] is -0.09375, not -0.0908).  `start` and `end` are numbers, steps > 1."""
    f32 = np.float32
    s, e = round_to(f32(start)), round_to(f32(end))
    step = round_to(round_to(e - s) / round_to(f32(steps - 1)))
    idx = np.arange(steps)
    with _core.IeeeResults():
        up = round_to(s + round_to(step * round_to(idx.astype(f32))))
        down = round_to(e - round_to(step * round_to((steps - idx - 1).astype(f32))))
    return np.where(idx < steps // 2, up, down)


def _round_to_float32(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).astype(np.float32)


def _narrow_float_logspace(start, end, steps: int, base, round_to) -> np.ndarray:
    """logspace's values in float32, float16 or bfloat16, as float32 values that `round_to`
    (float64 -> the dtype's nearest values, through float32 as C++'s casts go) has rounded.
    PyTorch's CPU kernel rounds start, end and end - start to the dtype, divides in double,
    computes the exponents and the power in double, and rounds the power once.  (Its running
    index is a float for float32, exact below 2 ** 24 steps.)"""
    s, e = round_to(np.float64(start)), round_to(np.float64(end))
    step = np.float64(round_to(np.float64(np.float32(e) - np.float32(s)))) / (steps - 1)
    idx = np.arange(steps)
    with _core.IeeeResults():
        up = np.power(np.float64(base), np.float64(s) + step * idx)
        down = np.power(np.float64(base), np.float64(e) - step * (steps - idx - 1))
        return round_to(np.where(idx < steps // 2, up, down))


def linspace(start, end, steps, dtype=None, requires_grad: bool = False, *, layout=None,
             device=None, pin_memory: bool = False) -> Tensor:
    """`steps` values evenly spaced from start to end inclusive (float32 by default).

    Computed as PyTorch does (in the result's precision, the first half counted up from start and
    the second half down from end), so float32 values match PyTorch's bit for bit."""
    check_unpinned(pin_memory)
    check_device(device, "linspace")
    sparse_factory_layout(layout, "linspace", "linspace.out")
    _check_range_arguments("linspace", start, end, steps, "")
    steps = _count_arg(steps, "linspace", "steps", 3)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    start, end = _range_endpoints("linspace", start, end)
    dt = _range_dtype("linspace", dtype, start, end)
    _check_requires_grad(dt, requires_grad)
    if steps > 1:                   # (PyTorch fills 0 or 1 values without its kernel: bool too)
        _check_not_bool(dt, "linspace_cpu")
    if steps == 0:
        return _make(np.empty(0, dtype=dt), requires_grad)
    start, end = _endpoints_as(dt, start, end if steps > 1 else None)
    if steps == 1:
        return _make(np.full(1, start, dtype=dt), requires_grad)
    if dt.kind == "c":
        return _make(_complex_range(dt, start, end, steps), requires_grad)
    if dt == np.float16:
        return _make(_sixteen_bit_linspace(start, end, steps, _round_to_float16).astype(dt),
                     requires_grad)
    # PyTorch computes in the result's precision (integers: double from integer start/end) with
    # fused multiply-adds: emulated by one wider multiply-add and one rounding.
    if dt.kind == "f":
        ct = dt if dt.itemsize >= 4 else np.dtype(np.float32)
    else:
        ct = np.dtype(np.float64)
        start, end = int(start), int(end)
    wide = np.dtype(np.float64) if ct.itemsize == 4 else np.dtype(np.longdouble)
    s, e = ct.type(start), ct.type(end)
    step = (e - s) / ct.type(steps - 1)
    idx = np.arange(steps)
    with _core.IeeeResults():
        up = (wide.type(s) + wide.type(step) * idx).astype(ct)
        down = (wide.type(e) - wide.type(step) * (steps - idx - 1)).astype(ct)
    values = np.where(idx < steps // 2, up, down)
    if dt.kind in "iu":
        values = np.trunc(values)
    return _make(values.astype(dt), requires_grad)


def logspace(start, end, steps, base: float = 10.0, dtype=None, requires_grad: bool = False, *,
             layout=None, device=None, pin_memory: bool = False) -> Tensor:
    """`steps` values base**e for e evenly spaced from start to end inclusive (float32 default).

    As PyTorch: exponents counted up from start for the first half and down from end for the
    second (float32 and the 16-bit floats: in double from the dtype's endpoints, the power in
    double rounded once; float64: in the result's precision; integer results: in double from
    integer start/end), then raised to `base`.  Values match PyTorch's exactly (float64's may
    differ in the last place where the C library's pow does)."""
    check_unpinned(pin_memory)
    check_device(device, "logspace")
    sparse_factory_layout(layout, "logspace", "logspace.out")
    _check_range_arguments("logspace", start, end, steps, ", float base = 10.0")
    steps = _count_arg(steps, "logspace", "steps", 3)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if isinstance(base, _core.TensorBase) and base.ndim:   # (its float parser takes 0-d only)
        raise TypeError("logspace(): argument 'base' must be float, not Tensor")
    start, end = _range_endpoints("logspace", start, end)
    dt = _range_dtype("logspace", dtype, start, end)
    _check_requires_grad(dt, requires_grad)
    if steps > 1:                   # (PyTorch fills 0 or 1 values without its kernel: bool too)
        _check_not_bool(dt, "logspace_cpu")
    if dt.kind == "c":
        exps = (np.full(min(steps, 1), start, dtype=dt) if steps < 2 else
                _complex_range(dt, start, end, steps))
        with _core.IeeeResults():
            return _make(np.power(dt.type(base), exps).astype(dt), requires_grad)
    if steps == 0:
        return _make(np.empty(0, dtype=dt), requires_grad)
    if steps == 1:
        # PyTorch fills the one value base ** start computed in double from start as given
        # (4 ** 2.5 is 32 in int64), checked as any number written into the dtype
        with _core.IeeeResults():
            value = np.power(np.float64(base), np.float64(start))
        return _make(np.full(1, _core._scalar_to_dtype(float(value), dt, True), dtype=dt),
                     requires_grad)
    # PyTorch's overflow error, on the endpoints as given (uint8 refuses -2.5, not -2)
    _endpoints_as(dt, start, end)
    if dt in (np.float16, np.float32):
        round_to = _round_to_float16 if dt == np.float16 else _round_to_float32
        return _make(_narrow_float_logspace(start, end, steps, base, round_to).astype(dt),
                     requires_grad)
    if dt.kind == "f":
        ct = dt if dt.itemsize >= 4 else np.dtype(np.float32)
    else:
        ct = np.dtype(np.float64)
        start, end = int(start), int(end)
    with _core.IeeeResults():
        s, e = ct.type(start), ct.type(end)
        step = (e - s) / ct.type(steps - 1)
        idx = np.arange(steps)
        exps = np.where(idx < steps // 2, s + step * idx.astype(ct),
                        e - step * (steps - idx - 1).astype(ct)).astype(ct)
        values = np.power(ct.type(base), exps)
        values = values.astype(dt)      # (past an integer dtype's range: PyTorch's cast, quiet)
    return _make(values, requires_grad)


def _check_range_arguments(fn: str, start, end, steps, base: str) -> None:
    """linspace's and logspace's four signatures (each endpoint a Tensor or a Number, steps an
    int): arguments of other types fit none, and PyTorch's parser lists them (`base`: logspace's
    extra parameter, as its signatures show it)."""
    if _is_number_argument(start) and _is_number_argument(end) and (
            is_int(steps) or isinstance(steps, _core.TensorBase)):
        return
    signatures = [f"({a} start, {b} end, int steps{base}, *, Tensor out = None, torch.dtype dtype "
                  f"= None, torch.layout layout = None, torch.device device = None, bool "
                  f"pin_memory = False, bool requires_grad = False)"
                  for a, b in (("Tensor", "Tensor"), ("Number", "Tensor"), ("Tensor", "Number"),
                               ("Number", "Number"))]
    raise _invalid_combination(fn, (start, end, steps), signatures)


def _range_endpoints(fn: str, start, end):
    """linspace's and logspace's start and end as numbers: a tensor must be 0-d (PyTorch's
    check; a one-element 1-d tensor was read as its value)."""
    ranks = [(name, v.ndim) for name, v in (("start", start), ("end", end))
             if isinstance(v, _core.TensorBase) and v.ndim != 0]
    if ranks:
        got = " and ".join(f"{name} with {ndim} dimension(s)" for name, ndim in ranks)
        raise RuntimeError(f"{fn} only supports 0-dimensional start and end tensors, but got "
                           f"{got}.")
    return _scalar_arg(start), _scalar_arg(end)


def _integer_tensor_scalar(x) -> bool:
    """Whether x is a one-element tensor of an integer dtype (not bool), which PyTorch's argument
    parser reads as an int."""
    return (isinstance(x, _core.TensorBase) and x._array.size == 1
            and x._array.dtype.kind in "iu")


def eye(n, m=None, dtype=None, requires_grad: bool = False, *, layout=None, device=None,
        pin_memory: bool = False) -> Tensor:
    """The n x m (default n x n) identity matrix, float32 by default."""
    _check_placement("eye", device, pin_memory)
    sparse_factory_layout(layout, "eye", "eye.m_out")
    # PyTorch's int parser also takes a one-element integer tensor (eye(t.size(0)) in traced code)
    n, m = (int(x) if _integer_tensor_scalar(x) else x for x in (n, m))
    if not is_int(n):
        raise TypeError(f"eye(): argument 'n' (position 1) must be int, not {_type_name(n)}")
    if m is not None and not is_int(m):
        raise TypeError(f"eye(): argument 'm' (position 2) must be int, not {_type_name(m)}")
    n = int(n)
    m = n if m is None else int(m)
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    dt = _np_dtype(dtype, "eye") or _default_float()
    _check_requires_grad(dt, requires_grad)
    return _make(np.eye(n, m, dtype=dt), requires_grad)


def _broadcast_shapes(a: tuple, b: tuple) -> tuple:
    n = max(len(a), len(b))
    out = []
    for i in range(1, n + 1):
        da = a[len(a) - i] if i <= len(a) else 1
        db = b[len(b) - i] if i <= len(b) else 1
        if da != db and da != 1 and db != 1:
            raise RuntimeError(f"The size of tensor a ({da}) must match the size of tensor b ({db}) "
                               f"at non-singleton dimension {n - i}")
        out.append(db if da == 1 else da)
    return tuple(reversed(out))


# -- in-place initialisers (Tensor methods) ---------------------------------------------------------

_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
                 "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _check_inplace(t) -> None:
    """PyTorch's error for an in-place op on a leaf that requires grad (outside no_grad); checked
    before any random draw so that a failing call leaves the generator untouched.  (An inference
    tensor written outside inference mode is refused after the write, as PyTorch refuses it:
    the write's bump_version raises.)"""
    if t.requires_grad and t.is_leaf and t._base is None and _core.is_grad_enabled():
        # (a view taken in no_grad is a leaf too: _overwrite_ names PyTorch's rule for it)
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")


def zero_(self):
    """Fill with zeros in place."""
    _check_inplace(self)
    return _core._overwrite_(self, 0, "ZeroBackward0")


def fill_(self, value):
    """Fill with `value` (a number or a 0-d tensor) in place."""
    _check_inplace(self)
    dt = self._array.dtype
    if isinstance(value, _core.TensorBase):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.ndim} dimensions.")
        return _core._overwrite_(self, value._array, "FillBackward3", value)
    if not isinstance(value, (int, float, complex, np.number, np.bool_)):
        raise TypeError(f"fill_() received an invalid combination of arguments - got "
                        f"({_type_name(value)}), but expected one of:\n * (Tensor value)\n"
                        f" * (Number value)\n")
    value = _fill_scalar(value, dt, self._array.size)
    return _core._overwrite_(self, value, "FillBackward2")


for _name, _fn in (("zero_", zero_), ("fill_", fill_)):
    if _name not in Tensor.__dict__:
        setattr(Tensor, _name, _fn)
del _name, _fn

# The random functions live in tapegrad._random; these names stay importable from here (the compiled
# core's dropout looks up `default_generator` here: a function returning the global numpy Generator).
from ._random import (  # noqa: E402,F401  (re-exports)
    _global_numpy_generator as default_generator,
    manual_seed,
    normal,
    normal_,
    rand,
    randint,
    randn,
    randperm,
    uniform_,
)
