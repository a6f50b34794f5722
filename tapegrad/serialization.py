"""tapegrad.save / tapegrad.load: whole-object checkpoints, loaded weights-only by default.

`save` writes PyTorch's own format (_torch_format.py): torch.load reads the file, and it is
byte for byte what torch.save writes for the same object (but for its random serialization id),
so scripts printing a checkpoint's size print PyTorch's number.  `load` reads that format
(_torch_checkpoint.py), and still reads the files earlier tapegrad versions wrote: a zip of

    archive/format          b"tapegrad-pickle 1": tells this format from the others
    archive/data.pkl        the pickled object, in which every numpy array (a tensor's storage,
                            or an array the object holds) is a persistent id ("ndarray", key)
    archive/data/<key>.npy  those arrays, written by np.save without pickling

`load` defaults to `weights_only=True` (PyTorch 2.6+): the pickle is read by an unpickler that
resolves only an allowlist of globals (tensors, Parameters, dtypes, devices, Size, containers;
numpy arrays and scalars only once allowlisted, as PyTorch), so a checkpoint from an untrusted
source cannot run code.  Anything else (a whole model, an optimizer) fails with
pickle.UnpicklingError "Weights only load failed ..." and loads with `weights_only=False`,
which runs the pickle as Python's unpickler does.

Checkpoints in the first tapegrad format (a pickle-free .npz, see _checkpoint_npz.py) still load.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import _compat_pickle
import contextlib
import io
import os
import pickle
import warnings
import zipfile
from collections import Counter, OrderedDict

import numpy as np

from . import _core, _layout
from ._checkpoint_npz import CheckpointError, load_npz
from ._device import as_device, check_device, device
from .tensor import _PickledStorage

__all__ = ["save", "load", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "safe_globals", "CheckpointError", "WeightsOnlyLoadError"]

_PREFIX = "archive/"
_FORMAT_ENTRY = _PREFIX + "format"
_FORMAT_TAG = b"tapegrad-pickle 1"
_PICKLE_ENTRY = _PREFIX + "data.pkl"
_ARRAY_KINDS = "biufc"          # dtypes np.save stores as raw bytes (no pickling)
_TENSOR_DTYPES = {"float16", "float32", "float64", "complex64", "complex128", "uint8", "uint16",
                  "uint32", "uint64", "int8", "int16", "int32", "int64", "bool"}


class WeightsOnlyLoadError(pickle.UnpicklingError, RuntimeError):
    """A weights-only load met something that is not on the allowlist (PyTorch raises
    pickle.UnpicklingError; this is one, and a RuntimeError like every other load failure)."""


# Tracebacks and type(e).__name__ print PyTorch's name for it, which scripts compare against.
WeightsOnlyLoadError.__name__ = WeightsOnlyLoadError.__qualname__ = "UnpicklingError"


# -- saving ---------------------------------------------------------------------------------------

class _ArrayPersistingPickler(pickle.Pickler):
    """Pickles the object with each plain numeric ndarray replaced by a key; the arrays are
    written beside the pickle (raw .npy), so tensor data never passes through pickle."""

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self.arrays: list[np.ndarray] = []
        self.keys: dict[int, str] = {}

    def persistent_id(self, obj):
        if type(obj) is _PickledStorage:
            obj = obj.array            # a tensor's storage: persisted, so views share it on load
        if type(obj) is not np.ndarray or obj.dtype.kind not in _ARRAY_KINDS or obj.dtype.fields:
            return None
        key = self.keys.get(id(obj))
        if key is None:        # the list keeps obj alive, so its id stays unique while we pickle
            key = str(len(self.arrays))
            self.keys[id(obj)] = key
            self.arrays.append(obj)
        return ("ndarray", key)


def save(obj, f, pickle_module=pickle, pickle_protocol=None, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False) -> None:
    """Save any picklable `obj` (a state dict, a whole model, an optimizer, ...) to `f`.

    `f` is a path (str or os.PathLike) or a binary file object open for writing.  The file is
    PyTorch's own format (see _torch_format.py): torch.load reads it, and it has the size
    torch.save's file has.  Load it back with `tapegrad.load`; objects other than tensors and
    plain containers need `weights_only=False` there.
    """
    from ._torch_format import archive_name, write_checkpoint
    if not (hasattr(f, "write") or isinstance(f, (str, os.PathLike))):
        raise AttributeError("expected 'f' to be string, path, or a file-like object with a "
                             "'write' attribute")
    protocol = pickle_protocol if pickle_protocol is not None else 2   # PyTorch's default
    if hasattr(f, "write"):
        write_checkpoint(obj, f, "archive", protocol, not _disable_byteorder_record)
        return
    root = archive_name(f)
    with _open_for_save(os.fspath(f), _use_new_zipfile_serialization) as fh:
        write_checkpoint(obj, fh, root, protocol, not _disable_byteorder_record)


def _save_tapegrad_format(obj, fh, protocol=pickle.DEFAULT_PROTOCOL) -> None:
    """Write `obj` in the format tapegrad.save wrote before it wrote PyTorch's (2026-12): a
    zip of data.pkl and .npy arrays.  tapegrad.load still reads such files; tests write them
    with this."""
    buf = io.BytesIO()
    pickler = _ArrayPersistingPickler(buf, protocol)
    pickler.dump(obj)
    _write_archive(fh, buf.getvalue(), pickler.arrays)


def _open_for_save(path, zipfile_writer: bool):
    """Open `path` for torch.save, failing as PyTorch does: its zip writer (the default) raises
    RuntimeError (a missing parent directory named first), the legacy format open()'s OSError."""
    if not zipfile_writer:
        return open(path, "wb")
    parent = _zip_writer_parent(os.fsdecode(path))
    if parent and not os.path.isdir(parent):
        raise RuntimeError(f"Parent directory {parent} does not exist.")
    try:
        return open(path, "wb")
    except OSError as e:
        raise RuntimeError(f"open file failed with strerror: {e.strerror}") from None


