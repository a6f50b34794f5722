"""Storages: the flat memory behind tensors, as `Tensor.untyped_storage()` and `Tensor.storage()`
return them in PyTorch.

A tensor's data is a numpy array that may view another one; the storage is the outermost
ndarray of that chain (`tensor._storage_and_geometry` names the same object when pickling), so
every view of one buffer reports the same `data_ptr()` and size, and writes through a storage
reach the tensors that view it.

- `UntypedStorage`: the buffer as bytes (`nbytes()`, items are ints 0-255).  A tensor's
  untyped storage is one object for as long as something holds it, as in PyTorch
  (`x.untyped_storage() is x.untyped_storage()`).
- `TypedStorage`: the same bytes read as the tensor's dtype.  PyTorch deprecates it and warns
  once; a new one is made at each call.
- `FloatStorage`, `DoubleStorage`, ...: PyTorch's legacy typed names.  Calling one builds a
  `TypedStorage` of its dtype; `isinstance(s, FloatStorage)` asks the dtype.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
from tapegrad._torch_names import TorchNamedClass
import ctypes
import warnings
import weakref

import numpy as np


_UNTYPED_CACHE: "weakref.WeakValueDictionary[int, UntypedStorage]" = weakref.WeakValueDictionary()
_warned_typed = False


def _root(arr: np.ndarray) -> np.ndarray:
    """The outermost ndarray whose memory arr views."""
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


def _address(arr: np.ndarray) -> int:
    return arr.__array_interface__["data"][0]


def _byte_span(root: np.ndarray) -> tuple[int, int]:
    """(lowest address, number of bytes) of the memory root's elements occupy."""
    if root.size == 0:
        return _address(root), 0
    low = high = _address(root)
    for n, step in zip(root.shape, root.strides):
        if step < 0:
            low += step * (n - 1)
        else:
            high += step * (n - 1)
    return low, high - low + root.itemsize


def _bytes_of(root: np.ndarray) -> np.ndarray:
    """A flat uint8 array viewing root's memory (shared, never a copy)."""
    if root.flags.c_contiguous or root.flags.f_contiguous:
        return root.reshape(-1, order="A").view(np.uint8)
    # A buffer built with stride tricks: view the span its elements cover through its address.
    # The storage object keeps root alive for as long as this view is reachable through it.
    low, count = _byte_span(root)
    flat = np.ctypeslib.as_array((ctypes.c_ubyte * count).from_address(low))
    if not root.flags.writeable:
        flat.flags.writeable = False
    return flat


def _check_index(index, size: int) -> int:
    if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
        raise TypeError(f"can't index a storage with {type(index).__name__}")
    i = int(index)
    if not -size <= i < size:
        raise IndexError(f"index {i} out of range for storage of size {size}")
    return i % size if size else i


def _initial_values(args: tuple, np_dtype: np.dtype, who: str) -> np.ndarray:
    """A new storage's elements from its constructor's arguments: none (empty), a size (zeros)
    or a sequence of values (bytes must each fit in 0-255, as PyTorch checks)."""
    if len(args) > 1:
        raise TypeError(f"{who}(): expected at most 1 argument, got {len(args)}")
    if not args:
        return np.zeros(0, np_dtype)
    if isinstance(args[0], (int, np.integer)) and not isinstance(args[0], bool):
        if args[0] < 0:
            raise RuntimeError(f"{who}: size must be non-negative, got {args[0]}")
        return np.zeros(int(args[0]), np_dtype)
    if np_dtype == np.uint8:
        wide = np.array(args[0], dtype=np.int64).reshape(-1)
        if wide.size and (wide.min() < 0 or wide.max() > 255):
            raise RuntimeError("Overflow when unpacking long")
        return wide.astype(np.uint8)
    return np.array(args[0], dtype=np_dtype).reshape(-1)


def _check_cpu(device, who: str) -> None:
    from ._device import as_device
    if device is not None and as_device(device).type != "cpu":
        raise RuntimeError(f"{who}: tapegrad has only the CPU device, not {device}")


def _listing(values: list, title: str) -> str:
    """PyTorch's storage repr: one item per line, each after a space, then the title."""
    return " " + "\n ".join(str(v) for v in values) + f"\n[{title}]"


_BYTE_ORDERS = {"little": "<", "big": ">", "native": "="}
_NOT_GIVEN = object()


