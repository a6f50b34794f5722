"""DataLoader; batches load in the main process (num_workers=0) or in worker processes
(_multiprocessing.py, _worker.py), and are merged by the collate functions (_utils/collate.py)."""
from __future__ import annotations as _annotations

import functools
import math
import multiprocessing
import multiprocessing.context
import os
import warnings
from typing import Generic, TypeVar

import numpy as np

from ... import _core
from ..._torch_names import TorchNamedABCMeta as _TorchNamedABCMeta
from ..._torch_names import object_repr as _object_repr
from ._utils.collate import default_collate, default_convert, default_map_unchanged
from ._worker import get_worker_info
from .dataset import IterableDataset, Subset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _numpy_generator

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]


def _tensor_source(dataset):
    """(arrays, index map) when batches of `dataset` can be cut straight from its tensors' arrays:
    a TensorDataset, or Subsets of one, with integer indices.  None otherwise, and the batch
    is built as PyTorch builds it (each sample indexed, then stacked), where cutting rows would
    differ from that: a tensor requiring grad (the batch records StackBackward0), a source that
    is not C-contiguous (stack decides the batch's layout), float indices (an IndexError)."""
    index_map = None
    while type(dataset) is Subset:
        ind = dataset.indices
        ind = np.asarray(ind._array if isinstance(ind, _core.TensorBase) else ind)
        if ind.ndim != 1 or ind.dtype.kind not in "iu":
            return None
        ind = ind.astype(np.intp, copy=False)
        index_map = ind if index_map is None else ind[index_map]
        dataset = dataset.dataset
    if type(dataset) is not TensorDataset:
        return None
    if not all(isinstance(t, _core.TensorBase) and t._array.ndim >= 1 and not t.requires_grad
               and t._array.flags.c_contiguous for t in dataset.tensors):
        return None
    return [t._array for t in dataset.tensors], index_map


class _MapFetcher:
    """Turns what the index sampler yields (a list of indices, or one index without automatic
    batching) into a batch of a map-style dataset: the same code in the main process and in
    workers, so both produce the same batches."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, fast: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.source = _tensor_source(dataset) if fast else None

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        idx = np.asarray(index) if self.source is not None else None
        if idx is not None and idx.dtype.kind in "iu":
            # Fast path: gather the batch's rows from the arrays at once (what indexing each
            # sample and stacking them gives, without a Python call per sample).
            arrays, index_map = self.source
            idx = idx.astype(np.intp, copy=False)
            if index_map is not None:
                idx = index_map[idx]
            return [_core.wrap_array(a[idx]) for a in arrays]
        if isinstance(index, np.ndarray):
            # (the built-in samplers' batches are index arrays: a dataset gets Python ints and
            # lists, as PyTorch's, not numpy.int64 — whose `i + 1.0` is a float64 scalar)
            index = index.tolist()
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return self.collate_fn(getitems(index))
        return self.collate_fn([self.dataset[i] for i in index])


class _IterableFetcher:
    """The next batch (or sample) of one iterator over an iterable-style dataset; raises
    StopIteration when it is exhausted (or only a partial batch is left and drop_last)."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, batch_size, drop_last) -> None:
        self.iterator = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index=None):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        data = []
        for sample in self.iterator:
            data.append(sample)
            if len(data) == self.batch_size:
                break
        else:
            self.ended = True
        if not data or (self.drop_last and len(data) < self.batch_size):
            self.ended = True
            raise StopIteration
        return self.collate_fn(data)


class _SingleProcessDataLoaderIter:
    """An iterator over one epoch of a DataLoader's batches, loaded in the main process."""

    __repr__ = _object_repr

    def __init__(self, loader: "DataLoader") -> None:
        self._loader = loader
        self._base_seed = loader._new_iterator_seed()
        self._gen = loader._batches()

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._gen)

    def __len__(self) -> int:
        return len(self._loader)


_T_co = TypeVar("_T_co", covariant=True)