def _zip_writer_parent(path: str) -> str:
    """The parent directory PyTorch's zip writer checks: up to the last '/', or failing one the
    last backslash, on every OS.  So a Windows-style 'models\\net.pt' with no 'models' directory
    fails on Linux too, instead of silently writing a file named 'models\\net.pt'."""
    end = path.rfind("/")
    if end < 0:
        end = path.rfind("\\")
    return path[:end] if end > 0 else ""


def _write_archive(fh, pickled: bytes, arrays: list) -> None:
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(_FORMAT_ENTRY, _FORMAT_TAG)
        zf.writestr(_PICKLE_ENTRY, pickled)
        for key, arr in enumerate(arrays):
            with zf.open(f"{_PREFIX}data/{key}.npy", "w", force_zip64=arr.nbytes > 2**30) as out:
                np.save(out, arr, allow_pickle=False)


# -- the weights-only allowlist -------------------------------------------------------------------

_user_safe_globals: dict[tuple[str, str], object] = {}


def _qualified(obj) -> tuple[str, str]:
    return getattr(obj, "__module__", None) or "builtins", obj.__qualname__


def add_safe_globals(safe_globals) -> None:
    """Allow these classes/functions in weights-only loads (only if you trust them)."""
    for g in safe_globals:
        if isinstance(g, tuple):           # (obj, "module.name") as PyTorch accepts
            obj, name = g
            module, _, qualname = name.rpartition(".")
            _user_safe_globals[(module, qualname)] = obj
        else:
            _user_safe_globals[_qualified(g)] = g


def clear_safe_globals() -> None:
    _user_safe_globals.clear()


def get_safe_globals() -> list:
    return list(_user_safe_globals.values())


@contextlib.contextmanager
def safe_globals(globals_list):
    """`with safe_globals([...]):` allows those globals for the loads inside the block."""
    saved = dict(_user_safe_globals)
    add_safe_globals(globals_list)
    try:
        yield
    finally:
        _user_safe_globals.clear()
        _user_safe_globals.update(saved)


class _TensorClass:
    """What a weights-only load resolves `tapegrad.Tensor` / `nn.Parameter` to: a token that only
    _checked_rebuild_tensor accepts.  Handing out the class itself would let a pickle call it
    or build a bare instance (NEWOBJ) whose missing array the compiled core cannot survive."""

    def __init__(self, name: str) -> None:
        self.name = name

    def resolve(self):
        if self.name == "Parameter":
            from .nn.parameter import Parameter
            return Parameter
        from .tensor import Tensor
        return Tensor


class _DtypeSpec:
    """What a weights-only load makes of `numpy.dtype(spec, ...)`: the spec, checked, and a
    __setstate__ that only takes the byte order, so numpy's own dtype __setstate__ never sees
    untrusted state."""

    def __init__(self, spec, align=False, copy=False) -> None:
        if type(spec) is not str or np.dtype(spec).kind not in _ARRAY_KINDS:
            raise CheckpointError(f"numpy dtype {spec!r:.40} is not a plain numeric dtype")
        self.dtype = np.dtype(spec)

    def __setstate__(self, state) -> None:
        if not (isinstance(state, tuple) and len(state) > 1 and state[1] in ("<", ">", "|", "=")):
            raise CheckpointError("malformed numpy dtype state")
        if state[1] in "<>":
            self.dtype = self.dtype.newbyteorder(state[1])


