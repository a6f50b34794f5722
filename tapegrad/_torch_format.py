"""Writing PyTorch's checkpoint format (what torch.save writes), without importing torch.

A checkpoint is a zip archive, every entry stored (no compression) under one folder, <root>/:

    data.pkl                 the object, pickled; each storage is a persistent id
                             ("storage", torch.<X>Storage, key, "cpu", number of elements)
    .format_version          b"1"
    .storage_alignment       b"64"
    byteorder                b"little"
    data/<key>               each storage's bytes, keys "0", "1", ... in order of first use
    version                  b"3\n"
    .data/serialization_id   40 random decimal digits

<root> is the file name without directory and extension ("archive" for a file object or a
non-ASCII name).  The zip is laid out as PyTorch's writer (miniz) lays it out: each local header
carries a "FB" extra field of 'Z's so the entry's data begins at a multiple of 64 bytes, sizes and
CRC follow the data in a descriptor, and the archive ends with the zip64 end records.  So a file
is byte for byte the one torch.save writes for the same object, except the serialization id.

Tensors pickle as PyTorch's do: `torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
requires_grad, OrderedDict())` (offset and strides in elements), v3 with an UntypedStorage and
the dtype for uint16/32/64, `_rebuild_parameter` for Parameters, `torch._tensor.
_rebuild_from_type_v2` for subclasses and tensors with attributes.  Tensors viewing one buffer
share one storage record.  The pickler is Python's pure-Python one, whose save_global this
module overrides to name torch's globals without importing torch (the C pickler imports every
global it writes, to check it); other tapegrad globals are written under torch's package name,
which tapegrad.load maps back.
"""
from __future__ import annotations

import contextvars
import io
import os
import pickle
import secrets
import struct
import sys
import zlib
from collections import OrderedDict

import numpy as np

from . import _core

__all__ = ["TorchPickler", "write_checkpoint", "archive_name"]

_ALIGNMENT = 64
_U32 = 0xFFFFFFFF           # a 32-bit field's "see the zip64 extra field" value
_ZIP64_FROM = _U32          # sizes and offsets from which an entry needs zip64 fields


