"""Variable-length batches for recurrent layers: padding, packing and PackedSequence.

A packed batch stores the sequences sorted by decreasing length, time-major: `data` holds, for
each step t, the rows of the `batch_sizes[t]` sequences still running.  Packing and unpacking are
built from differentiable ops (select, slice, cat, stack, index_select), so gradients flow through.
"""
from __future__ import annotations as _annotations

import numbers
from collections import namedtuple

import numpy as np

from ... import _core
from ... import creation
from ...tensor import Tensor
from ..._torch_names import TorchNamedClass as _TorchNamedClass

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]

_cat = _core.TORCH_FUNCTIONS["cat"]
_stack = _core.TORCH_FUNCTIONS["stack"]

_PackedSequenceBase = namedtuple("PackedSequence_",
                                 ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def invert_permutation(permutation):
    """The inverse of a 1-D permutation tensor (None for None): converts a PackedSequence's
    sorted_indices to its unsorted_indices and back."""
    if permutation is None:
        return None
    inverse = np.empty_like(permutation._array)
    inverse[permutation._array] = np.arange(permutation._array.size)
    return creation.from_numpy(inverse)


class PackedSequence(_PackedSequenceBase, metaclass=_TorchNamedClass):
    """The packed form of a batch of sequences (see the module docstring).  Build it with
    pack_padded_sequence or pack_sequence, not by hand.  (print(type(packed)) shows PyTorch's
    <class 'torch.nn.utils.rnn.PackedSequence'>.)"""

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            # PyTorch's other calling form: PackedSequence((data, batch_sizes), ...)
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence "
                             "should never be created manually. They should be instantiated by "
                             "functions like pack_sequence and pack_padded_sequences in "
                             "nn.utils.rnn.")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """A PackedSequence whose ``data`` is converted with ``Tensor.to(*args, **kwargs)``; the batch
        sizes and sorting indices are kept. Self when nothing changes.
        """
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else type(self)(data, self.batch_sizes,
                                                         self.sorted_indices,
                                                         self.unsorted_indices)

    def double(self):
        """The PackedSequence with its data cast to float64."""
        return self.to(_core.float64)

    def float(self):
        """The PackedSequence with its data cast to float32."""
        return self.to(_core.float32)

    def half(self):
        """The PackedSequence with its data cast to float16."""
        return self.to(_core.float16)

    def long(self):
        """The PackedSequence with its data cast to int64."""
        return self.to(_core.int64)

    def int(self):
        """The PackedSequence with its data cast to int32."""
        return self.to(_core.int32)

    def short(self):
        """The PackedSequence with its data cast to int16."""
        return self.to(_core.int16)

    def char(self):
        """The PackedSequence with its data cast to int8."""
        return self.to(_core.int8)

    def byte(self):
        """The PackedSequence with its data cast to uint8."""
        return self.to(_core.uint8)

    def cpu(self):
        """Self: the data is on the CPU."""
        return self

    def cuda(self, *args, **kwargs):
        """Moving to a GPU fails as ``Tensor.cuda`` does: there is no accelerator."""
        return self.to(self.data.cuda(*args, **kwargs).device)

    def pin_memory(self):
        """Pinned memory needs an accelerator; fails as ``Tensor.pin_memory`` does."""
        return type(self)(self.data.pin_memory(), self.batch_sizes, self.sorted_indices,
                          self.unsorted_indices)

    def is_pinned(self) -> bool:
        """Whether the data sits in pinned memory (never, on the CPU)."""
        return self.data.is_pinned()

    @property
    def is_cuda(self) -> bool:
        """Always False: the data is on the CPU."""
        return False


def _lengths_array(lengths) -> np.ndarray:
    if isinstance(lengths, Tensor):
        arr = lengths.detach()._array
    else:
        arr = np.asarray(lengths)
    return arr.astype(np.int64)


