"""Datasets: the map-style base class, TensorDataset, Subset, ConcatDataset, random_split."""
from __future__ import annotations as _annotations

import bisect
import itertools
import math
import warnings
from typing import Generic, Iterable, TypeVar

from ..._random import randperm
from .sampler import _numpy_generator
from ..._torch_names import TorchNamedABCMeta as _TorchNamedABCMeta
from ..._torch_names import object_repr as _object_repr

__all__ = ["ChainDataset", "ConcatDataset", "Dataset", "IterableDataset", "StackDataset",
           "Subset", "TensorDataset", "random_split"]

# PyTorch's datasets are generic in their sample type (`class Faces(Dataset[Tensor])`)
_T_co = TypeVar("_T_co", covariant=True)
_T_stack = TypeVar("_T_stack")


class Dataset(Generic[_T_co], metaclass=_TorchNamedABCMeta):  # type(ds) prints torch's path
    """A map-style dataset: subclasses implement `__getitem__` (and usually `__len__`)."""

    __repr__ = _object_repr

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset[_T_co], Iterable[_T_co]):
    """An iterable-style dataset: subclasses implement `__iter__`.

    `__iter__` is left abstract (from `Iterable`), as in PyTorch: a subclass that forgets it
    fails when it is instantiated (TypeError), not later inside the DataLoader."""

    def __add__(self, other: "Dataset") -> "ChainDataset":
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple]):
    """Samples are the tensors' rows: `dataset[i] == tuple(t[i] for t in tensors)`."""

    def __init__(self, *tensors) -> None:
        if any(tensors[0].size(0) != tensor.size(0) for tensor in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset[_T_stack]):
    """Datasets of one length side by side: sample i is the tuple of their samples i
    (``StackDataset(images, labels)``) or, given by keyword, the dict of them
    (``StackDataset(image=images, label=labels)``)."""

    def __init__(self, *args, **kwargs) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        datasets = list(args) if args else list(kwargs.values())
        if not datasets:
            raise ValueError("At least one dataset should be passed")
        self._length = len(datasets[0])
        if any(len(d) != self._length for d in datasets):
            raise ValueError("Size mismatch between datasets")
        self.datasets = tuple(args) if args else dict(kwargs)

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {name: d[index] for name, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list):
        """The samples at ``indices`` (a DataLoader's batch), each dataset asked once: through
        its own ``__getitems__`` when it has one."""
        named = self.datasets if isinstance(self.datasets, dict) else dict(enumerate(self.datasets))
        columns = {}
        for name, d in named.items():
            if callable(getattr(d, "__getitems__", None)):
                items = d.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError("Nested dataset's output size mismatch. Expected "
                                     f"{len(indices)}, got {len(items)}")
            else:
                items = [d[i] for i in indices]
            columns[name] = items
        rows = [{name: items[k] for name, items in columns.items()} for k in range(len(indices))]
        if isinstance(self.datasets, dict):
            return rows
        return [tuple(row.values()) for row in rows]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[_T_co]):
    """The concatenation of several map-style datasets."""

    @staticmethod
    def cumsum(sequence):
        """The running totals of the lengths of ``sequence``'s datasets (``[3, 5]`` for lengths 3 and
        2): where each dataset ends in the concatenation.
        """
        r, s = [], 0
        for e in sequence:
            s += len(e)
            r.append(s)
        return r

    def __init__(self, datasets) -> None:
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset):
    """The chaining of several iterable datasets."""

    def __init__(self, datasets) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


class Subset(Dataset[_T_co]):
    """The samples of `dataset` at `indices`."""

    def __init__(self, dataset, indices) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[idx] for idx in indices])
        return [self.dataset[self.indices[idx]] for idx in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset, lengths, generator=None) -> list[Subset]:
    """Split `dataset` into non-overlapping random subsets of the given lengths.

    `lengths` are sizes summing to len(dataset), or fractions summing to 1 (floors, the remainder
    handed out one by one from the first split, as PyTorch does).  `generator`: a tapegrad.Generator
    or a numpy Generator (default: the global stream, seeded by manual_seed).
    """
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths: list[int] = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(math.floor(len(dataset) * frac))
        remainder = len(dataset) - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. "
                              f"This might result in an empty dataset.", stacklevel=2)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    # randperm parses the total as PyTorch's does (an integer tensor of lengths is fine, a float
    # length its TypeError)
    indices = randperm(sum(lengths), generator=_numpy_generator(generator)).tolist()
    return [Subset(dataset, indices[offset - length:offset])
            for offset, length in zip(itertools.accumulate(lengths), lengths)]
