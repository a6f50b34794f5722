"""DLPack exchange: Tensor.__dlpack__ (export) and tapegrad.from_dlpack (import), zero-copy.

A tensor's values are a numpy array, so both directions go through numpy's own DLPack support
(ndarray.__dlpack__, np.from_dlpack): no capsule is built by hand here.  What this module adds is
PyTorch's rules on top: a tensor that requires grad is not exported, a CPU-only stream check, and
the layouts and dtypes a consumer or tapegrad cannot take are refused with a clear error.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import numpy as np

from . import _core

# (kDLCPU, device 0): the only device tapegrad computes on.
CPU_DEVICE = (1, 0)

_INVALID_CAPSULE = ("from_dlpack received an invalid capsule. Note that DLTensor capsules can be "
                    "consumed only once, so you might have already constructed a tensor from it "
                    "once.")


def export_tensor(t, stream, max_version, dl_device, copy):
    """The capsule for Tensor.__dlpack__ (the DLPack producer protocol)."""
    if t.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    return _export_array(t, stream, max_version, dl_device, copy)


def _export_array(t, stream, max_version, dl_device, copy):
    if stream is not None and stream != -1:
        # PyTorch's CPU tensors accept no stream (-1 is its own "no stream" default).
        raise AssertionError("stream should be None on cpu.")
    arr = t._array
    if any(s < 0 for s in arr.strides):
        # DLPack allows negative strides, but PyTorch's importer aborts the process on them: hand
        # out a compact copy instead, unless the consumer demanded to share memory.
        if copy is False:
            raise BufferError(f"Cannot export a tensor of strides {arr.strides} (negative) "
                              f"without a copy, and copy=False was requested")
        arr = np.ascontiguousarray(arr)
        copy = None
    return arr.__dlpack__(max_version=max_version, dl_device=dl_device, copy=copy)


class _CapsuleHolder:
    """Presents a bare DLPack capsule (from to_dlpack or another library) to np.from_dlpack,
    which only accepts producers."""

    __slots__ = ("capsule",)

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **_ignored):
        return self.capsule

    def __dlpack_device__(self):
        return CPU_DEVICE


class _WritableView:
    """Exposes the memory of a read-only array through __array_interface__ with the read-only bit
    cleared, keeping the array (and the capsule behind it) alive as the new array's base."""

    __slots__ = ("__array_interface__", "source")

    def __init__(self, source: np.ndarray):
        interface = dict(source.__array_interface__)
        interface["data"] = (interface["data"][0], False)
        self.__array_interface__ = interface
        self.source = source


def _is_capsule(obj) -> bool:
    return type(obj).__name__ == "PyCapsule"


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing memory with `ext_tensor`: anything with __dlpack__ (a numpy array, a torch
    tensor, a tapegrad tensor) or a DLPack capsule.  copy=True returns a copy instead."""
    if device is not None:
        from ._device import check_device
        check_device(device)
    if isinstance(ext_tensor, _core.TensorBase):
        if ext_tensor.requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        # An alias, not a fresh wrap: it must share the version counter as well as the memory.
        out = ext_tensor.detach()
        return out.clone() if copy else out
    if _is_capsule(ext_tensor):
        producer = _CapsuleHolder(ext_tensor)
    elif hasattr(ext_tensor, "__dlpack__"):
        producer = ext_tensor
    else:
        raise RuntimeError(f"{_INVALID_CAPSULE} (got an object of type "
                           f"{_type_name(ext_tensor)}, which has no __dlpack__)")
    try:
        arr = np.from_dlpack(producer, copy=copy)
    except ValueError as e:
        if producer is ext_tensor or "incorrect name" not in str(e):
            raise
        # A consumed capsule is renamed "used_dltensor" by its first importer.
        raise RuntimeError(_INVALID_CAPSULE) from None
    except RuntimeError as e:
        if "dtype" not in str(e):
            raise
        # numpy's words for a dtype it has no equivalent of (bfloat16, ...) do not name it.
        dtype = getattr(ext_tensor, "dtype", None)
        named = f" of dtype {dtype}" if dtype is not None else ""
        raise TypeError(f"from_dlpack: cannot import a tensor{named}: numpy (tapegrad's storage) "
                        f"has no equivalent dtype ({e})") from None
    if producer is not ext_tensor and not arr.flags.writeable:
        # A bare capsule is the legacy (unversioned) format, which has no read-only flag: its
        # producers (to_dlpack) hand out writable memory, but numpy imports it read-only.
        arr = np.asarray(_WritableView(arr))
    # wrap_array refuses a dtype tapegrad has no tensors of, naming the supported ones.
    return _core.wrap_array(arr, False)


def to_dlpack(tensor):
    """A DLPack capsule of `tensor` (legacy interface: prefer passing the tensor itself).
    Unlike __dlpack__, PyTorch's to_dlpack exports a tensor that requires grad: the consumer gets
    its values, detached."""
    if not isinstance(tensor, _core.TensorBase):
        raise TypeError(f"to_dlpack(): argument 'data' (position 1) must be Tensor, not "
                        f"{_type_name(tensor)}")
    return _export_array(tensor, None, None, None, None)