def _checked_rebuild_tensor(cls, storage, offset, shape, strides, requires_grad, state):
    """_rebuild_tensor for untrusted input: every argument is checked before numpy sees it."""
    from .tensor import _rebuild_tensor
    if isinstance(storage, _StorageToken):
        storage.claimed = True
        storage = storage.array
    if not isinstance(cls, _TensorClass):
        raise WeightsOnlyLoadError(f"tensor of class {cls!r:.60} is not allowed")
    if type(storage) is not np.ndarray or storage.dtype.name not in _TENSOR_DTYPES:
        raise CheckpointError("tensor storage is not an array of a tensor dtype")
    ints = (type(offset) is int and type(shape) is tuple and type(strides) is tuple
            and len(shape) == len(strides) and all(type(v) is int for v in shape + strides))
    if not ints or type(requires_grad) is not bool or (state is not None and type(state) is not dict):
        raise CheckpointError("malformed tensor record")
    if requires_grad and storage.dtype.kind not in "fc":
        raise CheckpointError(f"a {storage.dtype} tensor cannot require grad")
    return _rebuild_tensor(cls.resolve(), storage, offset, shape, strides, requires_grad, state)


def _checked_rebuild_quantized(ints, dtype_name, scheme_name, scale, zero_point, axis):
    """_quantized._rebuild for untrusted input: the integers of a quantized dtype, and qparams
    that fit them (one scale and zero point, or one per channel along a valid axis)."""
    from ._quantized import _STORAGE, _rebuild
    def claimed(value):
        if isinstance(value, _StorageToken):
            value.claimed = True
            return value.array
        return value
    ints, scale, zero_point = claimed(ints), claimed(scale), claimed(zero_point)
    if (type(dtype_name) is not str or dtype_name not in _STORAGE or type(ints) is not np.ndarray
            or ints.dtype != _STORAGE[dtype_name][0]):
        raise CheckpointError("malformed quantized tensor record")
    if scheme_name == "per_tensor_affine":
        ok = type(scale) is float and type(zero_point) is int and axis is None
    elif scheme_name == "per_channel_affine":
        ok = (type(axis) is int and 0 <= axis < ints.ndim and type(scale) is np.ndarray
              and type(zero_point) is np.ndarray and scale.dtype == np.float64
              and zero_point.dtype == np.int64
              and scale.shape == zero_point.shape == (ints.shape[axis],))
    else:
        ok = False
    if not ok:
        raise CheckpointError("malformed quantized tensor qparams")
    return _rebuild(ints, dtype_name, scheme_name, scale, zero_point, axis)


def _check_sparse_parts(index_tensors, values, size, flags) -> None:
    """The parts of a sparse tensor record, for untrusted input: dense integer index tensors and
    a dense values tensor (already rebuilt by the checked tensor path), a size of ints, flags
    that are bools or None.  The sparse constructors then check the indices against the size."""
    def dense(t):
        return isinstance(t, _core.TensorBase) and t.layout is _layout.strided
    if not (all(dense(t) and t.dtype in (_core.int32, _core.int64) for t in index_tensors)
            and dense(values)):
        raise CheckpointError("malformed sparse tensor record: indices and values must be "
                              "dense tensors, the indices int32 or int64")
    if not (isinstance(size, tuple) and all(type(n) is int and n >= 0 for n in size)):
        raise CheckpointError("malformed sparse tensor record: bad size")
    if not all(f is None or type(f) is bool for f in flags):
        raise CheckpointError("malformed sparse tensor record: bad flags")


def _checked_rebuild_sparse(indices, values, size, coalesced, requires_grad):
    """_sparse_coo._rebuild_sparse (what tapegrad.save writes for a COO tensor), checked."""
    from ._sparse_coo import _rebuild_sparse
    _check_sparse_parts((indices,), values, size, (coalesced, requires_grad))
    return _rebuild_sparse(indices, values, tuple(size), coalesced, bool(requires_grad))


def _checked_rebuild_compressed(layout_name, cidx, pidx, values, size, requires_grad):
    """_sparse_compressed._rebuild_compressed (a CSR/CSC/BSR/BSC tensor), checked."""
    from ._sparse_compressed import _LAYOUTS, _rebuild_compressed
    if layout_name not in {lay._name for lay in _LAYOUTS}:
        raise CheckpointError(f"malformed sparse tensor record: layout {layout_name!r:.40}")
    _check_sparse_parts((cidx, pidx), values, size, (requires_grad,))
    return _rebuild_compressed(layout_name, cidx, pidx, values, tuple(size), bool(requires_grad))


def _checked_untyped_storage(array):
    """storage._untyped_from_array for untrusted input: a persisted array of a tensor dtype."""
    from .storage import _untyped_from_array
    if isinstance(array, _StorageToken):
        array.claimed = True
        array = array.array
    if type(array) is not np.ndarray or array.dtype.name not in _TENSOR_DTYPES:
        raise CheckpointError("storage is not an array of a tensor dtype")
    return _untyped_from_array(array)


def _checked_typed_storage(untyped, dtype):
    from .storage import UntypedStorage, _typed_over
    if type(untyped) is not UntypedStorage or not isinstance(dtype, _core.dtype):
        raise CheckpointError("malformed storage record")
    return _typed_over(untyped, dtype)


