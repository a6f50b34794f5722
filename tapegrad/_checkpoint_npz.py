"""The first tapegrad checkpoint format (tapegrad <= issue 15): a pickle-free .npz archive.

tapegrad.save now writes a zip holding a pickle (tapegrad/serialization.py); this module keeps
reading the files the earlier versions wrote, and can still write them (save_npz) for tests.

A checkpoint is one numpy .npz archive (a zip of .npy files): one entry per tensor or numpy array,
plus a JSON manifest (stored as a uint8 array) describing the saved object's structure and each
tensor's dtype, shape and requires_grad.  Loading reads the arrays with `allow_pickle=False` and
rebuilds the structure from the JSON alone, so no pickle is ever loaded: a checkpoint is data,
never code.  Saved objects may nest dicts (OrderedDict, Counter), lists, tuples and sets of
tensors, numpy arrays and scalars, Python numbers, strings, bytes, None and bools; optimizer,
scheduler and module state dicts are of this kind.
"""
from __future__ import annotations as _annotations

import io
import json
import os
import pickle
import zipfile
from collections import Counter, OrderedDict

import numpy as np

from . import _core

__all__ = ["save_npz", "load_npz", "CheckpointError", "MANIFEST"]

MANIFEST = "__tapegrad_manifest__"
_MANIFEST = MANIFEST
_FORMAT = "tapegrad"
_VERSION = 1
_ZIP_MAGIC = b"PK\x03\x04"
_ARRAY_KINDS = "biufcUS"         # numpy dtypes that .npy stores without pickling
_TENSOR_DTYPES = {"float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64",
                  "bool"}
_DICT_KINDS = {"dict": dict, "OrderedDict": OrderedDict, "Counter": Counter}


# -- saving ---------------------------------------------------------------------------------------

class _Encoder:
    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.tensor_keys: dict[int, str] = {}
        self.keep_alive: list = []
        self.active: set[int] = set()

    def _store(self, arr: np.ndarray, prefix: str) -> str:
        key = f"{prefix}{len(self.arrays)}"
        self.arrays[key] = arr
        return key

    def encode(self, obj, where: str):
        t = type(obj)
        if obj is None or t is bool or t is int or t is float or t is str:
            return obj
        if isinstance(obj, _core.TensorBase):
            return {"tensor": self._tensor(obj, where)}
        if isinstance(obj, np.ndarray):
            self._check_array(obj, where)
            return {"ndarray": {"key": self._store(obj, "a"), "dtype": obj.dtype.str,
                                "shape": list(obj.shape)}}
        if isinstance(obj, np.generic):
            arr = np.asarray(obj)
            self._check_array(arr, where)
            return {"npscalar": {"key": self._store(arr, "a"), "dtype": arr.dtype.str}}
        if isinstance(obj, _core.dtype):
            return {"dtype": obj.np_dtype.name}
        if isinstance(obj, bool):
            return bool(obj)
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            return float(obj)
        if isinstance(obj, str):
            return str(obj)
        if isinstance(obj, complex):
            return {"complex": [obj.real, obj.imag]}
        if isinstance(obj, (bytes, bytearray)):
            return {"bytes": self._store(np.frombuffer(bytes(obj), dtype=np.uint8), "b")}

        # containers
        if id(obj) in self.active:
            raise ValueError("tapegrad.save: cannot save a self-referencing structure "
                             f"(at {where})")
        self.active.add(id(obj))
        try:
            if isinstance(obj, dict):
                kind = ("Counter" if isinstance(obj, Counter) else
                        "OrderedDict" if isinstance(obj, OrderedDict) else "dict")
                items = [[self.encode(k, f"{where} key {k!r}"), self.encode(v, f"{where}[{k!r}]")]
                         for k, v in obj.items()]
                return {kind: items}
            if isinstance(obj, tuple):
                from .tensor import Size
                tag = "size" if isinstance(obj, Size) else "tuple"
                return {tag: [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]}
            if isinstance(obj, list):
                return {"list": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]}
            if isinstance(obj, (set, frozenset)):
                tag = "frozenset" if isinstance(obj, frozenset) else "set"
                return {tag: [self.encode(v, f"{where} element") for v in obj]}
        finally:
            self.active.discard(id(obj))
        raise TypeError(f"tapegrad.save: cannot save an object of type {t.__module__}."
                        f"{t.__qualname__} (at {where}); a checkpoint holds tensors, numpy "
                        "arrays, numbers, strings, bytes, None and bools, in dicts, lists, tuples "
                        "and sets")

    @staticmethod
    def _check_array(arr: np.ndarray, where: str) -> None:
        if arr.dtype.kind not in _ARRAY_KINDS or arr.dtype.fields is not None:
            raise TypeError(f"tapegrad.save: cannot save a numpy array of dtype {arr.dtype} (at "
                            f"{where}): only numeric, bool and string arrays can be stored "
                            "without pickling")

    def _tensor(self, t, where: str) -> dict:
        arr = t._array
        if arr.dtype.name not in _TENSOR_DTYPES:
            raise TypeError(f"tapegrad.save: unsupported tensor dtype {arr.dtype} (at {where})")
        key = self.tensor_keys.get(id(t))
        if key is None:          # a tensor saved twice is stored once and loads as one tensor
            key = self._store(arr, "t")
            self.tensor_keys[id(t)] = key
            self.keep_alive.append(t)
        cls = type(t)
        kind = ("Parameter" if cls.__name__ == "Parameter" and cls.__module__.startswith("tapegrad")
                else "Tensor")
        return {"key": key, "dtype": arr.dtype.name, "shape": list(arr.shape),
                "requires_grad": bool(t.requires_grad), "class": kind}