def buffer_element_count(length: int, itemsize: int, offset: int, count: int, errors: dict,
                         *, offset_may_reach_end: bool) -> int:
    """How many `itemsize`-byte elements a read from byte `offset` of a `length`-byte buffer
    takes: `count`, or all that follow the offset when count < 0.  torch.frombuffer and
    Storage.from_buffer check the same three things in the same order, each with its own words:
    `errors` maps "offset", "multiple" and "size" to a ValueError message template over
    {length, offset, count, itemsize, rest} (rest: the bytes after the offset).  The offset may
    equal the length only where `offset_may_reach_end` (Storage.from_buffer's empty read)."""
    last = length if offset_may_reach_end else length - 1
    rest = length - offset

    def fail(check: str):
        return ValueError(errors[check].format(length=length, offset=offset, count=count,
                                               itemsize=itemsize, rest=rest))
    if offset < 0 or offset > last:
        raise fail("offset")
    if count < 0:
        if rest % itemsize:
            raise fail("multiple")
        return rest // itemsize
    if offset + count * itemsize > length:
        raise fail("size")
    return count


# (PyTorch's "offset" message names the offset as the length and the length as what it got)
_FROM_BUFFER_ERRORS = {
    "offset": "offset must be non-negative and no greater than buffer length ({offset}) , but "
              "got {length}",
    "multiple": "buffer size ({length}) must be a multiple of element size ({itemsize})",
    "size": "buffer has only {rest} elements after offset {offset}, but specified a size of "
            "{count}",
}


def _values_from_buffer(buffer, byte_order, count: int, offset: int, dtype) -> np.ndarray:
    """A copy of `count` values of `dtype` read from the bytes-like `buffer` from byte `offset`
    (count < 0: all that follow), in `byte_order`; PyTorch's checks and messages, in its order."""
    np_dtype = np.dtype(dtype.np_dtype)
    single_byte = np_dtype in (np.dtype(np.uint8), np.dtype(np.int8))  # (bool needs an order)
    if byte_order is None:
        raise TypeError("argument 2 must be str, not None")
    if not single_byte:
        if byte_order is _NOT_GIVEN:
            raise RuntimeError("function missing required argument 'byte_order' (pos 2)")
        if byte_order not in _BYTE_ORDERS:
            raise ValueError(f"invalid byte_order '{byte_order}' (expected 'big', 'little', or "
                             "'native')")
    try:
        raw = memoryview(buffer).cast("B")
    except TypeError:
        raise TypeError(f"a bytes-like object is required, not '{_type_name(buffer)}'") from None
    count = buffer_element_count(raw.nbytes, np_dtype.itemsize, offset, count,
                                 _FROM_BUFFER_ERRORS, offset_may_reach_end=True)
    if np_dtype.kind == "b":
        return np.frombuffer(raw, np.uint8, count, offset) != 0
    order = "=" if single_byte else _BYTE_ORDERS[byte_order]
    return np.frombuffer(raw, np_dtype.newbyteorder(order), count, offset).astype(np_dtype)


class _StorageBase(metaclass=TorchNamedClass):
    """What both storage kinds answer alike (they live on the CPU, in this process).  The
    metaclass prints the classes under PyTorch's names (`<class 'torch.storage.UntypedStorage'>`)."""

    __slots__ = ()

    def __len__(self) -> int:
        return self.size()

    def __iter__(self):
        return iter(self.tolist())

    def __sizeof__(self) -> int:
        # sys.getsizeof counts the bytes held, as PyTorch's storages define it (torchinfo and
        # other model summaries measure input sizes so)
        return object.__sizeof__(self) + self.nbytes()

    @property
    def device(self):
        """The CPU device (tapegrad has no other)."""
        from ._device import device
        return device("cpu")

    @property
    def is_cuda(self) -> bool:
        """False: tapegrad keeps everything on the CPU."""
        return False

    def is_shared(self) -> bool:
        """False: storages are never in shared memory across processes."""
        return False

    def is_pinned(self, device=None) -> bool:
        """False: pinned memory needs an accelerator."""
        return False

    def cpu(self):
        """Itself: the storage is on the CPU already."""
        return self

    def share_memory_(self):
        """Already usable by the threads of this process; returns self as PyTorch does."""
        return self