class DataLoader(Generic[_T_co], metaclass=_TorchNamedABCMeta):  # type(loader) prints torch's path
    """Combines a dataset and a sampler and iterates over batches of samples (single process).

    Args:
        dataset: a map-style (`__getitem__` and `__len__`) or iterable-style dataset.
        batch_size (int or None): samples per batch (default 1; None disables batching).
        shuffle (bool): reshuffle the samples at every epoch (default False).
        sampler: the order of the indices (mutually exclusive with shuffle).
        batch_sampler: yields lists of indices (mutually exclusive with batch_size, shuffle,
            sampler and drop_last).
        num_workers (int): how many worker processes load batches (0: the main process).
        pin_memory (bool): accepted; tapegrad is CPU-only (warns as PyTorch without a GPU).
        timeout (float): seconds to wait for a worker's batch before RuntimeError (0: forever).
        worker_init_fn: called as fn(worker_id) in each worker after seeding.
        multiprocessing_context: a context or start method name (default 'fork' on Linux).
        prefetch_factor (int): batches loaded in advance per worker (default 2 with workers).
        persistent_workers (bool): keep the workers alive between epochs.
        collate_fn: merges a list of samples into a batch (default: default_collate).
        drop_last (bool): drop the last incomplete batch (default False).
        generator: tapegrad.Generator (or numpy Generator) used to shuffle (default: the global
            stream, seeded by manual_seed).
    """

    __repr__ = _object_repr

    # The attributes the sampler chain was built from: set after __init__, they would be
    # silently ignored (the BatchSampler keeps the old batch_size), so PyTorch refuses them.
    _FROZEN_AFTER_INIT = frozenset(("batch_size", "batch_sampler", "sampler", "drop_last",
                                    "dataset", "persistent_workers"))
    _initialized = False

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0, collate_fn=None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; "
                             "use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self.persistent_workers = persistent_workers
        self._iterator = None            # the persistent workers' iterator, kept across epochs
        if num_workers > 0 and prefetch_factor is None:
            self.prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")

        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._iterable:       # (what PyTorch sets; the iterable's fetcher ignores it)
                sampler = _InfiniteConstantSampler()
            else:
                sampler = (RandomSampler(dataset, generator=generator) if shuffle
                           else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        self._user_collate = collate_fn is not None
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.check_worker_number_rationality()
        self._initialized = True

    def __setattr__(self, attr, val) -> None:
        if self._initialized and attr in self._FROZEN_AFTER_INIT:
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def multiprocessing_context(self):
        """The workers' multiprocessing context (None: 'fork' on Linux, else the platform's)."""
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context) -> None:
        # A start method's name becomes its context; checked here, as PyTorch does, so a
        # wrong one fails at construction, not at the first epoch.
        if context is not None:
            if self.num_workers <= 0:
                raise ValueError("multiprocessing_context can only be used with multi-process "
                                 f"loading (num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError("multiprocessing_context option should specify a valid "
                                     f"start method in {methods!r}, but got "
                                     f"multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context object "
                                "or a string specifying the start method, but got "
                                f"multiprocessing_context={context}")
        self._multiprocessing_context = context

    def check_worker_number_rationality(self) -> None:
        """Warn, as PyTorch does at construction and at each new workers' iterator, when more
        worker processes are asked for than the CPUs this process may run on."""
        if not self.num_workers:
            return
        cpuset_checked = hasattr(os, "sched_getaffinity")
        usable = len(os.sched_getaffinity(0)) if cpuset_checked else os.cpu_count()
        if usable is not None and self.num_workers <= usable:
            return
        suggestion = ("DataLoader is not able to compute a suggested max number of worker in "
                      "current system." if usable is None else
                      f"Our suggested max number of worker in current system is {usable}"
                      f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, "
                      "which is smaller than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in "
                      f"total. {suggestion} Please be aware that excessive worker creation might "
                      "get DataLoader running slow or even freeze, lower the worker number to "
                      "avoid potential slowness/freeze if necessary.", UserWarning, stacklevel=2)

    @property
    def _auto_collation(self) -> bool:
        if self._iterable:
            return self.batch_size is not None
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if self._iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = (length // self.batch_size if self.drop_last
                          else math.ceil(length / self.batch_size))
            return length
        return len(self._index_sampler)

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        from ._multiprocessing import _MultiProcessingDataLoaderIter
        if self.persistent_workers and self._iterator is not None:
            self._iterator._reset()          # the same workers (and seeds) for the next epoch
            return self._iterator
        self.check_worker_number_rationality()
        iterator = _MultiProcessingDataLoaderIter(self, self._new_iterator_seed())
        if self.persistent_workers:
            self._iterator = iterator
        return iterator

    def _new_iterator_seed(self) -> int:
        """What PyTorch does when an epoch's iterator is created, for any num_workers: warn about
        pin_memory without an accelerator, and draw the workers' base seed from the loader's
        generator (before the sampler draws, so the shuffle order ignores num_workers).
        The warnings name this file's line, as PyTorch's name its dataloader.py: under the
        default filter a script sees each once, however many loops iterate its loaders."""
        if self.pin_memory and self.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be used "
                          f"as the device,ignore pin_memory_device='{self.pin_memory_device}'.",
                          UserWarning, stacklevel=1)
        if self.pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then "
                          "device pinned memory won't be used.", UserWarning, stacklevel=1)
        return int(_numpy_generator(self.generator).integers(0, 2 ** 63 - 1))

    # -- the epoch ----------------------------------------------------------------------------
    def _fast_path(self) -> bool:
        return (self.collate_fn is default_collate and default_map_unchanged()
                and isinstance(self.batch_sampler, BatchSampler) and self._auto_collation)

    def _fetcher_factory(self):
        """A picklable callable making this loader's fetcher (in the main process or a worker)."""
        if self._iterable:
            return functools.partial(_IterableFetcher, self.dataset, self._auto_collation,
                                     self.collate_fn, self.batch_size, self.drop_last)
        return functools.partial(_MapFetcher, self.dataset, self._auto_collation,
                                 self.collate_fn, self._fast_path())

    def _index_stream(self):
        """What the fetchers are given, one item per batch (None for iterable-style datasets)."""
        if self._iterable:
            return _infinite_none()
        if self._fast_path():
            return iter(self.batch_sampler._index_arrays())
        return iter(self._index_sampler)

    def _batches(self):
        fetcher = self._fetcher_factory()()
        for index in self._index_stream():
            try:
                batch = fetcher.fetch(index)
            except StopIteration:
                return
            yield batch


class _InfiniteConstantSampler(Sampler):
    """The sampler of a loader over an iterable-style dataset: None, forever."""

    def __iter__(self):
        return _infinite_none()


def _infinite_none():
    while True:
        yield None


def __getattr__(name):
    # PyTorch's worker iterator lives in this module under this name; ours is loaded on first use
    # (it pulls in multiprocessing), so the name resolves lazily.
    if name == "_MultiProcessingDataLoaderIter":
        from ._multiprocessing import _MultiProcessingDataLoaderIter
        return _MultiProcessingDataLoaderIter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
