"""torch.nn.functional.embedding_bag, used by nn.EmbeddingBag.

A bag's rows are looked up with F.embedding (its gradient accumulates repeated indices, sparse
with sparse=True; max_norm first renorms every row the input names, as PyTorch) and reduced per
bag with index_add (sum, mean) or
scatter_reduce's amax (max), all recorded, so gradients and weights follow PyTorch's.  Entries
equal to padding_idx are left out of their bag (a mean divides by the rest); an empty bag is
zeros.
"""
from __future__ import annotations as _annotations

import operator
import warnings

import numpy as np

from .. import _core
from .._saved_indices import saves_index_args
from .. import creation

_MODES = ("sum", "mean", "max")


def _bags(input, offsets, include_last_offset: bool):
    """(flat indices as a tensor, the bag number of each entry, the number of bags)."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type(offsets)}")
        n_bags, length = input.shape
        if length == 0:
            # (PyTorch's F.embedding_bag makes the offsets of a 2D input with
            # arange(0, numel, length), which refuses a step of 0; 60901006)
            raise RuntimeError("step must be nonzero")
        return input.reshape(-1), np.repeat(np.arange(n_bags), length), n_bags
    if input.dim() != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.dim() != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    starts = offsets._array.astype(np.int64)
    length = input.shape[0]
    if starts.size and starts[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {int(starts[0])}")
    if starts.size and starts[-1] > length:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {length} but "
                           f"got offsets[-1] of {int(starts[-1])}")
    if np.any(np.diff(starts) < 0):
        raise RuntimeError("offsets must be monotonically non-decreasing")
    # include_last_offset: the last offset only closes the list; as in PyTorch, the last bag
    # still runs to the end of input.
    n_bags = max(starts.size - 1, 0) if include_last_offset else starts.size
    bounds = np.append(starts[:n_bags], length)
    bag_of = np.repeat(np.arange(n_bags), np.diff(bounds)) if n_bags else np.zeros(0, np.int64)
    used = length if n_bags else 0
    return input[:used] if used != length else input, bag_of, n_bags


def _legacy_type(t) -> str:
    """t's type as PyTorch's argument checks name it: the legacy class (torch.FloatTensor)
    where one exists, else the backend's type (CPUBoolType, CPUComplexFloatType)."""
    name = _core.scalar_type_name_of(t._array.dtype)
    if t._array.dtype.kind in "bc":
        return f"CPU{name}Type"
    return f"torch.{name}Tensor"


def _check_index_dtype(t) -> None:
    """Indices and offsets are Long or Int (PyTorch's message names 'indices' for either)."""
    if not isinstance(t, _core.TensorBase) or \
            t._array.dtype not in (np.dtype(np.int64), np.dtype(np.int32)):
        dtype = _legacy_type(t) if isinstance(t, _core.TensorBase) else type(t).__name__
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int; but got "
                           f"{dtype} instead (while checking arguments for embedding_bag)")


def _checked_padding_idx(padding_idx, num_rows: int):
    """padding_idx as a Python int (an integer tensor of one element is taken, a bool is not),
    checked as ATen does: outside [-num_rows, num_rows) it names no row (unchecked, the modulo
    below would quietly leave out some other row)."""
    if padding_idx is None:
        return None
    try:
        if isinstance(padding_idx, bool):
            raise TypeError
        padding_idx = operator.index(padding_idx)
    except TypeError:
        raise TypeError("embedding_bag(): argument 'padding_idx' (position 9) must be int, not "
                        f"{type(padding_idx).__name__}") from None
    if not -num_rows <= padding_idx < num_rows:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, {-num_rows} "
                           f"through {num_rows - 1}, but got {padding_idx}")
    return padding_idx


def _check_weight_dtypes(weight, per_sample_weights) -> None:
    """PyTorch's kernel takes a floating weight and per-sample weights of the same dtype: a
    mix would otherwise promote the bags to the wider type."""
    if not weight.is_floating_point():
        raise RuntimeError("Expected tensor for argument #1 'weight' to have one of the following "
                           f"scalar types: Half, BFloat16, Float, Double; but got "
                           f"{_legacy_type(weight)} instead (while checking arguments for "
                           "embedding_bag)")
    if per_sample_weights is not None and per_sample_weights.dtype != weight.dtype:
        raise RuntimeError("Expected tensor for argument #1 'weight' to have the same type as "
                           "tensor for argument #1 'per_sample_weights'; but type "
                           f"{_legacy_type(weight)} does not equal "
                           f"{_legacy_type(per_sample_weights)} (while checking arguments for "
                           "embedding_bag)")


@saves_index_args("offsets")
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights=None, include_last_offset: bool = False, padding_idx=None):
    """Sums, means or maxima of bags of embedding rows: input (B, N) is B bags of N indices;
    a 1-D input is split into bags at `offsets`."""
    if isinstance(weight, _core.TensorBase) and isinstance(input, _core.TensorBase) and \
            weight.dtype == _core.int64 and input.is_floating_point():
        # PyTorch still takes the old order, embedding_bag(weight, input), with a warning
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    out = _reduced_bags(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode,
                        sparse, per_sample_weights, include_last_offset, padding_idx)
    # PyTorch records one node for the whole bag reduction, whatever the mode
    return _core._name_grad_fn(out, "EmbeddingBagBackward0")


