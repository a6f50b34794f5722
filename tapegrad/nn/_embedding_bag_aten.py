"""torch.embedding_bag, the low-level form of F.embedding_bag (weight first, mode as a number,
and the bookkeeping tensors PyTorch's backward uses returned alongside the output)."""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import numpy as np

from .. import _core, grad_mode
from ._embedding_bag import _MODES, _bags
from ._embedding_bag import embedding_bag as _functional_form


def embedding_bag(weight, indices, offsets, scale_grad_by_freq: bool = False, mode: int = 0,
                       sparse: bool = False, per_sample_weights=None,
                       include_last_offset: bool = False, padding_idx=None) -> tuple:
    """torch.embedding_bag: the low-level form behind F.embedding_bag (weight first, 1-D indices
    with offsets, mode 0/1/2 for sum/mean/max).

    Returns (output, offset2bag, bag_size, max_indices) in the dtype of ``indices``, with
    PyTorch's CPU contents: offset2bag is each entry's bag (empty for mode sum without
    padding_idx, where PyTorch skips it); bag_size counts the non-padding entries of each bag
    (zeros for sum); max_indices is, for max, the weight row chosen per bag and column (0 for an
    empty bag), otherwise a copy of bag_size.  Only ``output`` is differentiable.
    """
    if not isinstance(offsets, _core.TensorBase):
        raise TypeError("embedding_bag(): argument 'offsets' (position 3) must be Tensor, not "
                        f"{_type_name(offsets)}")
    if mode not in (0, 1, 2):
        raise RuntimeError("`mode` must be sum, mean, or max.")
    if isinstance(indices, _core.TensorBase) and indices.dim() != 1:
        raise RuntimeError(f"embedding_bag: indices has to be a 1D Tensor (with offsets), but "
                           f"got shape {tuple(indices.shape)}")
    output = _functional_form(indices, weight, offsets, None, 2, scale_grad_by_freq, _MODES[mode],
                           sparse, per_sample_weights, include_last_offset, padding_idx)
    _, bag_of, n_bags = _bags(indices, offsets, include_last_offset)
    values = indices._array.astype(np.int64)[:bag_of.size]
    keep = np.ones(values.shape, dtype=bool)
    if padding_idx is not None:
        keep = values != (padding_idx % weight.shape[0])
    out_dtype = indices._array.dtype
    # PyTorch's CPU sum kernel for float32 without padding leaves offset2bag empty; the
    # bookkeeping lengths also differ between its recording and forward-only paths.
    recording = weight.requires_grad and grad_mode.is_grad_enabled()
    if mode == 0 and padding_idx is None and weight._array.dtype == np.float32:
        offset2bag = np.zeros(0, out_dtype)
    else:
        offset2bag = bag_of.astype(out_dtype)
    if mode == 0:
        # zeros: one per bag when recording, else one per offset (the closing one of
        # include_last_offset too), as PyTorch's two sum paths
        bag_size = np.zeros(n_bags if recording else offsets.shape[0], out_dtype)
    else:
        bag_size = np.bincount(bag_of[keep], minlength=n_bags).astype(out_dtype)
    if mode == 2:
        max_indices = np.zeros((n_bags, weight.shape[1]), out_dtype)
        table = weight._array
        # One bag at a time: bags are few next to their entries, and argmax keeps the first
        # of equal rows, as PyTorch's loop (it replaces the maximum only on a greater value).
        for b in range(n_bags):
            rows = values[(bag_of == b) & keep]
            if rows.size:
                max_indices[b] = rows[np.argmax(table[rows], axis=0)]
    else:
        max_indices = bag_size.copy()
    return (output,) + tuple(_core.wrap_array(a, False)
                             for a in (offset2bag, bag_size, max_indices))
