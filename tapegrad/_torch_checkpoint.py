"""Reading checkpoints written by PyTorch's torch.save (its zip format).

A PyTorch checkpoint is a zip archive `<root>/data.pkl` + `<root>/data/<key>` (each storage's raw
little-endian bytes).  The pickle names a handful of PyTorch globals: `torch._utils.
_rebuild_tensor_v2` / `_rebuild_parameter` to build tensors from storages, `torch.<Type>Storage`
for each storage's element type, `torch.Size`, `torch.device`, the dtypes (`torch.float64`),
`collections.OrderedDict`.  Tensors of the dtypes without a legacy typed storage (uint16/32/64)
come as `_rebuild_tensor_v3` over a `torch.storage.UntypedStorage` (bytes) with their dtype; a
tensor with Python attributes as `_rebuild_from_type_v2`.  These are mapped to
checked tapegrad equivalents; with weights_only (the default) any other global is refused,
exactly as a weights-only load of a tapegrad checkpoint refuses it, so a published .pth (a
model's state dict) loads safely.  With weights_only=False the pickle is trusted, as PyTorch
trusts it: other globals of torch resolve to tapegrad's counterpart at the same path
(`torch.nn.modules.linear.Linear` -> `tapegrad.nn.modules.linear.Linear`), and any global outside
torch (numpy arrays and scalars, the user's own classes) as plain pickle resolves it.
"""
from __future__ import annotations as _annotations

import importlib
import io
import pickle
import weakref
import zipfile

import numpy as np

from . import _core
from . import serialization as _ser

# torch.<Name>Storage -> the numpy dtype of its bytes
_STORAGE_DTYPES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
    "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
    "ComplexFloatStorage": np.complex64, "ComplexDoubleStorage": np.complex128,
    "BFloat16Storage": None,
    # a quantized tensor's integers (quint8, qint8, qint32: _rebuild_qtensor)
    "QUInt8Storage": np.uint8, "QInt8Storage": np.int8, "QInt32Storage": np.int32,
}


# The storages read from BFloat16Storage (as float32 arrays): their tensors are bfloat16 ones.
_BFLOAT16_STORAGES = weakref.WeakValueDictionary()


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

    def __init__(self, raw: bytes, map_storage, location: str) -> None:
        self.raw = raw
        self.map_storage = map_storage
        self.location = location
        self.typed: dict[np.dtype, np.ndarray] = {}

    def as_type(self, np_dtype: np.dtype) -> np.ndarray:
        arr = self.typed.get(np_dtype)
        if arr is None:
            if len(self.raw) % np_dtype.itemsize:
                raise _ser.CheckpointError(f"storage of {len(self.raw)} bytes is not a whole "
                                           f"number of {np_dtype} elements")
            arr = np.frombuffer(bytearray(self.raw), dtype=np_dtype.newbyteorder("<"))
            arr = self.map_storage(arr.astype(np_dtype, copy=False), self.location)
            self.typed[np_dtype] = arr
        return arr


def _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, backward_hooks, metadata=None):
    if type(offset) is not int or not isinstance(size, tuple) or not isinstance(stride, tuple):
        raise _ser.CheckpointError("malformed tensor record")
    if metadata is not None and not (isinstance(metadata, dict)
                                     and set(metadata) <= {"conj", "neg"}):
        raise _ser.CheckpointError(f"unknown tensor metadata {metadata!r:.80}")
    item = storage.dtype.itemsize
    t = _ser._checked_rebuild_tensor(
        _ser._TensorClass("Tensor"), storage, offset * item, tuple(size),
        tuple(int(s) * item for s in stride), False, None)
    if _BFLOAT16_STORAGES.get(id(storage)) is storage:
        from ._bfloat16 import mark
        mark(t)
    if metadata:
        t = _apply_view_bits(t, metadata)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_qtensor(storage, offset, size, stride, qparams, requires_grad, backward_hooks):
    """A quantized tensor: its integers from the storage, its scheme and qparams."""
    from ._quantized import QuantizedTensor
    from ._qscheme import per_channel_affine, per_tensor_affine
    import tapegrad
    ints = _rebuild_tensor_v2(storage, offset, size, stride, False, backward_hooks)._array
    dtype = {"uint8": tapegrad.quint8, "int8": tapegrad.qint8,
             "int32": tapegrad.qint32}.get(ints.dtype.name)
    if dtype is None or not isinstance(qparams, tuple) or not qparams:
        raise _ser.CheckpointError("malformed quantized tensor record")
    if qparams[0] is per_tensor_affine and len(qparams) == 3:
        scale, zero_point, axis = float(qparams[1]), int(qparams[2]), None
    elif qparams[0] is per_channel_affine and len(qparams) == 4:
        scale = np.asarray(qparams[1]._array, dtype=np.float64)
        zero_point = np.asarray(qparams[2]._array, dtype=np.int64)
        axis = int(qparams[3])
    else:
        raise _ser.CheckpointError(f"unsupported quantization scheme {qparams[0]!r:.60}")
    return QuantizedTensor._make(np.array(ints), dtype, qparams[0], scale, zero_point, axis)