def pack_padded_sequence(input, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded (T, B, *) batch ((B, T, *) with batch_first) given each sequence's length."""
    lengths = _lengths_array(lengths)
    if lengths.ndim != 1:
        # PyTorch sorts first when asked to, so a 2-D lengths fails in its index_select
        # (IndexError); otherwise the packing kernel's own check speaks (RuntimeError).
        if not enforce_sorted and lengths.ndim > 1:
            raise IndexError("index_select(): Index is supposed to be a vector")
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                           f"{lengths.ndim}D cpu Long tensor")
    if enforce_sorted:
        if np.any(lengths[:-1] < lengths[1:]):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability.")
        sorted_indices = None
    else:
        # PyTorch's torch.sort(lengths, descending=True): std::sort, so equal lengths of a
        # batch over 16 leave their order (and sorted_indices) to its steps
        from ..._extra_ops import _unstable_sort_order
        order = _unstable_sort_order(lengths, 0, True)
        lengths = lengths[order]
        sorted_indices = creation.from_numpy(order.astype(np.int64))
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if input.dim() < 2:                # PyTorch's packing kernel reads the batch size first
        if input.dim() == 0 and not batch_first:
            raise IndexError("Dimension specified as 1 but tensor has no dimensions")
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if batch_first:
        input = input.transpose(0, 1)
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    steps, batch = input.shape[0], input.shape[1]
    if lengths.size != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{lengths.size} (batch_size={batch})")
    if lengths.size and lengths.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if lengths.size and lengths.max() > steps:
        # PyTorch reads past the input here; a clear error is the only safe answer.
        raise RuntimeError(f"Expected sequence lengths to be at most the padded length "
                           f"{steps}, but got a length of {int(lengths.max())}")
    max_len = int(lengths[0]) if lengths.size else 0
    batch_sizes = np.array([(lengths > t).sum() for t in range(max_len)], dtype=np.int64)
    pieces = [input[t] if bs == batch else input[t][:bs]
              for t, bs in enumerate(batch_sizes.tolist())]
    # PyTorch packs in one op: a script printing the packed batch sees its node's name
    data = _core._name_grad_fn(_cat(pieces, 0), "PackPaddedSequenceBackward0")
    return PackedSequence(data, creation.from_numpy(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded batch, lengths in the original order)."""
    data, batch_sizes_t, sorted_indices, unsorted_indices = sequence
    batch_sizes = batch_sizes_t.tolist()
    max_len = len(batch_sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_len}")
    else:
        total_length = max_len
    batch = batch_sizes[0]
    tail = tuple(data.shape[1:])
    # As PyTorch: a padding-filled output whose time steps are copied in place (grad_fn
    # CopySlices, which a script printing the output's grad_fn sees).
    padded = creation.full((total_length, batch) + tail, padding_value, dtype=data.dtype)
    offset = 0
    for step, bs in enumerate(batch_sizes):
        padded[step, :bs] = data[offset:offset + bs]
        offset += bs
    counts = np.array(batch_sizes, dtype=np.int64)
    lengths = (counts[None, :] > np.arange(batch)[:, None]).sum(axis=1).astype(np.int64)
    # (PyTorch's order: transpose, then restore the original order, so grad_fn is
    # IndexSelectBackward0 for an unsorted batch)
    if batch_first:
        padded = padded.transpose(0, 1)
    if unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, unsorted_indices)
        lengths = lengths[unsorted_indices._array]
    return padded, creation.from_numpy(lengths)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right"):
    """Stack sequences of shapes (L_i, *) into (L_max, B, *) (or (B, L_max, *)), padded."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    try:
        sequences = list(sequences)
    except TypeError:
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg of "
                           f"type: {type(sequences)}") from None
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    for i, s in enumerate(sequences):
        if not isinstance(s, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{_core.type_name(s)}")
    for s in sequences:
        if s.dim() == 0:
            raise RuntimeError("pad_sequence: every sequence needs at least one dimension "
                               "(got a 0-d tensor)")
    tail = tuple(sequences[0].shape[1:])
    for s in sequences[1:]:
        other = tuple(s.shape[1:])
        if other != tail:
            if len(other) != len(tail):
                raise RuntimeError(f"pad_sequence: sequences must have the same number of "
                                   f"dimensions, got {sequences[0].dim()} and {s.dim()}")
            d = next(k for k in range(len(tail)) if tail[k] != other[k])
            raise RuntimeError(f"The size of tensor a ({tail[d]}) must match the size of "
                               f"tensor b ({other[d]}) at non-singleton dimension {d + 1}")
    if isinstance(padding_value, Tensor) and padding_value.ndim == 0:
        padding_value = padding_value.item()
    if not isinstance(padding_value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"pad_sequence(): argument 'padding_value' (position 3) must be float, "
                        f"not {_core.type_name(padding_value)}")
    max_len = max(s.shape[0] for s in sequences)
    batch = len(sequences)
    # As PyTorch: the output has the FIRST sequence's dtype (the others are cast into it, as
    # copy_ casts: no promotion) and is filled in place, so its grad_fn is CopySlices.
    padded = creation.full(((batch, max_len) if batch_first else (max_len, batch)) + tail,
                           float(padding_value), dtype=sequences[0].dtype)
    for i, s in enumerate(sequences):
        n = s.shape[0]
        steps = slice(0, n) if padding_side == "right" else slice(max_len - n, max_len)
        if batch_first:
            padded[i, steps] = s
        else:
            padded[steps, i] = s
    return padded


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack (L_i, *) sequences (sorted by decreasing length unless enforce_sorted=False)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False):
    """Split a padded batch back into its list of sequences.

    As PyTorch does, a time-major batch is transposed IN PLACE (``transpose_``): the caller's
    tensor is batch-major afterwards, and a leaf that requires grad is refused.  Each sequence
    is taken with a boolean mask over the steps, so it is a copy (IndexBackward0), not a view.
    """
    if not batch_first:
        padded_sequences.transpose_(0, 1)
    steps = creation.arange(padded_sequences.shape[1])
    return [seq[steps < int(n)] for seq, n in zip(padded_sequences.unbind(0),
                                                  _lengths_array(lengths).tolist())]


def unpack_sequence(packed_sequences: PackedSequence):
    """Split a PackedSequence back into its list of sequences (original order)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