def _reduced_bags(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                  per_sample_weights, include_last_offset, padding_idx):
    """embedding_bag's checks, lookup and per-bag reduction (recorded as its internal ops)."""
    from .functional import embedding
    # (PyTorch's Python-level checks first, then its builtin's)
    if per_sample_weights is not None and isinstance(input, _core.TensorBase) and \
            tuple(per_sample_weights.shape) != tuple(input.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if isinstance(weight, _core.TensorBase) and weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.dim()}")
    if isinstance(input, _core.TensorBase) and isinstance(offsets, _core.TensorBase) and \
            input.dim() == 1:
        # PyTorch promotes indices and offsets to one type before checking it: uint8 indices
        # with int64 offsets are taken, int64 indices with float offsets are not
        from .._more_ops import promote_types
        common = promote_types(input.dtype, offsets.dtype)
        input, offsets = input.to(common), offsets.to(common)
    _check_index_dtype(input)
    if isinstance(offsets, _core.TensorBase):
        _check_index_dtype(offsets)
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    # (PyTorch passes them on as its builtin embedding_bag's 4th, 6th and 8th arguments)
    for position, name, flag in ((4, "scale_grad_by_freq", scale_grad_by_freq),
                                 (6, "sparse", sparse),
                                 (8, "include_last_offset", include_last_offset)):
        _core.check_bool("embedding_bag", name, flag, position)
    _check_weight_dtypes(weight, per_sample_weights)
    padding_idx = _checked_padding_idx(padding_idx, weight.shape[0])
    flat, bag_of, n_bags = _bags(input, offsets, include_last_offset)
    num_rows = weight.shape[0]
    values = flat._array.astype(np.int64)
    bad = (values < 0) | (values >= num_rows)
    if bad.any():
        at = int(np.argmax(bad))
        # (PyTorch's kernel for max mode or a padding_idx words it differently from its
        # index check)
        if padding_idx is not None or mode == "max":
            raise RuntimeError("embedding_bag: Expected idx >= 0 && idx < num_embeddings but "
                               f"found idx to be {int(values[at])}")
        raise RuntimeError(f"Index {at} of input takes value {int(values[at])} which is not in "
                           f"the valid range [0, {num_rows})")
    keep = np.ones(values.shape, dtype=bool)
    if padding_idx is not None:
        keep = values != (padding_idx % num_rows)
    kept = np.nonzero(keep)[0]
    if max_norm is not None:
        # PyTorch renorms every row the input names, padding_idx's too, before it gathers
        from .._torch_functional import embedding_renorm_
        embedding_renorm_(weight, flat, max_norm, norm_type)
    # scale_grad_by_freq divides each row's gradient by how often the input names it, as
    # embedding does (and PyTorch's documentation, CUDA and MPS; its CPU kernel in 2.13
    # divides by another index's count, pytorch/pytorch#190063, fixed after 2.13)
    # sparse=True: the weight's gradient is the sparse one of this lookup (the kept entries in
    # order, each row's gradient), as PyTorch's embedding_bag gives
    rows = embedding(flat[_core.wrap_array(kept, False)] if not keep.all() else flat, weight,
                     scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)
    bag_index = _core.wrap_array(np.ascontiguousarray(bag_of[kept]), False)
    zeros = creation.zeros(n_bags, weight.shape[1], dtype=weight.dtype)
    if mode == "max":
        if rows.shape[0] == 0:
            # nothing to pick: zeros, recorded; by index_add, which saves no result (PyTorch
            # keeps only the picked indices: a write into the result before backward is fine;
            # scatter_reduce's amax saved it and raised, fuzz seed 61100125)
            return zeros.index_add(0, bag_index, rows)
        return _bag_max(rows, bag_of[kept], zeros)
    if per_sample_weights is not None:
        weights = per_sample_weights.reshape(-1)
        if weights.shape[0] != values.shape[0]:     # entries past the last bag are unused
            weights = weights[:values.shape[0]]
        if not keep.all():
            weights = weights[_core.wrap_array(kept, False)]
        rows = rows * weights.unsqueeze(1)
    summed = zeros.index_add(0, bag_index, rows)
    if mode == "sum":
        return summed
    counts = np.maximum(np.bincount(bag_of[kept], minlength=n_bags), 1)
    return summed / _core.wrap_array(counts.astype(weight._array.dtype)[:, None], False)


def _bag_max(rows, bags, zeros):
    """Each bag's elementwise maximum of its rows, as PyTorch's max mode: a running maximum
    that starts at the bag's first row and moves only to a greater value (so NaN is skipped
    unless it comes first, and a tie keeps the first row).  The gradient goes to that row;
    PyTorch keeps those indices, not the result, so a write into the result before backward
    changes nothing.  An empty bag gives 0."""
    R = rows._array
    n_bags, width = zeros.shape
    n = R.shape[0]
    best = np.full((n_bags, width), np.nan, dtype=R.dtype)
    np.fmax.at(best, bags, R)
    position = np.arange(n)[:, None]
    first = np.full((n_bags, width), n, dtype=np.int64)
    np.minimum.at(first, bags, np.where(R == best[bags], position, n))
    empty = np.bincount(bags, minlength=n_bags)[:, None] == 0
    first_row = np.minimum(np.searchsorted(bags, np.arange(n_bags)), n - 1)[:, None]
    # a NaN first row stays the maximum, as does the first row of a column of NaN
    first = np.where(np.isnan(R[first_row[:, 0]]) | (first == n), first_row, first)
    empty = np.broadcast_to(empty, first.shape)
    picked = rows.gather(0, _core.wrap_array(np.where(empty, 0, first), False))
    if not empty.any():
        return picked
    return picked.masked_fill(_core.wrap_array(np.ascontiguousarray(empty), False), 0)