def _default_safe_globals() -> dict[tuple[str, str], object]:
    from .tensor import Size, Tensor
    return {
        ("tapegrad.tensor", "_rebuild_tensor"): _checked_rebuild_tensor,
        ("tapegrad.storage", "_untyped_from_array"): _checked_untyped_storage,
        ("tapegrad._quantized", "_rebuild"): _checked_rebuild_quantized,
        # sparse tensors pickle as their index and value tensors (PyTorch allows them too)
        ("tapegrad._sparse_coo", "_rebuild_sparse"): _checked_rebuild_sparse,
        ("tapegrad._sparse_compressed", "_rebuild_compressed"): _checked_rebuild_compressed,
        ("tapegrad.storage", "_typed_over"): _checked_typed_storage,
        _qualified(Tensor): _TensorClass("Tensor"),
        ("tapegrad.nn.parameter", "Parameter"): _TensorClass("Parameter"),
        _qualified(Size): Size,
        # files written before Size took the package's name (2026-12) pickled its defining module
        ("tapegrad.tensor", "Size"): Size,
        _qualified(device): device,
        # a layout pickles as its module attribute (layout.__reduce__); PyTorch allows layouts
        ("tapegrad", "strided"): _layout.strided,
        ("tapegrad", "sparse_coo"): _layout.sparse_coo,
        ("tapegrad._core", "_dtype_by_name"): _core._dtype_by_name,
        ("collections", "OrderedDict"): OrderedDict,
        ("collections", "Counter"): Counter,
        # (PyTorch's allowlist has set but not frozenset: a checkpoint holding a frozenset
        # fails its weights-only load, so it fails here too)
        ("builtins", "set"): set,
        ("builtins", "complex"): complex,
        ("builtins", "bytearray"): bytearray,      # as PyTorch's allowlist (protocols < 5)
        # pickle protocols < 3 store bytes as _codecs.encode(text, "latin1")
        ("_codecs", "encode"): _latin1_encode,
    }


def _latin1_encode(text, encoding="utf-8"):
    if type(text) is not str or encoding != "latin1":
        raise CheckpointError("malformed bytes record")
    return text.encode("latin1")


def _numpy_scalar(spec, data=None):
    if not isinstance(spec, _DtypeSpec):
        raise CheckpointError("malformed numpy scalar")
    dtype = spec.dtype
    if not isinstance(data, bytes) or len(data) != dtype.itemsize:
        raise CheckpointError(f"malformed numpy scalar of dtype {dtype}")
    return np.frombuffer(data, dtype=dtype)[0]


# numpy values are refused by default, as PyTorch's weights-only unpickler refuses them (a loss
# history saved as an ndarray, a np.float64 loss): a script that loads them under PyTorch fails,
# so it must fail here too.  Once the user allowlists numpy's own global (add_safe_globals), the
# value loads, read by these checked stand-ins rather than by numpy's unpickling code.
class _NdarrayClass:
    """What a weights-only load resolves `numpy.ndarray` to once numpy's `_reconstruct` is
    allowlisted: a token only _checked_reconstruct accepts."""


def _checked_reconstruct(cls, shape, dtype_code):
    """numpy's _reconstruct(ndarray, (0,), b'b') for untrusted input: an empty ndarray that only
    the checked BUILD of _WeightsOnlyUnpickler fills (with plain numeric values)."""
    if not isinstance(cls, _NdarrayClass):
        raise CheckpointError(f"numpy array of class {cls!r:.60} is not allowed")
    return np.ndarray((0,), np.uint8)


def _checked_ndarray_state(state) -> tuple:
    """ndarray.__setstate__'s (version, shape, dtype, fortran, bytes), checked."""
    ok = isinstance(state, tuple) and len(state) == 5
    if ok:
        version, shape, spec, fortran, data = state
        dtype = spec.dtype if isinstance(spec, _DtypeSpec) else None
        ok = (type(version) is int and type(shape) is tuple and dtype is not None
              and all(type(n) is int and n >= 0 for n in shape) and type(fortran) is bool
              and isinstance(data, bytes) and len(data) == int(np.prod(shape)) * dtype.itemsize)
    if not ok:
        raise CheckpointError("malformed numpy array record")
    return (version, shape, dtype, fortran, data)


_NUMPY_STAND_INS = {
    ("numpy", "dtype"): _DtypeSpec,
    ("numpy._core.multiarray", "_reconstruct"): _checked_reconstruct,
    ("numpy.core.multiarray", "_reconstruct"): _checked_reconstruct,
    ("numpy._core.multiarray", "scalar"): _numpy_scalar,
    ("numpy.core.multiarray", "scalar"): _numpy_scalar,
}
# A plain ndarray is persisted beside the pickle (as a tensor's storage is); the global it needs
# under PyTorch, and so the one the user allowlists, is numpy's array reconstructor.
_NDARRAY_GLOBALS = (("numpy._core.multiarray", "_reconstruct"),
                    ("numpy.core.multiarray", "_reconstruct"))