def _rebuild_tensor_v3(storage, offset, size, stride, requires_grad, backward_hooks, dtype,
                       metadata=None):
    """A tensor over an untyped (byte) storage, its element type given by `dtype`."""
    from ._core import dtype as tensor_dtype
    if not isinstance(dtype, tensor_dtype) or not isinstance(storage, _UntypedStorage):
        raise _ser.CheckpointError("malformed tensor record")
    if dtype in _core.FLOAT8_DTYPES:
        # its bytes are its codes: a uint8 tensor over them, then marked (no grad: a float8
        # tensor here is never recorded)
        from ._float8 import as_float8_codes
        codes = _rebuild_tensor_v2(storage.as_type(np.dtype(np.uint8)), offset, size, stride,
                                   False, backward_hooks, metadata)
        return as_float8_codes(codes, dtype)
    return _rebuild_tensor_v2(storage.as_type(_numpy_twin(dtype)), offset, size, stride,
                              requires_grad, backward_hooks, metadata)


def _numpy_twin(dtype) -> np.dtype:
    try:
        return np.dtype(dtype.np_dtype)
    except TypeError as e:                 # bfloat16: no numpy twin, the dtype says so
        raise UnsupportedDtypeError(str(e)) from None


def _apply_view_bits(t, metadata: dict):
    """PyTorch saves a conjugate or negative view as its storage's values plus the view's bit
    ({"conj": True} / {"neg": True}): the tensor's values are the storage's conjugated /
    negated.  A conj bit stays a conjugate view here; tapegrad has no negative views, so a
    neg bit gives the negated values (a copy: it no longer shares the storage)."""
    from .grad_mode import no_grad
    with no_grad():
        if metadata.get("neg"):
            t = _core.wrap_array(np.negative(t._array))
        if metadata.get("conj"):
            t = t.conj()
    return t


def _state_dict_of(state):
    """A saved object's state: a dict of attributes, or PyTorch's (dict, slots) pair."""
    if isinstance(state, tuple) and len(state) == 2:
        merged = dict(state[0] or {})
        merged.update(state[1] or {})
        state = merged
    if state is None:
        return {}
    if not isinstance(state, dict) or not all(type(k) is str for k in state):
        raise _ser.CheckpointError("malformed tensor state")
    return state


def _set_attributes(t, state):
    # plain Python attributes (t.__dict__), as a tapegrad checkpoint restores them: never the
    # tensor's own slots (its array), whatever the names
    t.__dict__.update(_state_dict_of(state))
    return t


def _rebuild_from_type_v2(func, new_type, args, state):
    """A tensor with Python attributes (t.tag = ...): built by func, then given them."""
    if not (isinstance(new_type, _ser._TensorClass) and new_type.name == "Tensor"
            and func in (_rebuild_tensor_v2, _rebuild_tensor_v3) and isinstance(args, tuple)):
        raise _ser.WeightsOnlyLoadError(f"tensor of type {new_type!r:.60} is not allowed")
    return _set_attributes(func(*args), state)


def _rebuild_subclass_from_type_v2(func, new_type, args, state):
    """weights_only=False (a trusted pickle): as _rebuild_from_type_v2, and a tensor of a Tensor
    subclass (the user's class, as pickle finds it) comes back as that class, as in PyTorch."""
    if isinstance(new_type, type) and issubclass(new_type, _core.TensorBase):
        t = func(*args)
        if type(t) is not new_type:
            t = t.as_subclass(new_type)
        return _set_attributes(t, state)
    return _rebuild_from_type_v2(func, new_type, args, state)


