"""torch.utils.data._utils.collate: how the DataLoader merges samples into a batch.

`collate(batch, collate_fn_map=...)` is the one mechanism: it looks the first sample's type up
in the map (the exact type, else the first key it is an instance of, in the map's order) and
hands the batch to that function; containers (mappings, namedtuples, sequences) it collates
field by field itself.  `default_collate` is `collate` with `default_collate_fn_map` (tensors,
numpy arrays and scalars, Python numbers, strings), which users extend, as PyTorch documents, by
adding their own types to a copy of the map or to the map itself.  `default_convert` is the
collate function when automatic batching is off (batch_size=None).
"""
from __future__ import annotations as _annotations

import collections.abc
import copy
import re
from typing import Callable

import numpy as np

from .... import _core
from ....tensor import Tensor
from ...._real_torch import is_real_tensor_type, real_tensor_or_item, real_tensor_or_none

__all__ = ["collate", "collate_float_fn", "collate_int_fn", "collate_numpy_array_fn",
           "collate_numpy_scalar_fn", "collate_str_fn", "collate_tensor_fn", "default_collate",
           "default_collate_fn_map", "default_convert"]

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, "
                                  "numbers, dicts or lists; found {}")


def _as_tensor(data):
    arr = np.asarray(data)
    _core.numpy_dtype(arr.dtype)            # raises for dtypes tapegrad has no tensor type for
    return _core.wrap_array(arr if arr.flags.c_contiguous else np.ascontiguousarray(arr))


def _is_numpy_value(elem) -> bool:
    t = type(elem)
    return t.__module__ == "numpy" and t.__name__ not in ("str_", "string_")


def default_convert(data):
    """Convert numpy arrays (and numpy scalars) in `data` to tensors, leaving the rest alone
    (the collate function when automatic batching is off, i.e. batch_size=None)."""
    elem_type = type(data)
    if isinstance(data, _core.TensorBase):
        return data
    if is_real_tensor_type(elem_type):
        return real_tensor_or_none(data)
    if _is_numpy_value(data):
        if (isinstance(data, np.ndarray)
                and np_str_obj_array_pattern.search(data.dtype.str) is not None):
            return data
        return _as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _like(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):       # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _like(data, [default_convert(d) for d in data])
    return data


def _like(container, converted):
    """`converted` (a dict or a list of `container`'s converted fields) in container's own type,
    as PyTorch's collate keeps it: a mutable mapping or sequence is copied and refilled (keeping
    its class and any state of its own), another type is built from it, and a type that cannot
    be built that way gives the plain dict or list."""
    try:
        if isinstance(container, collections.abc.MutableMapping):
            clone = copy.copy(container)
            clone.update(converted)
            return clone
        if isinstance(container, collections.abc.MutableSequence):
            clone = copy.copy(container)
            for i, value in enumerate(converted):
                clone[i] = value
            return clone
        return type(container)(converted)
    except TypeError:
        return converted


def collate(batch, *, collate_fn_map: dict | None = None):
    """Merge a list of samples into a batch: the first sample's type chooses the function in
    `collate_fn_map` (exact type first, then the first key it is an instance of); mappings,
    namedtuples and sequences are collated field by field (tuples become lists); anything else
    is a TypeError.  Each map function is called as fn(batch, collate_fn_map=collate_fn_map)."""
    elem = batch[0]
    elem_type = type(elem)
    if is_real_tensor_type(elem_type):
        # real PyTorch tensors (a dataset package imported the real torch): collated as the
        # tapegrad tensors they read as, a tapegrad batch (tapegrad._real_torch)
        return collate([real_tensor_or_item(b) for b in batch], collate_fn_map=collate_fn_map)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)

    def fields(samples):
        return collate(samples, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        return _like(elem, {key: fields([d[key] for d in batch]) for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):       # namedtuple
        return elem_type(*(fields(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [fields(samples) for samples in transposed]
        return _like(elem, [fields(samples) for samples in transposed])
    raise TypeError(default_collate_err_msg_format.format(elem_type))


# -- the default map's functions ------------------------------------------------------------------

def collate_tensor_fn(batch, *, collate_fn_map: dict | None = None):
    """torch.stack(batch, 0), as PyTorch's collate calls it: the one stack, so the batch has
    stack's layout (contiguous unless every sample is channels_last) and records when a sample
    requires grad (grad_fn=<StackBackward0>, as PyTorch's)."""
    return _core.stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map: dict | None = None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([_as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map: dict | None = None):
    return _as_tensor(np.array(batch))


def collate_float_fn(batch, *, collate_fn_map: dict | None = None):
    return _core.wrap_array(np.array(batch, dtype=np.float64))


def collate_int_fn(batch, *, collate_fn_map: dict | None = None):
    """torch.tensor(batch): ints give int64, bools (an int subclass) bool, and ints mixed with
    floats the default float dtype."""
    import tapegrad
    return tapegrad.tensor(batch)


def collate_str_fn(batch, *, collate_fn_map: dict | None = None):
    return batch


default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}

# What the map holds until a user extends it; while it still does, the DataLoader may cut a
# TensorDataset's batches straight from its arrays (what default_collate would give).
_DEFAULT_MAP_ENTRIES = tuple(default_collate_fn_map.items())


def default_map_unchanged() -> bool:
    return tuple(default_collate_fn_map.items()) == _DEFAULT_MAP_ENTRIES


def default_collate(batch):
    """Merge a list of samples into a batch, as torch.utils.data.default_collate.

    Tensors are stacked along a new first dimension; numpy arrays become stacked tensors; Python
    floats a float64 tensor, ints an int64 tensor (bools a bool tensor); strings stay a list;
    dicts, namedtuples, tuples and lists are collated field by field (tuples become lists).
    Extend it by adding a type to `default_collate_fn_map`.
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