def _unsupported_global(module: str, name: str, loading: str) -> WeightsOnlyLoadError:
    # (a builtin is named bare, `range`, as PyTorch names it: that is how the user spells it in
    # add_safe_globals([range]))
    path = name if module == "builtins" else f"{module}.{name}"
    return WeightsOnlyLoadError(
        f"{_WEIGHTS_ONLY_HELP}Unsupported global: GLOBAL {path} was not an "
        f"allowed global by default. Please use `tapegrad.serialization.add_safe_globals"
        f"([{path}])` or the `tapegrad.serialization.safe_globals([{path}])` context "
        f"manager to allowlist this global if you trust this class/function.\n\nCheck the documentation of tapegrad.load to learn more "
        f"about types accepted by default with weights_only (loading {loading}).")


class _StorageToken:
    """What a weights-only load hands the pickle for a persisted array while plain ndarrays are
    not allowed: only a tensor's rebuild may claim it; one left unclaimed is a bare ndarray."""

    __slots__ = ("array", "claimed")

    def __init__(self, array) -> None:
        self.array = array
        self.claimed = False


_WEIGHTS_ONLY_HELP = (
    "Weights only load failed. This file can still be loaded, to do so you have two options, "
    "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. "  # bold, as PyTorch
    "\n\t(1) In PyTorch 2.6, we "
    "changed the default value of the `weights_only` argument in `torch.load` from `False` to "
    "`True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, but "
    "it can result in arbitrary code execution. Do it only if you got the file from a trusted "
    "source.\n\t(2) Alternatively, to load with `weights_only=True` please check the recommended "
    "steps in the following error message.\n\tWeightsUnpickler error: ")


class _ArchiveReading:
    """Unpickler behaviour for data.pkl: persisted arrays come from the archive (through
    map_location), and globals from the allowlist when `allowed` is not None (weights_only)."""

    archive: zipfile.ZipFile
    name: str
    allowed: dict | None

    def setup(self, archive, name, map_storage, allowed):
        self.archive = archive
        self.name = name
        self.map_storage = map_storage
        self.allowed = allowed
        self.loaded: dict[str, np.ndarray] = {}
        return self

    def find_class(self, module, name):
        if self.allowed is None:
            return super().find_class(module, name)    # weights_only=False: any global
        # protocols < 3 name Python 2's modules (__builtin__.set): map them as pickle does
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        found = self.allowed.get((module, name))
        if (found is None and (module, name) == ("numpy", "ndarray")
                and any(g in _user_safe_globals for g in _NDARRAY_GLOBALS)):
            found = _NdarrayClass()        # (a pickled array names it for _reconstruct)
        if found is None and (module, name) in _user_safe_globals:
            found = _NUMPY_STAND_INS.get((module, name), _user_safe_globals[(module, name)])
        if found is None:
            raise _unsupported_global(module, name, self.name)
        return found

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 2 and pid[0] == "ndarray"
                and isinstance(pid[1], str) and pid[1].isdigit()):
            raise CheckpointError(f"unknown persistent id {pid!r:.80}")
        key = pid[1]
        arr = self.loaded.get(key)
        if arr is None:
            try:
                with self.archive.open(f"{_PREFIX}data/{key}.npy") as entry:
                    arr = np.load(io.BytesIO(entry.read()), allow_pickle=False)
            except KeyError:
                raise CheckpointError(f"the pickle refers to a missing array {key!r}") from None
            if type(arr) is not np.ndarray or arr.dtype.kind not in _ARRAY_KINDS:
                raise CheckpointError(f"array {key!r} is not a numeric array")
            if not arr.dtype.isnative:
                arr = arr.astype(arr.dtype.newbyteorder("="))
            arr = self.map_storage(arr, "cpu")     # (tapegrad's own format holds CPU arrays)
            self.loaded[key] = arr
        return arr