def _get_layout(name):
    """torch.serialization._get_layout("torch.strided"): a layout pickles as its name."""
    import tapegrad
    layout = getattr(tapegrad, name[len("torch."):], None) if isinstance(name, str) and \
        name.startswith("torch.") else None
    if type(layout) is not type(tapegrad.strided):
        raise _ser.WeightsOnlyLoadError(f"unknown layout {name!r:.60}")
    return layout


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _set_attributes(_rebuild_parameter(data, requires_grad, backward_hooks), state)


def _rebuild_parameter(data, requires_grad, backward_hooks, state=None):
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad=bool(requires_grad))


def _rebuild_sparse_tensor(layout, data):
    """torch._utils._rebuild_sparse_tensor: a sparse tensor PyTorch saved as its layout and
    (indices, values, size[, is_coalesced]) for COO, (compressed indices, plain indices,
    values, size) for the compressed layouts."""
    from ._sparse_compressed import _LAYOUTS, _build
    from ._sparse_coo import _sparse_coo_tensor
    import tapegrad
    if not isinstance(data, tuple):
        raise _ser.CheckpointError("malformed sparse tensor record")
    if layout is tapegrad.sparse_coo and len(data) in (3, 4):
        indices, values, size = data[:3]
        coalesced = data[3] if len(data) == 4 else None    # (files before is_coalesced: 3)
        _ser._check_sparse_parts((indices,), values, size, (coalesced,))
        return _sparse_coo_tensor(indices, values, tuple(size), is_coalesced=coalesced)
    if layout in _LAYOUTS and len(data) == 4:
        cidx, pidx, values, size = data
        _ser._check_sparse_parts((cidx, pidx), values, size, ())
        return _build(layout, cidx, pidx, values, tuple(size), None, None, False, False)
    raise NotImplementedError(f"rebuilding sparse tensor for layout {layout}")


def _torch_globals() -> dict:
    import tapegrad
    from ._core import dtype as tensor_dtype
    from ._device import device
    from .tensor import Size
    names = {("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
             ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
             ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
             ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
             ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
             ("torch", "Tensor"): _ser._TensorClass("Tensor"),
             ("torch.serialization", "_get_layout"): _get_layout,
             ("torch._utils", "_rebuild_sparse_tensor"): _rebuild_sparse_tensor,
             ("torch", "Size"): Size,
             ("torch", "device"): device,
             ("torch.storage", "UntypedStorage"): _UNTYPED,
             ("torch._utils", "_rebuild_qtensor"): _rebuild_qtensor,
             ("torch", "per_tensor_affine"): tapegrad.per_tensor_affine,
             ("torch", "per_channel_affine"): tapegrad.per_channel_affine}
    names.update({("torch", k): _StorageType(v) for k, v in _STORAGE_DTYPES.items()})
    # a dtype pickles as the global torch.<its name> (float64, not its alias double)
    names.update({("torch", d.name): d for d in vars(tapegrad).values()
                  if isinstance(d, tensor_dtype)})
    # (the float8 dtypes are lazy names of tapegrad: not in its namespace before their first use)
    names.update({("torch", d.name): d for d in _core.FLOAT8_DTYPES})
    return names


class _TorchArchiveUnpickler(_ser._WeightsOnlyUnpickler):
    """Weights-only unpickling of PyTorch's data.pkl; storages from `<root>/data/<key>`."""

    root: str

    def find_class(self, module, name):
        try:
            return super().find_class(module, name)
        except _ser.WeightsOnlyLoadError:
            # tapegrad.save names tapegrad's globals under torch's package (as PyTorch's file
            # names them); the user allowlisted tapegrad's class, under its own name
            if module == "torch" or module.startswith("torch."):
                found = _ser._user_safe_globals.get(("tapegrad" + module[len("torch"):], name))
                if found is not None:
                    return found
            raise

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType) and isinstance(pid[2], str)
                and isinstance(pid[3], str)):
            raise _ser.CheckpointError(f"unknown persistent id {pid!r:.80}")
        dtype, key, location, numel = pid[1].dtype, pid[2], pid[3], pid[4]
        bfloat16 = dtype is None           # BFloat16Storage: two bytes an element
        if bfloat16:
            dtype = np.dtype(np.uint16)
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
                arr = _UntypedStorage(raw, self.map_storage, location)
            else:
                arr = np.frombuffer(bytearray(raw), dtype=dtype.newbyteorder("<")).astype(
                    dtype, copy=False)          # (a copy only on a big-endian machine)
                if bfloat16:                    # the float32 storage of bfloat16 tensors
                    arr = (arr.astype(np.uint32) << np.uint32(16)).view(np.float32)
                arr = self.map_storage(arr, location)
                if bfloat16:
                    _BFLOAT16_STORAGES[id(arr)] = arr
            self.loaded[key] = arr
        return arr


