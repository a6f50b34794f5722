"""Reading checkpoints written by PyTorch's torch.save (its zip format), weights only.

A PyTorch checkpoint is a zip archive `<root>/data.pkl` + `<root>/data/<key>` (each storage's raw
little-endian bytes).  The pickle names a handful of PyTorch globals: `torch._utils.
_rebuild_tensor_v2` / `_rebuild_parameter` to build tensors from storages, `torch.<Type>Storage`
for each storage's element type, `torch.Size`, `torch.device`, the dtypes (`torch.float64`),
`collections.OrderedDict`.  Tensors of the dtypes without a legacy typed storage (uint16/32/64)
come as `_rebuild_tensor_v3` over a `torch.storage.UntypedStorage` (bytes) with their dtype.  These are mapped to
checked tapegrad equivalents; any other global is refused, exactly as a weights-only load of a
tapegrad checkpoint refuses it, so a published .pth (a model's state dict) loads safely.
"""
from __future__ import annotations

import io
import zipfile

import numpy as np

from . import serialization as _ser

# torch.<Name>Storage -> the numpy dtype of its bytes
_STORAGE_DTYPES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
    "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
    "ComplexFloatStorage": np.complex64, "ComplexDoubleStorage": np.complex128,
    "BFloat16Storage": None,
}


class UnsupportedDtypeError(TypeError):
    """A PyTorch checkpoint holds a tensor of a dtype tapegrad has no tensors of (bfloat16): the
    TypeError tapegrad raises for making such a tensor, not a 'corrupt file' error."""


UnsupportedDtypeError.__name__ = UnsupportedDtypeError.__qualname__ = "TypeError"


class _StorageType:
    """What `torch.FloatStorage` & co. resolve to: only its dtype, read by persistent_load."""

    def __init__(self, dtype) -> None:
        self.dtype = None if dtype is None else np.dtype(dtype)     # None: bfloat16


_UNTYPED = _StorageType(np.uint8)     # torch.storage.UntypedStorage: bytes


class _UntypedStorage:
    """An UntypedStorage's bytes, read as an array of each element type a tensor asks for, once
    per type: tensors of one dtype over it share that array (storage offsets and in-place
    writes as in PyTorch), and the array is its own storage, not a view of a byte array."""

    def __init__(self, raw: bytes, map_storage) -> None:
        self.raw = raw
        self.map_storage = map_storage
        self.typed: dict[np.dtype, np.ndarray] = {}

    def as_type(self, np_dtype: np.dtype) -> np.ndarray:
        arr = self.typed.get(np_dtype)
        if arr is None:
            if len(self.raw) % np_dtype.itemsize:
                raise _ser.CheckpointError(f"storage of {len(self.raw)} bytes is not a whole "
                                           f"number of {np_dtype} elements")
            arr = np.frombuffer(bytearray(self.raw), dtype=np_dtype.newbyteorder("<"))
            arr = self.map_storage(arr.astype(np_dtype, copy=False))
            self.typed[np_dtype] = arr
        return arr


def _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, backward_hooks, metadata=None):
    if type(offset) is not int or not isinstance(size, tuple) or not isinstance(stride, tuple):
        raise _ser.CheckpointError("malformed tensor record")
    item = storage.dtype.itemsize
    return _ser._checked_rebuild_tensor(
        _ser._TensorClass("Tensor"), storage, offset * item, tuple(size),
        tuple(int(s) * item for s in stride), bool(requires_grad), None)


def _rebuild_tensor_v3(storage, offset, size, stride, requires_grad, backward_hooks, dtype,
                       metadata=None):
    """A tensor over an untyped (byte) storage, its element type given by `dtype`."""
    from ._core import dtype as tensor_dtype
    if not isinstance(dtype, tensor_dtype) or not isinstance(storage, _UntypedStorage):
        raise _ser.CheckpointError("malformed tensor record")
    return _rebuild_tensor_v2(storage.as_type(_numpy_twin(dtype)), offset, size, stride,
                              requires_grad, backward_hooks, metadata)


def _numpy_twin(dtype) -> np.dtype:
    try:
        return np.dtype(dtype.np_dtype)
    except TypeError as e:                 # bfloat16: no numpy twin, the dtype says so
        raise UnsupportedDtypeError(str(e)) from None


def _rebuild_parameter(data, requires_grad, backward_hooks, state=None):
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad=bool(requires_grad))


def _torch_globals() -> dict:
    import tapegrad
    from ._core import dtype as tensor_dtype
    from ._device import device
    from .tensor import Size
    names = {("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
             ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
             ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
             ("torch", "Size"): Size,
             ("torch", "device"): device,
             ("torch.storage", "UntypedStorage"): _UNTYPED}
    names.update({("torch", k): _StorageType(v) for k, v in _STORAGE_DTYPES.items()})
    # a dtype pickles as the global torch.<its name> (float64, not its alias double)
    names.update({("torch", d.name): d for d in vars(tapegrad).values()
                  if isinstance(d, tensor_dtype)})
    return names


class _TorchArchiveUnpickler(_ser._WeightsOnlyUnpickler):
    """Weights-only unpickling of PyTorch's data.pkl; storages from `<root>/data/<key>`."""

    root: str

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType) and isinstance(pid[2], str)):
            raise _ser.CheckpointError(f"unknown persistent id {pid!r:.80}")
        dtype, key, numel = pid[1].dtype, pid[2], pid[4]
        if dtype is None:
            _numpy_twin(_bfloat16())
        arr = self.loaded.get(key)
        if arr is None:
            try:
                raw = self.archive.read(f"{self.root}data/{key}")
            except KeyError:
                raise _ser.CheckpointError(f"the pickle refers to a missing storage {key!r}") from None
            if type(numel) is not int or len(raw) != numel * dtype.itemsize:
                raise _ser.CheckpointError(f"storage {key!r} has {len(raw)} bytes, not {numel} "
                                           f"elements of {dtype}")
            if pid[1] is _UNTYPED:         # typed when a tensor says its dtype
                arr = _UntypedStorage(raw, self.map_storage)
            else:
                arr = np.frombuffer(bytearray(raw), dtype=dtype.newbyteorder("<")).astype(dtype)
                arr = self.map_storage(arr)
            self.loaded[key] = arr
        return arr


def _bfloat16():
    import tapegrad
    return tapegrad.bfloat16


def torch_archive_root(archive: zipfile.ZipFile) -> str | None:
    """The folder holding data.pkl when `archive` is a PyTorch checkpoint, else None."""
    for n in archive.namelist():
        if n.endswith("/data.pkl") and n.count("/") == 1:
            return n[: -len("data.pkl")]
    return None


def load_torch_archive(archive: zipfile.ZipFile, root: str, name: str, map_storage):
    """The object in PyTorch checkpoint `archive` (weights only)."""
    order = f"{root}byteorder"
    if order in archive.namelist() and archive.read(order).strip() not in (b"little", b""):
        raise _ser.CheckpointError(f"tapegrad.load: {name} was written big-endian")
    allowed = {**_ser._default_safe_globals(), **_torch_globals()}
    unpickler = _TorchArchiveUnpickler(io.BytesIO(archive.read(f"{root}data.pkl")))
    unpickler.setup(archive, name, map_storage, allowed)
    unpickler.root = root
    return unpickler.load()
