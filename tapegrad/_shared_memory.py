"""Tensors in shared memory (Tensor.share_memory_, Tensor.is_shared) and how any tensor travels
to another process through multiprocessing (Process arguments, DataLoader worker queues).

share_memory_ moves a tensor's values into a named shared-memory segment and points the tensor
at it. Pickled by multiprocessing (its ForkingPickler, used for Process arguments and queues), a
shared tensor sends the segment's name instead of its values, and the receiving process maps the
same segment, so in-place updates in either process are seen by both. Segments live until the
process that created them exits (it unlinks them then); a receiving process only maps them.
This is the Hogwild idiom: model.share_memory(), then worker processes train it in place.

Any other tensor travels as a copy of its own elements: a view of a larger buffer (a sample of a
big dataset tensor) does not drag the whole buffer along, as plain pickling (which keeps the
storage, for tapegrad.save) would.
"""
from __future__ import annotations as _annotations

import atexit
from multiprocessing import shared_memory
from multiprocessing.reduction import ForkingPickler

import numpy as np

# Segment name -> SharedMemory, kept open for the life of the process: the numpy arrays that
# view a segment hold its buffer, which must outlive every tensor built on it.
_SEGMENTS: dict[str, shared_memory.SharedMemory] = {}
# id(root ndarray over a segment) -> segment name; the roots are kept alive here too.
_ROOTS: dict[int, tuple[str, np.ndarray]] = {}
_CREATED: list[str] = []


def _root(arr: np.ndarray) -> np.ndarray:
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


def segment_of(arr: np.ndarray) -> str | None:
    entry = _ROOTS.get(id(_root(arr)))
    return entry[0] if entry is not None else None


def is_shared(tensor) -> bool:
    return segment_of(tensor._array) is not None


def share_memory_(tensor):
    """Move tensor's values into a new shared segment (a no-op when they already are there)."""
    if is_shared(tensor):
        return tensor
    arr = tensor._array
    segment = shared_memory.SharedMemory(create=True, size=max(arr.nbytes, 1))
    _SEGMENTS[segment.name] = segment
    _CREATED.append(segment.name)
    root = np.ndarray(arr.shape, arr.dtype, buffer=segment.buf)
    root[...] = arr
    _ROOTS[id(root)] = (segment.name, root)
    register_transport_reducers()
    tensor._array = root
    return tensor


def _attach(name: str, dtype: str, nbytes_shape: tuple) -> np.ndarray:
    """The root array over segment `name` in this process (mapped once per process)."""
    for root_id, (seg, root) in _ROOTS.items():
        if seg == name:
            return root
    segment = _SEGMENTS.get(name) or shared_memory.SharedMemory(name=name)
    _SEGMENTS[name] = segment
    root = np.ndarray(nbytes_shape, np.dtype(dtype), buffer=segment.buf)
    _ROOTS[id(root)] = (name, root)
    return root


def _rebuild_shared(cls, name, dtype, root_shape, offset, shape, strides, requires_grad, state):
    from .tensor import _rebuild_tensor
    root = _attach(name, dtype, root_shape)
    t = _rebuild_tensor(cls, root, offset, shape, strides, requires_grad, state)
    return t


def _reduce_tensor(tensor):
    from .tensor import _rebuild_tensor, _storage_and_geometry
    arr = tensor._array
    name = segment_of(arr)
    state = dict(tensor.__dict__) if tensor.__dict__ else None
    if name is None:
        storage, offset, strides = _storage_and_geometry(arr)
        if storage.nbytes > arr.nbytes:
            storage = arr.copy(order="C")
            offset, strides = 0, storage.strides
        return (_rebuild_tensor,
                (type(tensor), storage, offset, arr.shape, strides, tensor.requires_grad, state))
    root = _root(arr)
    offset = arr.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return (_rebuild_shared, (type(tensor), name, root.dtype.str, root.shape, offset, arr.shape,
                              arr.strides, tensor.requires_grad, state))


_registered: set = set()


def register_transport_reducers() -> None:
    """Make multiprocessing pickle tensors with _reduce_tensor. ForkingPickler looks reducers up
    by exact type: Tensor and the subclasses defined so far (Parameter) are registered."""
    from .tensor import Tensor
    pending = [Tensor]
    while pending:
        cls = pending.pop()
        if cls not in _registered:
            ForkingPickler.register(cls, _reduce_tensor)
            _registered.add(cls)
        pending.extend(cls.__subclasses__())


@atexit.register
def _unlink_created() -> None:
    for name in _CREATED:
        try:
            _SEGMENTS[name].unlink()
        except FileNotFoundError:
            pass