class UntypedStorage(_StorageBase):
    """A buffer of bytes on the CPU; the memory tensors view."""

    __slots__ = ("_bytes", "_owner", "__weakref__")

    def __init__(self, *args, device=None):
        _check_cpu(device, "UntypedStorage")
        data = _initial_values(args, np.dtype(np.uint8), "UntypedStorage")
        self._bytes = data
        self._owner = data

    @classmethod
    def from_buffer(cls, buffer, byte_order=_NOT_GIVEN, count: int = -1, offset: int = 0, *,
                    dtype=None) -> "UntypedStorage":
        """The bytes of `count` values of `dtype` read from a bytes-like object (a copy), in
        this machine's byte order."""
        if dtype is None:
            raise RuntimeError("argument 'dtype' cannot be None")
        return cls._viewing(_values_from_buffer(buffer, byte_order, count, offset, dtype))

    @classmethod
    def _viewing(cls, root: np.ndarray) -> "UntypedStorage":
        storage = cls.__new__(cls)
        storage._bytes = _bytes_of(root)
        storage._owner = root
        return storage

    # -- size and identity ----------------------------------------------------------------------
    def nbytes(self) -> int:
        """The number of bytes."""
        return int(self._bytes.size)

    def size(self) -> int:
        """The number of bytes (an untyped storage's elements are bytes)."""
        return int(self._bytes.size)

    def element_size(self) -> int:
        """1: the elements are bytes."""
        return 1

    def data_ptr(self) -> int:
        """The address of the first byte."""
        return _address(self._bytes)


    # -- items ---------------------------------------------------------------------------------
    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(self.size())
            if step != 1:
                raise RuntimeError(f"Trying to slice with a step of {step}, but only a step of "
                                   "1 is supported")
            part = UntypedStorage.__new__(UntypedStorage)
            part._bytes = self._bytes[start:max(start, stop)]
            part._owner = self._owner
            return part
        return int(self._bytes[_check_index(index, self.size())])

    def __setitem__(self, index, value):
        if isinstance(index, slice):
            self._bytes[index] = value
        else:
            self._bytes[_check_index(index, self.size())] = value

    def tolist(self) -> list:
        """The elements as a list of Python numbers."""
        return self._bytes.tolist()

    def fill_(self, value):
        """Write value into every element (the tensors viewing it see it); returns self."""
        self._bytes[...] = value
        return self

    def copy_(self, source, non_blocking=None):
        """Copy the elements of a storage of the same size into this one; returns self."""
        if source.nbytes() != self.nbytes():
            raise RuntimeError(f"size mismatch: copying {source.nbytes()} bytes into a storage "
                               f"of {self.nbytes()} bytes")
        self._bytes[...] = source._bytes
        return self

    def __reduce_ex__(self, protocol):
        # The buffer's array (tapegrad.save persists it beside the pickle): a storage loads
        # with weights_only=True as in PyTorch, through the allowlisted rebuild.
        whole = self._bytes.size == self._owner.nbytes
        return (_untyped_from_array, (self._owner if whole else self._bytes,))

    def clone(self):
        """A copy of this storage in new memory."""
        copy = UntypedStorage.__new__(UntypedStorage)
        copy._bytes = copy._owner = self._bytes.copy()
        return copy

    def __deepcopy__(self, memo):
        return self.clone()

    def untyped(self):
        """Itself (the bytes)."""
        return self

    def resize_(self, size):
        """Give this storage `size` bytes, keeping the first ones (new ones uninitialised), in
        new memory that every tensor viewing the old memory views from then on (their sizes,
        strides and offsets unchanged), as PyTorch reallocates a storage under its tensors:
        torchnet's APMeter and the multi-label mAP meters copied from it grow their score
        buffers with `scores.storage().resize_(n)` and then `scores.resize_(...)`.  Returns
        self."""
        nbytes = _check_new_size(size)
        if self._bytes.size != self._owner.nbytes:
            # (a slice of a storage shares its owner's memory, which it cannot reallocate)
            raise RuntimeError("Trying to resize storage that is not resizable")
        old_root = self._owner
        # The new buffer keeps the old one's dtype when the size allows it: tensor.resize_ then
        # recognises it as its storage and lays a larger shape out inside it, as PyTorch does.
        itemsize = old_root.dtype.itemsize
        np_dtype = old_root.dtype if nbytes % itemsize == 0 else np.dtype(np.uint8)
        new_root = np.empty(nbytes // np_dtype.itemsize, dtype=np_dtype)
        new_bytes = new_root.view(np.uint8)
        kept = min(nbytes, self._bytes.size)
        new_bytes[:kept] = self._bytes[:kept]
        _move_viewers(old_root, _address(self._bytes), new_bytes)
        self._bytes = new_bytes
        self._owner = new_root
        _UNTYPED_CACHE[id(new_root)] = self
        return self

    def __repr__(self) -> str:
        return _listing(self.tolist(), f"torch.storage.UntypedStorage(device=cpu) of size "
                                       f"{self.size()}")

    __str__ = __repr__


class _LegacyStorageType(TorchNamedClass):
    """Metaclass of FloatStorage & co.: calling one builds a TypedStorage of its dtype, and
    isinstance() compares the dtype, as PyTorch's legacy storage names do."""

    def __call__(cls, *args, **kwargs):
        # (PyTorch's deprecation warning comes when a typed storage is built, pointing at the
        # caller: torchnet's `torch.FloatTensor(torch.FloatStorage())` warns there)
        warn_typed_storage(stacklevel=3)
        if cls._dtype is None:
            return super().__call__(*args, **kwargs)
        return super(_LegacyStorageType, TypedStorage).__call__(*args, dtype=cls._dtype,
                                                                 **kwargs)

    def __instancecheck__(cls, obj):
        if cls._dtype is None:
            return type.__instancecheck__(cls, obj)
        return isinstance(obj, TypedStorage) and obj.dtype == cls._dtype


class TypedStorage(_StorageBase, metaclass=_LegacyStorageType):
    """A storage read as one dtype (PyTorch's deprecated `tensor.storage()`)."""

    _dtype = None
    __slots__ = ("_untyped", "_dtype_of")

    def __init__(self, *args, dtype=None, device=None):
        import tapegrad
        dtype = tapegrad.get_default_dtype() if dtype is None else dtype
        _check_cpu(device, "TypedStorage")
        values = _initial_values(args, np.dtype(dtype.np_dtype), "TypedStorage")
        self._untyped = UntypedStorage._viewing(values)
        self._dtype_of = dtype

    @classmethod
    def from_buffer(cls, buffer, byte_order=_NOT_GIVEN, count: int = -1, offset: int = 0, *,
                    dtype=None) -> "TypedStorage":
        """A storage of `count` values read from a bytes-like object (a copy): of the legacy
        class's dtype (ByteStorage.from_buffer(img.tobytes())), or TypedStorage's `dtype`."""
        import tapegrad
        if cls._dtype is not None:
            if dtype is not None:
                raise RuntimeError("from_buffer: 'dtype' can only be specified in "
                                   "UntypedStorage.from_buffer and TypedStorage.from_buffer")
            dtype = cls._dtype
        elif dtype is None:
            dtype = tapegrad.get_default_dtype()
        warn_typed_storage(stacklevel=3)
        values = _values_from_buffer(buffer, byte_order, count, offset, dtype)
        return TypedStorage._over(UntypedStorage._viewing(values), dtype)

    @classmethod
    def _over(cls, untyped: UntypedStorage, dtype) -> "TypedStorage":
        storage = object.__new__(TypedStorage)
        storage._untyped = untyped
        storage._dtype_of = dtype
        return storage

    def __reduce_ex__(self, protocol):
        return (_typed_over, (self._untyped, self._dtype_of))

    @property
    def _values(self) -> np.ndarray:
        raw = self._untyped._bytes
        itemsize = np.dtype(self._dtype_of.np_dtype).itemsize
        return raw[:raw.size - raw.size % itemsize].view(self._dtype_of.np_dtype)

    @property
    def dtype(self):
        """The dtype the bytes are read as."""
        return self._dtype_of

    def size(self) -> int:
        """The number of elements of the dtype."""
        return int(self._values.size)

    def element_size(self) -> int:
        """The size of one element in bytes."""
        return np.dtype(self._dtype_of.np_dtype).itemsize

    def nbytes(self) -> int:
        """The number of bytes."""
        return self._untyped.nbytes()

    def data_ptr(self) -> int:
        """The address of the first byte."""
        return self._untyped.data_ptr()

    def untyped(self) -> UntypedStorage:
        """The bytes behind this storage (shared)."""
        return self._untyped

    def type(self, dtype=None, non_blocking=False):
        """The legacy name of this storage's type ('torch.FloatStorage'), as PyTorch answers."""
        if dtype is not None:
            raise TypeError("TypedStorage.type(dtype) converts storages on CUDA setups only; "
                            "use .float(), .double(), ... on the CPU")
        return f"torch.{_LEGACY_NAMES[self._dtype_of.np_dtype.name]}"

    def __getitem__(self, index):
        if isinstance(index, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        return self._values[_check_index(index, self.size())].item()

    def __setitem__(self, index, value):
        if isinstance(index, slice):
            self._values[index] = value
        else:
            self._values[_check_index(index, self.size())] = value

    def tolist(self) -> list:
        """The elements as a list of Python numbers."""
        return self._values.tolist()

    def __array__(self, dtype=None, copy=None):
        values = self._values
        # A fresh ndarray object on the storage's memory, so reshaping it leaves the storage be.
        return values.view() if dtype is None else values.astype(dtype)

    def fill_(self, value):
        """Write value into every element (the tensors viewing it see it); returns self."""
        self._values[...] = value
        return self

    def copy_(self, source, non_blocking=None):
        """Copy the elements of a storage of the same size into this one; returns self."""
        if len(source) != len(self):
            raise RuntimeError(f"size mismatch: copying {len(source)} elements into a storage "
                               f"of {len(self)} elements")
        self._values[...] = np.asarray(source)
        return self

    def resize_(self, size):
        """Give this storage `size` elements (see UntypedStorage.resize_: the tensors viewing
        it follow it into the new memory).  Returns None, as PyTorch's TypedStorage.resize_."""
        self._untyped.resize_(_check_new_size(size, self.element_size()))

    def clone(self):
        """A copy of this storage in new memory."""
        return TypedStorage._over(UntypedStorage._viewing(self._values.copy()), self._dtype_of)

    def __deepcopy__(self, memo):
        return self.clone()

    def __repr__(self) -> str:
        return _listing(self.tolist(), f"torch.storage.TypedStorage(dtype={self._dtype_of}, "
                                       f"device=cpu) of size {self.size()}")

    __str__ = __repr__


def _check_new_size(size, itemsize: int = 1) -> int:
    """The byte count of a storage's new size of `size` items of `itemsize` bytes, as resize_
    takes it: an int (PyTorch allocates through an unsigned byte count, so a negative one fails
    in its allocator)."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        if hasattr(size, "__index__") and not isinstance(size, bool):
            size = size.__index__()
        else:
            raise RuntimeError(f"resize_ expects an int, but got {_type_name(size)}")
    nbytes = int(size) * itemsize
    if nbytes < 0:
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:98] ((ptrdiff_t)nbytes) >= 0. "
                           "alloc_cpu() seems to have been called with negative number: "
                           f"{nbytes + 2 ** 64}")
    return nbytes


def _move_viewers(old_root: np.ndarray, start: int, new_bytes: np.ndarray) -> None:
    """Point every tensor whose array views old_root's memory (which begins at address start)
    at the same place in new_bytes: same shape, strides and byte offset.  A storage knows no
    list of its tensors (views are plain ndarrays), so the live tensors are looked up through
    the garbage collector, which tracks every tensor; resizing a storage is rare (a meter's
    buffer grows a logarithmic number of times), so the scan is not on any hot path.  A tensor
    that no longer fits in a shrunk storage keeps the old memory (in PyTorch reading it is
    undefined behaviour)."""
    import gc
    from ._core import TensorBase
    for obj in gc.get_objects():
        # (type(), not isinstance: isinstance reads obj.__class__, which some module proxies
        # answer with a deprecation warning)
        if not issubclass(type(obj), TensorBase):
            continue
        arr = obj._array
        if _root(arr) is not old_root:
            continue
        offset = _address(arr) - start
        try:
            moved = np.ndarray(arr.shape, arr.dtype, buffer=new_bytes, offset=offset,
                               strides=arr.strides)
        except (TypeError, ValueError):
            continue        # (beyond the new end)
        # (numpy hands the view a base chain ending at the new buffer's owner, the storage)
        obj._array = moved


def _converter(method: str, np_name: str):
    """<storage>.<method>(): a TypedStorage copy in another dtype.  A typed storage converts its
    values (and is itself when it has the dtype already); an untyped one converts each of its
    bytes to one value, as PyTorch does (`untyped_storage().int()` of an int64 scalar 10 is the
    8 values 10, 0, ..., 0)."""
    def convert(self):
        import tapegrad
        dtype = getattr(tapegrad, np_name)
        if isinstance(self, TypedStorage):
            if dtype == self._dtype_of:
                return self
            values = self._values
        else:
            values = self._bytes
            warn_typed_storage(stacklevel=3)    # PyTorch makes the copy through a TypedStorage
        return TypedStorage._over(UntypedStorage._viewing(values.astype(dtype.np_dtype)), dtype)
    convert.__name__ = convert.__qualname__ = method
    convert.__doc__ = f"A copy of this storage as {np_name} (a typed {np_name} storage: itself)."
    return convert


for _method, _np_name in (("float", "float32"), ("double", "float64"), ("half", "float16"),
                          ("long", "int64"), ("int", "int32"), ("short", "int16"),
                          ("char", "int8"), ("byte", "uint8"), ("bool", "bool")):
    setattr(_StorageBase, _method, _converter(_method, _np_name))
del _method, _np_name

_LEGACY_NAMES = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
                 "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
                 "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage"}


def _legacy_class(np_name: str):
    import tapegrad
    name = _LEGACY_NAMES[np_name]
    cls = _LegacyStorageType(name, (TypedStorage,), {"_dtype": getattr(tapegrad, np_name),
                                                      "__slots__": (), "__module__": "torch"})
    cls.__qualname__ = name
    return cls


FloatStorage = _legacy_class("float32")
DoubleStorage = _legacy_class("float64")
HalfStorage = _legacy_class("float16")
LongStorage = _legacy_class("int64")
IntStorage = _legacy_class("int32")
ShortStorage = _legacy_class("int16")
CharStorage = _legacy_class("int8")
ByteStorage = _legacy_class("uint8")
BoolStorage = _legacy_class("bool")
# PyTorch's torch.Storage is its default legacy storage type.
Storage = FloatStorage


def _untyped_from_array(root: np.ndarray) -> UntypedStorage:
    """Inverse of UntypedStorage.__reduce_ex__."""
    return UntypedStorage._viewing(root)


def _typed_over(untyped: UntypedStorage, dtype) -> TypedStorage:
    """Inverse of TypedStorage.__reduce_ex__."""
    return TypedStorage._over(untyped, dtype)


def untyped_storage_of(arr: np.ndarray) -> UntypedStorage:
    """The UntypedStorage behind arr: one object per buffer while it is referenced."""
    root = _root(arr)
    key = id(root)
    storage = _UNTYPED_CACHE.get(key)
    # The cached storage holds its root, so a live entry's id cannot name another array.
    if storage is None or storage._owner is not root:
        storage = UntypedStorage._viewing(root)
        _UNTYPED_CACHE[key] = storage
    return storage


def warn_typed_storage(stacklevel: int = 4) -> None:
    """PyTorch's deprecation warning for typed storages, once per process."""
    global _warned_typed
    if not _warned_typed:
        _warned_typed = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                      "UntypedStorage will be the only storage class. This should only matter "
                      "to you if you are using storages directly.  To access UntypedStorage "
                      "directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=stacklevel)


def typed_storage_of(arr: np.ndarray, dtype) -> TypedStorage:
    """`tensor.storage()`: arr's storage read as its dtype, with PyTorch's deprecation warning."""
    warn_typed_storage()
    return TypedStorage._over(untyped_storage_of(arr), dtype)


def legacy_class_of(np_dtype: np.dtype):
    """`tensor.storage_type()`: the legacy storage class of a dtype, with the warning."""
    warn_typed_storage()
    return globals()[_LEGACY_NAMES[np_dtype.name]]


def is_storage(obj) -> bool:
    """Whether obj is a storage (typed or untyped)."""
    return isinstance(obj, (UntypedStorage, TypedStorage))


__all__ = ["UntypedStorage", "TypedStorage", "Storage", "FloatStorage", "DoubleStorage",
           "HalfStorage", "LongStorage", "IntStorage", "ShortStorage", "CharStorage",
           "ByteStorage", "BoolStorage", "is_storage"]