class _Global:
    """A global of torch named by module and name: written as such, never imported."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args, **kwargs):
        # (callable only because pickle's save_reduce insists that a reduction's function is)
        raise TypeError(f"{self.module}.{self.name} is a name written into a checkpoint")


_GLOBALS: dict[tuple[str, str], _Global] = {}
# Protocol 4 writes a global's module and name as strings that pickle's memo shares by identity.
# PyTorch's classes name their module with one 'torch' string object and its dtypes (found by
# pickle's whichmodule) with another, and a dtype's name is a string of its own: the first dtype
# writes 'torch' anew, and its name even where an equal string came before.
_DTYPE_MODULE = "".join(["tor", "ch"])


def _glob(module: str, name: str) -> _Global:
    # one object per name, so a pickle writes each global once and refers to it after (memo)
    g = _GLOBALS.get((module, name))
    if g is None:
        if module is _DTYPE_MODULE:
            name = name[:1] + name[1:]          # a string of its own (see _DTYPE_MODULE)
        g = _GLOBALS[(module, name)] = _Global(module, name)
    return g


# numpy dtype name -> PyTorch's legacy storage class; the dtypes without one (uint16/32/64) are
# saved as UntypedStorage bytes with the dtype in the tensor record (_rebuild_tensor_v3)
_STORAGE_CLASSES = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage", "int8": "CharStorage",
    "uint8": "ByteStorage", "bool": "BoolStorage", "complex64": "ComplexFloatStorage",
    "complex128": "ComplexDoubleStorage",
}


# a quantized dtype's integers -> PyTorch's storage class for them
_QUANTIZED_STORAGE_CLASSES = {"quint8": "QUInt8Storage", "qint8": "QInt8Storage",
                              "qint32": "QInt32Storage"}


class _StorageRecord:
    """One storage of the checkpoint: its key, the bytes to write, and its pickled id (a
    quantized tensor's integers name their quantized storage class: `storage_class`)."""

    __slots__ = ("key", "root", "flat", "dtype", "pid_untyped", "pid_typed", "storage_class")

    def __init__(self, key: str, root: np.ndarray, flat: np.ndarray) -> None:
        self.key, self.root, self.flat = key, root, flat       # root kept alive: ids stay unique
        self.dtype = flat.dtype
        self.pid_typed = None
        self.pid_untyped = None
        self.storage_class = _STORAGE_CLASSES.get(self.dtype.name)

    def pid(self, untyped: bool):
        # one tuple per use, as PyTorch's persistent_id builds one per storage it meets
        if untyped:
            return ("storage", _glob("torch.storage", "UntypedStorage"), self.key, "cpu",
                    self.flat.nbytes)
        return ("storage", _glob("torch", self.storage_class), self.key, "cpu", self.flat.size)


class _StorageRef:
    """What a tensor's reduction hands the pickler in place of its storage."""

    __slots__ = ("record", "untyped")

    def __init__(self, record: _StorageRecord, untyped: bool) -> None:
        self.record, self.untyped = record, untyped


class _DataOf:
    """A Parameter's `.data` as PyTorch pickles it: a plain tensor over the same storage."""

    __slots__ = ("tensor",)

    def __init__(self, tensor) -> None:
        self.tensor = tensor


# The TorchPickler whose _reduce_by_class is running a class's own __reduce_ex__ (else None).
REDUCING_FOR: contextvars.ContextVar = contextvars.ContextVar("REDUCING_FOR", default=None)


def _defines_own_reduce(cls) -> bool:
    """Whether a user's Tensor subclass (or a class between it and Tensor) defines __reduce_ex__:
    torch.save's pickler calls it, where tapegrad's own classes are reduced here."""
    for klass in cls.__mro__:
        if "__reduce_ex__" in vars(klass):
            return not klass.__module__.startswith("tapegrad")
    return False


class TorchPickler(pickle._Pickler):
    """Pickles an object as torch.save does; `records` lists the storages to write after."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol) -> None:
        super().__init__(file, protocol)
        self.records: list[_StorageRecord] = []
        self._by_root: dict[int, _StorageRecord] = {}

    # -- storages -----------------------------------------------------------------------------
    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            return obj.record.pid(obj.untyped)
        from .storage import TypedStorage, UntypedStorage
        if isinstance(obj, TypedStorage):
            return self._storage_record(obj._values).pid(False)
        if isinstance(obj, UntypedStorage):
            return self._storage_record(obj._bytes, untyped=True).pid(True)
        return None

    def _storage_record(self, arr: np.ndarray, untyped: bool = False) -> _StorageRecord:
        """The record of a storage object's values (all of a root's memory, or a copy)."""
        root = _root(arr)
        if root.dtype == arr.dtype and arr.size * arr.itemsize == root.size * root.itemsize:
            return self._record_of_root(root, arr.dtype)
        return self._new_record(np.ascontiguousarray(arr).reshape(-1), np.ascontiguousarray(arr))

    def _record_of_root(self, root: np.ndarray, dtype) -> _StorageRecord:
        record = self._by_root.get(id(root))
        if record is None:
            from .storage import _bytes_of
            flat = _bytes_of(root).view(root.dtype) if root.dtype.isnative else \
                _bytes_of(root).view(root.dtype).astype(root.dtype.newbyteorder("="))
            record = self._new_record(flat, root)
            self._by_root[id(root)] = record
        elif record.dtype != dtype:
            raise RuntimeError("Cannot save multiple tensors or storages that view the same "
                               "data as different types")
        return record

    def _bfloat16_record(self, root: np.ndarray) -> _StorageRecord:
        """The BFloat16Storage of a bfloat16 tensor's float32 storage `root`: the high halves of
        its values (exactly bfloat16 ones), PyTorch's two bytes per element."""
        record = self._by_root.get(id(root))
        if record is None:
            from .storage import _bytes_of
            halves = (_bytes_of(root).view(np.uint32) >> np.uint32(16)).astype("<u2")
            record = _StorageRecord(str(len(self.records)), root, halves)
            record.storage_class = "BFloat16Storage"
            self.records.append(record)
            self._by_root[id(root)] = record
        elif record.storage_class != "BFloat16Storage":
            raise RuntimeError("Cannot save multiple tensors or storages that view the same "
                               "data as different types")
        return record

    def _new_record(self, flat: np.ndarray, root: np.ndarray) -> _StorageRecord:
        if flat.dtype.name not in _STORAGE_CLASSES and flat.dtype.name not in (
                "uint16", "uint32", "uint64"):
            raise TypeError(f"cannot save a storage of dtype {flat.dtype}")
        record = _StorageRecord(str(len(self.records)), root, flat)
        self.records.append(record)
        return record

    def _tensor_args(self, tensor, requires_grad: bool):
        """(storage, offset, size, stride, requires_grad, hooks[, dtype]) in elements."""
        from .storage import _byte_span
        arr = tensor._array
        root = _root(arr)
        item = arr.itemsize
        low = _byte_span(root)[0]
        offset = arr.__array_interface__["data"][0] - low
        if (root.dtype != arr.dtype or offset % item or offset < 0
                or any(st < 0 or st % item for st in arr.strides + root.strides)):
            # a reinterpreting view, or negative strides (PyTorch has none): its values alone
            root = arr.copy(order="C")
            low, offset = root.__array_interface__["data"][0], 0
            arr = root
        dtype = tensor.dtype
        if dtype is _core.bfloat16:
            record = self._bfloat16_record(root)
            untyped = False
        else:
            record = self._record_of_root(root, arr.dtype)
            # (a float8 tensor's uint8 codes are its bytes: PyTorch's v3 record names its dtype)
            untyped = arr.dtype.name not in _STORAGE_CLASSES or dtype in _core.FLOAT8_DTYPES
        args = (_StorageRef(record, untyped), offset // item, tuple(int(n) for n in arr.shape),
                # (an empty tensor's strides are the tensor's, numpy's are 0)
                tuple(tensor.stride()) if arr.size == 0 else tuple(st // item for st in arr.strides),
                bool(requires_grad), OrderedDict())
        if untyped:
            args += (dtype if dtype in _core.FLOAT8_DTYPES else
                     _core._dtype_by_name(arr.dtype.name),)
        return args

    # -- objects ------------------------------------------------------------------------------
    def reducer_override(self, obj):
        if isinstance(obj, _core.TensorBase):
            if _defines_own_reduce(type(obj)):
                return self._reduce_by_class(obj)
            return self._reduce_tensor(obj)
        t = type(obj)
        if getattr(t, "is_quantized", False) is True:
            return self._reduce_quantized(obj)
        if t is _DataOf:
            return self._rebuild(self._tensor_args(obj.tensor, False))   # .data
        from .tensor import Size
        if t is Size:
            return (_glob("torch", "Size"), (tuple(obj),))
        from ._device import device
        if t is device:
            return (_glob("torch", "device"),
                    (obj.type,) if obj.index is None else (obj.type, obj.index))
        import tapegrad
        if t is type(tapegrad.strided):
            return (_glob("torch.serialization", "_get_layout"), (str(obj),))
        return NotImplemented

    def _reduce_by_class(self, t):
        """What the class's own __reduce_ex__ gives (geoopt's ManifoldParameter wraps Tensor's
        reduction to rebuild its class and manifold), as torch.save's pickler asks it; Tensor's
        __reduce_ex__, reached from it through super(), answers with _reduce_tensor meanwhile."""
        token = REDUCING_FOR.set(self)
        try:
            return t.__reduce_ex__(self.proto)
        finally:
            REDUCING_FOR.reset(token)

    @staticmethod
    def _rebuild(args):
        name = "_rebuild_tensor_v3" if len(args) == 7 else "_rebuild_tensor_v2"
        return (_glob("torch._utils", name), args)

    def _reduce_tensor(self, t):
        from .nn.parameter import Parameter
        from .tensor import Tensor
        state = t.__dict__ or None
        if isinstance(t, Parameter):
            hooks = OrderedDict()
            if state is None:
                return (_glob("torch._utils", "_rebuild_parameter"),
                        (_DataOf(t), t.requires_grad, hooks))
            return (_glob("torch._utils", "_rebuild_parameter_with_state"),
                    (_DataOf(t), t.requires_grad, hooks, state))
        func, args = self._rebuild(self._tensor_args(t, t.requires_grad))
        # (a bfloat16 or float8 tensor's class is its dtype, which the record says)
        plain = type(t) is Tensor or t.dtype is _core.bfloat16 or t.dtype in _core.FLOAT8_DTYPES
        if plain and state is None:
            return func, args
        cls = _glob("torch", "Tensor") if plain else type(t)
        return (_glob("torch._tensor", "_rebuild_from_type_v2"), (func, cls, args, state or {}))

    def _reduce_quantized(self, q):
        """PyTorch's torch._utils._rebuild_qtensor(storage, offset, size, stride, qparams,
        requires_grad, hooks): the integers (row-major) in a storage of the quantized class,
        qparams (per_tensor_affine, scale, zero_point) or (per_channel_affine, scales float64,
        zero_points int64, axis)."""
        from .creation import tensor
        ints = np.ascontiguousarray(q._ints)
        record = self._new_record(ints.reshape(-1), ints)
        record.storage_class = _QUANTIZED_STORAGE_CLASSES[q.dtype.name]
        scheme = q.qscheme()
        if q._axis is None:
            qparams = (_glob("torch", scheme.name), float(q._scale), int(q._zero_point))
        else:
            qparams = (_glob("torch", scheme.name),
                       tensor(np.asarray(q._scale, dtype=np.float64)),
                       tensor(np.asarray(q._zero_point, dtype=np.int64)), int(q._axis))
        size = tuple(int(n) for n in ints.shape)
        stride = tuple(st // ints.itemsize for st in ints.strides) if ints.size else \
            tuple(int(np.prod(size[d + 1:])) for d in range(len(size)))
        return (_glob("torch._utils", "_rebuild_qtensor"),
                (_StorageRef(record, False), 0, size, stride, qparams, False, OrderedDict()))

    def save_dtype(self, obj):
        g = _glob(_DTYPE_MODULE, obj.name)
        memo = self.memo.get(id(g))
        if memo is not None:            # (a dtype met again: a reference, as pickle's save does)
            self.write(self.get(memo[0]))
            return
        self.save_global(g)

    dispatch[_core.dtype] = save_dtype

    def save_global(self, obj, name=None):
        if type(obj) is _Global:
            module, name = obj.module, obj.name
        else:
            name = name or getattr(obj, "__qualname__", None) or obj.__name__
            module = pickle.whichmodule(obj, name)
            if not (module == "tapegrad" or module.startswith("tapegrad.")):
                return super().save_global(obj, name)
            module = "torch" + module[len("tapegrad"):]     # tapegrad.load maps it back
        if self.proto >= 4:
            self.save(module)
            self.save(name)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + f"{module}\n{name}\n".encode("utf-8"))
        self.memoize(obj)

    dispatch[_Global] = save_global


def _root(arr: np.ndarray) -> np.ndarray:
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


# -- the zip ------------------------------------------------------------------------------------

def archive_name(f) -> str:
    """The folder PyTorch's writer puts the entries in: for a path, its last component without
    the extension (up to the last '/' or backslash, from the last '.'); 'archive' for a file
    object or a name with non-ASCII characters (written through a Python stream there)."""
    if hasattr(f, "write"):
        return "archive"
    name = os.fsdecode(os.fspath(f))
    if not name.isascii():
        return "archive"
    start = max(name.rfind("/"), name.rfind("\\")) + 1
    base = name[start:]
    dot = base.rfind(".")
    base = base[:dot] if dot >= 0 else base
    if not base:
        raise RuntimeError(f"invalid file name: {name}")
    return base


class _ZipWriter:
    """A stored zip written as PyTorch's miniz writer writes it (see the module docstring)."""

    def __init__(self, fh, root: str) -> None:
        self.fh, self.root = fh, root
        self.pos = 0
        self.central: list[bytes] = []

    def _write(self, data) -> None:
        self.fh.write(data)
        self.pos += memoryview(data).nbytes

    def record(self, name: str, data) -> None:
        full = f"{self.root}/{name}".encode("utf-8")
        view = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        size = len(view)
        offset = self.pos
        big_size, big_offset = size >= _ZIP64_FROM, offset >= _ZIP64_FROM
        zip64 = b""
        start = offset + 30 + len(full) + 4
        if big_size or big_offset:           # the zip64 extra field precedes the padding
            fields = (struct.pack("<QQ", size, size) if big_size else b"") + \
                (struct.pack("<Q", offset) if big_offset else b"")
            zip64 = struct.pack("<HH", 1, len(fields)) + fields
            start += len(zip64)
        pad = -start % _ALIGNMENT
        extra = zip64 + b"FB" + struct.pack("<H", pad) + b"Z" * pad
        # UTF-8 names; sizes and CRC in a descriptor after the data, which an empty entry lacks
        flags = 0x0808 if size else 0x0800
        self._write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 0, flags, 0, 0, 0, 0, 0, 0,
                                len(full), len(extra)) + full + extra)
        self._write(view)
        crc = zlib.crc32(view)
        if not size:
            pass
        elif big_size or big_offset:
            self._write(struct.pack("<IIQQ", 0x08074B50, crc, size, size))
        else:
            self._write(struct.pack("<IIII", 0x08074B50, crc, size, size))
        cfields = (struct.pack("<QQ", size, size) if big_size else b"") + \
            (struct.pack("<Q", offset) if big_offset else b"")
        cextra = struct.pack("<HH", 1, len(cfields)) + cfields if cfields else b""
        small = _U32 if big_size else size
        self.central.append(struct.pack(
            "<IHHHHHHIIIHHHHHII", 0x02014B50, 0, 0, flags, 0, 0, 0, crc, small, small,
            len(full), len(cextra), 0, 0, 0, 0, _U32 if big_offset else offset) + full + cextra)

    def finish(self) -> None:
        cd_offset = self.pos
        for entry in self.central:
            self._write(entry)
        cd_size = self.pos - cd_offset
        n = len(self.central)
        eocd64 = self.pos
        self._write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 0x031E, 0x2D, 0, 0, n, n,
                                cd_size, cd_offset))
        self._write(struct.pack("<IIQI", 0x07064B50, 0, eocd64, 1))
        self._write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, min(n, 0xFFFF), min(n, 0xFFFF),
                                cd_size if cd_size < _ZIP64_FROM else _U32,
                                cd_offset if cd_offset < _ZIP64_FROM else _U32, 0))


def write_checkpoint(obj, fh, root: str, pickle_protocol: int = 2,
                     byteorder_record: bool = True) -> None:
    """torch.save(obj) into the open binary file fh, entries under `root`/."""
    buf = io.BytesIO()
    pickler = TorchPickler(buf, pickle_protocol)
    pickler.dump(obj)
    zw = _ZipWriter(fh, root)
    zw.record("data.pkl", buf.getvalue())
    zw.record(".format_version", b"1")
    zw.record(".storage_alignment", str(_ALIGNMENT).encode())
    if byteorder_record:
        zw.record("byteorder", sys.byteorder.encode())
    for record in pickler.records:
        zw.record(f"data/{record.key}", np.ascontiguousarray(record.flat).view(np.uint8))
    zw.record("version", b"3\n")
    # random, as PyTorch's (two 64-bit numbers in 20 decimal digits each)
    zw.record(".data/serialization_id",
              b"%020d%020d" % (secrets.randbits(64), secrets.randbits(64)))
    zw.finish()