class _WeightsOnlyUnpickler(_ArchiveReading, pickle._Unpickler):
    """The unpickler of weights-only loads: Python's pure-Python unpickler (its opcodes can be
    overridden one by one), globals from the allowlist, and BUILD (which sets attributes or calls
    __setstate__ on an object) only for the numpy dtype specs that need it and for instances of
    classes the user allowed: it could otherwise overwrite a tensor's array with anything."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def load_build(self):
        target, state = self.stack[-2], self.stack[-1]
        # A module state_dict is an OrderedDict carrying its layout versions as the attribute
        # _metadata (as PyTorch's): plain attributes of an exact OrderedDict are data, not code.
        if (type(target) is OrderedDict and type(state) is dict
                and all(type(k) is str for k in state)):
            self.stack.pop()
            target.__dict__.update(state)
            return
        if type(target) is np.ndarray and target.size == 0 and target.dtype == np.uint8 \
                and isinstance(state, tuple):   # a pickled array (see _checked_reconstruct)
            self.stack.pop()
            target.__setstate__(_checked_ndarray_state(state))
            return
        user_classes = tuple(g for g in _user_safe_globals.values() if isinstance(g, type))
        if (isinstance(target, _core.TensorBase)        # never, even for allowed subclasses
                or not isinstance(target, (_DtypeSpec,) + user_classes)):
            raise WeightsOnlyLoadError(
                f"{_WEIGHTS_ONLY_HELP}BUILD of a {type(target).__name__} object is not "
                f"allowed (loading {self.name}).")
        pickle._Unpickler.load_build(self)

    dispatch[pickle.BUILD[0]] = load_build

    def load_frozenset(self):
        # PyTorch pickles with protocol 2, where a frozenset is the global builtins.frozenset,
        # which its allowlist lacks; this file's protocol has an opcode for it instead, so the
        # same refusal is made here (unless the user allowed frozenset).
        if ("builtins", "frozenset") not in _user_safe_globals:
            raise _unsupported_global("builtins", "frozenset", self.name)
        pickle._Unpickler.load_frozenset(self)

    dispatch[pickle.FROZENSET[0]] = load_frozenset

    # Items go only into the exact builtin containers, as PyTorch's weights-only unpickler
    # allows: a list or dict subclass (a config AttrDict), even one the user allowlisted, would
    # otherwise run its own append/__setitem__ during the load.
    def _check_container(self, opcode, allowed, what):
        target = self.stack[-1]
        if type(target) not in allowed:
            raise WeightsOnlyLoadError(
                f"{_WEIGHTS_ONLY_HELP}Can only {opcode} {what}, but got {type(target)} "
                f"(loading {self.name}).")

    def load_append(self):
        item = self.stack.pop()
        self._check_container("append to", (list,), "lists")
        self.stack[-1].append(item)

    def load_appends(self):
        items = self.pop_mark()
        self._check_container("extend", (list,), "lists")
        self.stack[-1].extend(items)

    def load_setitem(self):
        value = self.stack.pop()
        key = self.stack.pop()
        self._check_container("SETITEM for", (dict, OrderedDict, Counter),
                              "dict, collections.OrderedDict, collections.Counter")
        self.stack[-1][key] = value

    def load_setitems(self):
        items = self.pop_mark()
        self._check_container("SETITEMS for", (dict, OrderedDict, Counter),
                              "dict, collections.OrderedDict, collections.Counter")
        target = self.stack[-1]
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    dispatch[pickle.APPEND[0]] = load_append
    dispatch[pickle.APPENDS[0]] = load_appends
    dispatch[pickle.SETITEM[0]] = load_setitem
    dispatch[pickle.SETITEMS[0]] = load_setitems

    # the opcodes above, which a trusted (weights_only=False) load runs as plain pickle does
    RESTRICTED_OPCODES = (pickle.BUILD, pickle.FROZENSET, pickle.APPEND, pickle.APPENDS,
                          pickle.SETITEM, pickle.SETITEMS)

    def persistent_load(self, pid):
        array = super().persistent_load(pid)
        if any(g in _user_safe_globals for g in _NDARRAY_GLOBALS):
            return array
        token = _StorageToken(array)
        self.storage_tokens.append(token)
        return token

    def load(self):
        self.storage_tokens: list[_StorageToken] = []
        result = super().load()
        if not all(token.claimed for token in self.storage_tokens):
            raise _unsupported_global("numpy._core.multiarray", "_reconstruct", self.name)
        return result


# -- loading --------------------------------------------------------------------------------------

def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Load an object saved by `tapegrad.save` from a path or a binary file object.

    weights_only: True by default (as PyTorch 2.6+; False when a pickle_module is given).
        Only tensors, Parameters, dtypes, devices, Size, numbers, strings, bytes and None, in
        dicts, OrderedDicts, lists, tuples, sets and Counters are accepted (plus what
        `add_safe_globals` allowed: numpy arrays need numpy's `_reconstruct`, numpy scalars
        its `scalar` and `dtype`, as under PyTorch);
        anything else raises pickle.UnpicklingError "Weights only load failed".
        `weights_only=False` unpickles any object (a whole model, an optimizer). WARNING: that
        runs the pickle, which can execute arbitrary code: use it only for files you trust.
    map_location: None, 'cpu', a device, a dict {saved location: location}, or a callable
        `fn(storage, location)` returning the storage to use (or None); tapegrad is CPU-only, so
        every target must be the CPU.

    Files in the first tapegrad format (.npz) load as before.  A file that is not a tapegrad
    checkpoint, or is corrupt or truncated, raises RuntimeError naming the file and the problem.
    """
    weights_only = _weights_only_choice(weights_only, pickle_module)
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    _check_unpickler_args(pickle_load_args, weights_only)
    if mmap and not isinstance(f, (str, os.PathLike)):
        raise ValueError("f must be a file path in order to use the mmap argument")
    if not (hasattr(f, "read") or isinstance(f, (str, os.PathLike))):
        raise AttributeError(f"'{_type_name(f)}' object has no attribute 'seek'. You can only "
                             "torch.load from a file that is seekable. Please pre-load the data "
                             "into a buffer like io.BytesIO and try to load from it instead.")
    name = _describe(f)
    if hasattr(f, "read"):
        map_storage = _storage_mapper(map_location)
        _check_seekable(f)
        if not hasattr(f, "seekable"):     # read/seek/tell suffice for PyTorch; zipfile asks
            f = io.BytesIO(f.read())       # seekable() too
        return _load_from(f, name, map_storage, weights_only, pickle_module)
    # As PyTorch: a missing file is reported before a map_location naming another device.
    with open(os.fspath(f), "rb") as fh:
        map_storage = _storage_mapper(map_location)
        return _load_from(fh, name, map_storage, weights_only, pickle_module)