def save_npz(obj, f) -> None:
    """Save `obj` (tensors, numbers, strings, ... nested in dicts/lists/tuples) to `f` in the
    first (npz) format; `f` is a path (str or os.PathLike) or a binary file object."""
    enc = _Encoder()
    root = enc.encode(obj, "obj")
    manifest = {"format": _FORMAT, "version": _VERSION, "root": root}
    blob = json.dumps(manifest, separators=(",", ":")).encode("utf-8")
    arrays = dict(enc.arrays)
    arrays[_MANIFEST] = np.frombuffer(blob, dtype=np.uint8)
    if hasattr(f, "write"):
        np.savez(f, **arrays)
    else:
        with open(os.fspath(f), "wb") as fh:     # (np.savez would append .npz to a path)
            np.savez(fh, **arrays)


# -- loading --------------------------------------------------------------------------------------

class CheckpointError(RuntimeError):
    """A file tapegrad.load cannot read: corrupt, truncated, or not a tapegrad checkpoint."""


class EmptyCheckpointError(CheckpointError, EOFError):
    """An empty file: PyTorch's unpickler runs out of input there (EOFError)."""


class NotACheckpointError(CheckpointError, pickle.UnpicklingError):
    """Bytes that are no archive at all: PyTorch's unpickler fails on them (UnpicklingError)."""


# Tracebacks and type(e).__name__ print the names PyTorch's errors have, which scripts compare.
EmptyCheckpointError.__name__ = EmptyCheckpointError.__qualname__ = "EOFError"
NotACheckpointError.__name__ = NotACheckpointError.__qualname__ = "UnpicklingError"


class _Decoder:
    def __init__(self, npz, name: str) -> None:
        self.npz = npz
        self.name = name
        self.tensors: dict[str, object] = {}

    def fail(self, what: str):
        return CheckpointError(f"tapegrad.load: {self.name} is corrupt: {what}")

    def array(self, key) -> np.ndarray:
        if not isinstance(key, str) or key == _MANIFEST or key not in self.npz.files:
            raise self.fail(f"the manifest refers to a missing array entry {key!r}")
        arr = self.npz[key]
        if not isinstance(arr, np.ndarray):
            raise self.fail(f"entry {key!r} is not an array")
        if not arr.dtype.isnative:
            arr = arr.astype(arr.dtype.newbyteorder("="))
        if not arr.flags.c_contiguous:
            arr = np.array(arr, order="C")
        return arr

    def checked(self, spec, fields: tuple) -> dict:
        if not isinstance(spec, dict) or any(k not in spec for k in fields):
            raise self.fail(f"malformed entry {spec!r}")
        return spec

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict) or len(node) != 1:
            raise self.fail(f"unexpected manifest node {node!r:.80}")
        (tag, body), = node.items()
        if tag == "tensor":
            return self.tensor(self.checked(body, ("key", "dtype", "shape", "requires_grad")))
        if tag in ("ndarray", "npscalar"):
            spec = self.checked(body, ("key", "dtype"))
            arr = self.array(spec["key"])
            if arr.dtype.kind not in _ARRAY_KINDS or arr.dtype != np.dtype(spec["dtype"]):
                raise self.fail(f"array {spec['key']!r} has dtype {arr.dtype}, the manifest says "
                                f"{spec['dtype']}")
            if tag == "npscalar":
                if arr.ndim != 0:
                    raise self.fail(f"scalar entry {spec['key']!r} has shape {arr.shape}")
                return arr[()]
            if list(arr.shape) != spec.get("shape"):
                raise self.fail(f"array {spec['key']!r} has shape {list(arr.shape)}, the manifest "
                                f"says {spec.get('shape')}")
            return arr
        if tag == "dtype":
            if body not in _TENSOR_DTYPES:
                raise self.fail(f"unknown dtype {body!r}")
            return getattr(_core, "bool_" if body == "bool" else body)
        if tag == "complex":
            if (not isinstance(body, list) or len(body) != 2
                    or not all(isinstance(v, (int, float)) for v in body)):
                raise self.fail(f"malformed complex {body!r}")
            return complex(body[0], body[1])
        if tag == "bytes":
            arr = self.array(body)
            if arr.dtype != np.uint8 or arr.ndim != 1:
                raise self.fail(f"bytes entry {body!r} is not a uint8 vector")
            return arr.tobytes()
        if tag in _DICT_KINDS:
            if not isinstance(body, list):
                raise self.fail(f"malformed {tag}")
            out = _DICT_KINDS[tag]()
            for item in body:
                if not isinstance(item, list) or len(item) != 2:
                    raise self.fail(f"malformed {tag} item")
                key = self.decode(item[0])
                try:
                    out[key] = self.decode(item[1])
                except TypeError:           # an unhashable key
                    raise self.fail(f"unhashable {tag} key") from None
            return out
        if tag in ("list", "tuple", "size", "set", "frozenset"):
            if not isinstance(body, list):
                raise self.fail(f"malformed {tag}")
            items = [self.decode(v) for v in body]
            if tag == "list":
                return items
            if tag == "tuple":
                return tuple(items)
            if tag == "size":
                from .tensor import Size
                if not all(type(v) is int for v in items):
                    raise self.fail("malformed size")
                return Size(items)
            try:
                return set(items) if tag == "set" else frozenset(items)
            except TypeError:
                raise self.fail(f"unhashable {tag} element") from None
        raise self.fail(f"unknown manifest tag {tag!r}")

    def tensor(self, spec: dict):
        key = spec["key"]
        if key in self.tensors:
            return self.tensors[key]
        arr = self.array(key)
        if arr.dtype.name != spec["dtype"] or arr.dtype.name not in _TENSOR_DTYPES:
            raise self.fail(f"tensor {key!r} has dtype {arr.dtype}, the manifest says "
                            f"{spec['dtype']}")
        if list(arr.shape) != spec["shape"]:
            raise self.fail(f"tensor {key!r} has shape {list(arr.shape)}, the manifest says "
                            f"{spec['shape']}")
        requires_grad = spec["requires_grad"]
        if not isinstance(requires_grad, bool) or (requires_grad and arr.dtype.kind != "f"):
            raise self.fail(f"tensor {key!r} has an invalid requires_grad {requires_grad!r}")
        t = _core.wrap_array(arr, requires_grad)
        if spec.get("class") == "Parameter":
            t = _as_parameter(t, requires_grad)
        self.tensors[key] = t
        return t