def torch_archive_root(archive: zipfile.ZipFile) -> str | None:
    """The folder holding data.pkl when `archive` is a PyTorch checkpoint, else None."""
    for n in archive.namelist():
        if n.endswith("/data.pkl") and n.count("/") == 1:
            return n[: -len("data.pkl")]
    return None


class _TrustedTorchArchiveUnpickler(_TorchArchiveUnpickler):
    """weights_only=False: tensors and storages as above, every other global resolved (torch's to
    tapegrad's counterpart), and the opcodes the weights-only unpickler restricts (BUILD, items into containers) as plain
    pickle runs them."""

    dispatch = dict(_TorchArchiveUnpickler.dispatch)
    dispatch.update({code[0]: pickle._Unpickler.dispatch[code[0]]
                     for code in _ser._WeightsOnlyUnpickler.RESTRICTED_OPCODES})

    def find_class(self, module, name):
        if (module, name) == ("torch._tensor", "_rebuild_from_type_v2"):
            return _rebuild_subclass_from_type_v2
        found = self.allowed.get((module, name))
        if found is not None:
            return found
        if module == "torch" or module.startswith("torch."):
            counterpart = "tapegrad" + module[len("torch"):]
            try:
                return getattr(importlib.import_module(counterpart), name)
            except (ImportError, AttributeError):     # (pickle's error for a missing class)
                raise AttributeError(
                    f"tapegrad.load: {self.name} needs {module}.{name}, which tapegrad does not "
                    f"have ({counterpart}.{name})") from None
        return pickle._Unpickler.find_class(self, module, name)


def load_torch_archive(archive: zipfile.ZipFile, root: str, name: str, map_storage,
                       weights_only: bool = True):
    """The object in PyTorch checkpoint `archive` (see the top of this module)."""
    order = f"{root}byteorder"
    if order in archive.namelist() and archive.read(order).strip() not in (b"little", b""):
        raise _ser.CheckpointError(f"tapegrad.load: {name} was written big-endian")
    allowed = {**_ser._default_safe_globals(), **_torch_globals()}
    cls = _TorchArchiveUnpickler if weights_only else _TrustedTorchArchiveUnpickler
    unpickler = cls(io.BytesIO(archive.read(f"{root}data.pkl")))
    unpickler.setup(archive, name, map_storage, allowed)
    unpickler.root = root
    return _bare_storages_as_objects(unpickler.load(), unpickler.loaded)


def _bare_storages_as_objects(obj, loaded: dict):
    """A storage saved on its own (torch.save(t.storage()), or one in a dict) loads, as in
    PyTorch, as a TypedStorage: of its dtype, or of uint8 for an UntypedStorage.  The storages
    the tensors were built over are arrays the unpickler keeps; those left as leaves of the
    loaded containers are replaced by the storage objects viewing them."""
    from ._core import _dtype_by_name
    from .storage import TypedStorage, UntypedStorage, untyped_storage_of
    from ._checkpoint_npz import CheckpointError
    storages = {id(s): s for s in loaded.values()}
    if not storages:
        return obj
    seen: set[int] = set()

    def as_object(leaf):
        if isinstance(leaf, _UntypedStorage):
            raw = np.frombuffer(bytearray(leaf.raw), dtype=np.uint8)
            return TypedStorage._over(UntypedStorage._viewing(raw), _dtype_by_name("uint8"))
        try:
            dtype = _dtype_by_name(leaf.dtype.name)
        except Exception:
            raise CheckpointError(f"a storage of {leaf.dtype} cannot be loaded") from None
        return TypedStorage._over(untyped_storage_of(leaf), dtype)

    def walk(node):
        if id(node) in storages:
            return as_object(node)
        if id(node) in seen:
            return node
        if isinstance(node, dict):
            seen.add(id(node))
            for key, value in node.items():
                new = walk(value)
                if new is not value:
                    node[key] = new
        elif isinstance(node, list):
            seen.add(id(node))
            for i, value in enumerate(node):
                new = walk(value)
                if new is not value:
                    node[i] = new
        elif type(node) is tuple:
            items = tuple(walk(value) for value in node)
            if any(a is not b for a, b in zip(items, node)):
                return items
        return node

    return walk(obj)