def _weights_only_choice(weights_only, pickle_module) -> bool:
    """weights_only as PyTorch settles it: unset means True, unless a pickle_module is given (a
    trusted file); the environment's TORCH_FORCE_WEIGHTS_ONLY_LOAD forces True, and
    TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD forces False where the caller did not choose."""
    unset = weights_only is None
    if unset:
        weights_only = pickle_module is None
    flags = ("1", "y", "yes", "true")
    force = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in flags
    force_no = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in flags
    if force and force_no:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or "
                           "`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` should be set, but both were set.")
    if force:
        return True
    if force_no and unset:
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the"
                      "`weights_only` argument was not explicitly passed to `torch.load`, forcing "
                      "weights_only=False.", UserWarning, stacklevel=3)
        return False
    return bool(weights_only)


def _check_seekable(f) -> None:
    """PyTorch's test of a file object: `f.seek(f.tell())`, its AttributeError or
    UnsupportedOperation re-raised with advice (a pipe's OSError as it is)."""
    try:
        f.seek(f.tell())
    except (io.UnsupportedOperation, AttributeError) as e:
        raise type(e)(f"{e}. You can only torch.load from a file that is seekable. Please "
                      "pre-load the data into a buffer like io.BytesIO and try to load from it "
                      "instead.") from None


def _check_unpickler_args(pickle_load_args: dict, weights_only: bool) -> None:
    """PyTorch hands these to its unpickler, which refuses what it does not take (the
    weights-only one takes only `encoding`); none changes how a tapegrad archive reads."""
    if weights_only:
        if pickle_load_args:
            warnings.warn("pickle_load_args only works if `weights_only=False`.", UserWarning,
                          stacklevel=3)
        for key in pickle_load_args:
            if key != "encoding":
                raise TypeError(f"Unpickler.__init__() got an unexpected keyword argument "
                                f"'{key}'")
    for key in pickle_load_args:
        if key not in ("encoding", "errors", "fix_imports", "buffers"):
            raise TypeError(f"'{key}' is an invalid keyword argument for Unpickler()")


def _describe(f) -> str:
    if hasattr(f, "read"):
        name = getattr(f, "name", None)
        return repr(name) if isinstance(name, str) else f"<{type(f).__name__} object>"
    return repr(os.fspath(f))


class _MapLocationFailed(Exception):
    """Carries what the user's map_location callable raised (or the error for what it
    returned) out of the unpickler, whose other failures mean a corrupt file: load re-raises
    it as it was, as PyTorch does."""

    def __init__(self, error: Exception) -> None:
        super().__init__(error)
        self.error = error


def _storage_mapper(map_location):
    """restore(array, location): what becomes of each loaded storage, as PyTorch's
    _get_restore_location settles it.  `location` is the device the file says the storage was
    saved on ('cpu', 'cuda:0'); the place it is restored to is map_location's choice for it (a
    dict maps only the locations it names; a callable gets (storage, location) and None from it
    means "where it was saved"), else that saved place.  Each storage is checked when it is
    read, not before: a checkpoint without tensors loads with map_location='cuda' on a CPU
    machine, and a CUDA checkpoint loaded without map_location fails, as under PyTorch."""
    checked = set()                 # places already found valid (one check per location)

    def place(arr, where):
        if where not in checked:
            try:
                _check_target(where)
            except Exception as e:
                raise _MapLocationFailed(e) from None
            checked.add(where)
        return arr
    if map_location is None:
        return place
    if isinstance(map_location, dict):
        return lambda arr, location: place(arr, map_location.get(location, location))
    if isinstance(map_location, str):
        return lambda arr, location: place(arr, map_location)
    if isinstance(map_location, device):
        return lambda arr, location: place(arr, str(map_location))
    if callable(map_location):
        def mapped(arr, location):
            from .tensor import Tensor
            try:
                result = map_location(_core.wrap_array(arr), location)
            except Exception as e:
                raise _MapLocationFailed(e) from None
            if result is None:
                return place(arr, location)
            if isinstance(result, Tensor):
                result = result._array
            if type(result) is not np.ndarray or result.shape != arr.shape:
                raise _MapLocationFailed(TypeError(
                    "map_location callable must return the storage it was given (or None), "
                    f"got {_type_name(result)}"))
            return result
        return mapped
    raise TypeError(f"map_location must be a str, a device, a dict or a callable, got "
                    f"{_type_name(map_location)}")