def _as_parameter(t, requires_grad: bool):
    """A Parameter around t's array when tapegrad.nn.Parameter exists (else t itself)."""
    try:
        from .nn import Parameter
    except ImportError:
        return t
    return Parameter(t.detach(), requires_grad=requires_grad)


def load_npz(fh, name: str):
    """The object stored in the npz checkpoint open as `fh` (seekable); `name` is for messages."""
    start = fh.tell()
    head = fh.read(len(_ZIP_MAGIC))
    fh.seek(start)
    if len(head) == 0:
        raise EmptyCheckpointError(f"tapegrad.load: {name} is empty (not a tapegrad checkpoint)")
    if head != _ZIP_MAGIC:
        raise NotACheckpointError(f"tapegrad.load: {name} is not a tapegrad checkpoint: not a zip "
                                  "archive (tapegrad.save writes a zip archive)")
    try:
        npz = np.load(fh, allow_pickle=False)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as e:
        raise CheckpointError(f"tapegrad.load: {name} is corrupt or truncated: {e}") from e
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise CheckpointError(f"tapegrad.load: {name} is not a tapegrad checkpoint")
    with npz:
        if _MANIFEST not in npz.files:
            if any(n.endswith("data.pkl") for n in npz.zip.namelist()):
                what = ("it was written by torch.save, whose pickle-based format tapegrad does not "
                        "load (re-save the state dict with tapegrad.save)")
            else:
                what = "it has no tapegrad manifest"
            raise CheckpointError(f"tapegrad.load: {name} is not a tapegrad checkpoint: {what}")
        try:
            raw = npz[_MANIFEST]
            if not isinstance(raw, np.ndarray) or raw.dtype != np.uint8 or raw.ndim != 1:
                raise CheckpointError(f"tapegrad.load: {name} is corrupt: malformed manifest")
            manifest = json.loads(raw.tobytes().decode("utf-8"))
            if (not isinstance(manifest, dict) or manifest.get("format") != _FORMAT
                    or "root" not in manifest):
                raise CheckpointError(f"tapegrad.load: {name} is not a tapegrad checkpoint: "
                                      "malformed manifest")
            if manifest.get("version") != _VERSION:
                raise CheckpointError(f"tapegrad.load: {name} has checkpoint format version "
                                      f"{manifest.get('version')!r}; this tapegrad reads version "
                                      f"{_VERSION}")
            return _Decoder(npz, name).decode(manifest["root"])
        except CheckpointError:
            raise
        except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError, UnicodeDecodeError,
                RecursionError) as e:
            raise CheckpointError(f"tapegrad.load: {name} is corrupt or truncated: "
                                  f"{type(e).__name__}: {e}") from e