def _check_target(target) -> None:
    if as_device(target).type == "cuda":
        raise RuntimeError("Attempting to deserialize object on a CUDA device but "
                           "torch.cuda.is_available() is False. If you are running on a CPU-only "
                           "machine, please use torch.load with map_location=torch.device('cpu') "
                           "to map your storages to the CPU.")
    check_device(target)


_END_OF_DIRECTORY = b"PK\x05\x06"     # a zip's end-of-central-directory record


def _first_archive(fh, start: int):
    """(ZipFile, its file) for the archive that begins at `start` when more follow it: cut at
    the first end-of-directory record that closes a readable archive (a tensor's bytes can
    spell the signature: those cuts fail to open).  The file is left just past that archive,
    where the next one begins."""
    fh.seek(start)
    data = fh.read()
    pos = data.find(_END_OF_DIRECTORY)
    while pos >= 0 and pos + 22 <= len(data):
        end = pos + 22 + int.from_bytes(data[pos + 20:pos + 22], "little")
        try:
            archive = zipfile.ZipFile(io.BytesIO(data[:end]))
        except (zipfile.BadZipFile, ValueError, OSError, EOFError):
            pos = data.find(_END_OF_DIRECTORY, pos + 1)
            continue
        fh.seek(start + end)
        return archive, archive.fp
    return None, None


def _load_from(fh, name: str, map_storage, weights_only: bool, pickle_module):
    start = fh.tell()
    try:
        archive = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError):
        archive = None
    if archive is not None and archive.infolist() and \
            min(info.header_offset for info in archive.infolist()) != start:
        # zipfile reads the directory at the end of the file: that of the last of several
        # archives written one after another, not the one at the read position
        archive.close()
        archive, cut = _first_archive(fh, start)
        if archive is None:
            fh.seek(start)
        else:
            fh, start = cut, 0
    if archive is not None and _FORMAT_ENTRY not in archive.namelist():
        from ._torch_checkpoint import (UnsupportedDtypeError, load_torch_archive,
                                        torch_archive_root)
        root = torch_archive_root(archive)
        if root is not None:               # written by PyTorch's torch.save
            with archive:
                try:
                    return load_torch_archive(archive, root, name, map_storage, weights_only)
                except _MapLocationFailed as e:
                    raise e.error from None
                except (WeightsOnlyLoadError, CheckpointError, UnsupportedDtypeError):
                    raise
                except Exception as e:
                    if not weights_only and not isinstance(e, (pickle.UnpicklingError, EOFError)):
                        raise               # a class the pickle names, or the user's own code
                    raise CheckpointError(f"tapegrad.load: {name} (a PyTorch checkpoint) is "
                                          f"corrupt: {type(e).__name__}: {e}") from e
    if archive is None or _FORMAT_ENTRY not in archive.namelist():
        fh.seek(start)                     # the first format (npz), or foreign
        if archive is not None:
            archive.close()
        return load_npz(fh, name)
    with archive:
        try:
            tag = archive.read(_FORMAT_ENTRY)
            if tag != _FORMAT_TAG:
                raise CheckpointError(f"unknown format {tag[:40]!r}")
            pickled = archive.read(_PICKLE_ENTRY)
            if weights_only:
                cls = _WeightsOnlyUnpickler
            else:
                base = pickle.Unpickler if pickle_module is None else pickle_module.Unpickler
                cls = type("_CheckpointUnpickler", (_ArchiveReading, base), {})
            unpickler = cls(io.BytesIO(pickled)).setup(
                archive, name, map_storage, _default_safe_globals() if weights_only else None)
            return unpickler.load()
        except _MapLocationFailed as e:
            raise e.error from None
        except WeightsOnlyLoadError:
            raise
        except CheckpointError as e:
            raise CheckpointError(f"tapegrad.load: {name} is corrupt: {e}") from e
        except Exception as e:
            if not weights_only and not isinstance(e, (zipfile.BadZipFile, pickle.UnpicklingError,
                                                       EOFError)):
                raise                       # an error raised by the user's own classes
            raise CheckpointError(f"tapegrad.load: {name} is corrupt or truncated: "
                                  f"{type(e).__name__}: {e}") from e
