"""Samplers: the orders in which a DataLoader visits a map-style dataset's indices."""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import math
from typing import Generic, TypeVar

import numpy as np

from ... import _random
from ..._torch_names import object_repr as _object_repr

__all__ = ["BatchSampler", "DistributedSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler",
           "WeightedRandomSampler"]


def _numpy_generator(generator) -> np.random.Generator:
    """The numpy Generator behind `generator`: a tapegrad.Generator's stream, a numpy Generator,
    or None for tapegrad's global stream (seeded by manual_seed)."""
    if generator is None or isinstance(generator, (_random.Generator, np.random.Generator)):
        return _random._numpy_rng(generator)
    for attr in ("_generator", "_rng", "generator"):     # a wrapper holding a numpy Generator
        inner = getattr(generator, attr, None)
        if isinstance(inner, np.random.Generator):
            return inner
    raise TypeError("generator must be a tapegrad.Generator (or a numpy.random.Generator), got "
                    f"{_type_name(generator)}")


def _fresh_generator(generator) -> np.random.Generator:
    """PyTorch's samplers without a generator seed a new one from the default stream each epoch."""
    if generator is None:
        seed = int(_random._numpy_rng(None).integers(0, 2 ** 63 - 1))
        return np.random.default_rng(seed)
    return _numpy_generator(generator)


_T_co = TypeVar("_T_co", covariant=True)     # (a sampler is generic in its index type)


class Sampler(Generic[_T_co]):
    """Base class for all samplers: an iterable over dataset indices (or lists of them)."""

    __repr__ = _object_repr

    # No __init__: PyTorch removed the data_source argument, so Sampler(ds) is object's
    # TypeError ("Sampler() takes no arguments"), as there.

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """Samples elements sequentially, always in the same order."""

    def __init__(self, data_source) -> None:
        self.data_source = data_source

    def _index_chunks(self):
        yield np.arange(len(self.data_source))

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


# Draws with replacement come from the generator this many at a time.
_DRAW_CHUNK = 1 << 16


class RandomSampler(Sampler[int]):
    """Samples elements randomly: a permutation (or `num_samples` draws with replacement)."""

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError("replacement should be a boolean value, but got "
                            f"replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        """How many indices one pass yields: ``num_samples`` if given, else ``len(data_source)``."""
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def _index_chunks(self):
        """The indices of one pass as a stream of arrays: memory stays bounded however large
        num_samples is (a trainer that samples forever passes num_samples=10**10)."""
        n = len(self.data_source)
        rng = _fresh_generator(self.generator)
        remaining = self.num_samples
        while remaining > 0:
            if self.replacement:
                chunk = rng.integers(0, n, size=min(remaining, _DRAW_CHUNK))
            else:
                chunk = rng.permutation(n)[:remaining]
            remaining -= len(chunk)
            yield chunk

    def __iter__(self):
        for chunk in self._index_chunks():
            yield from chunk.tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """Samples elements randomly from a given list of indices, without replacement."""

    def __init__(self, indices, generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _numpy_generator(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """Samples ``num_samples`` indices in ``[0, len(weights))``, each with probability in
    proportion to its weight (with replacement by default): class rebalancing in a DataLoader."""

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None) -> None:
        from ... import as_tensor, float64
        if (not isinstance(num_samples, int) or isinstance(num_samples, bool)
                or num_samples <= 0):
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        weights_tensor = as_tensor(weights, dtype=float64)
        if weights_tensor.ndim != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        from ... import multinomial
        drawn = multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        return iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list]):
    """Wraps a sampler to yield lists of `batch_size` indices (the last one shorter unless
    `drop_last`)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        if (not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0):
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def _index_arrays(self):
        """The batches as index arrays, without a Python int per index for built-in samplers."""
        # A subclass with its own __iter__ (siamese-triplet's BalancedBatchSampler, which sets no
        # .sampler) yields its own batches: only BatchSampler's iteration is chunked here.
        if (type(self).__iter__ is BatchSampler.__iter__
                and type(getattr(self, "sampler", None)) in (SequentialSampler, RandomSampler)):
            bs = self.batch_size
            pending = np.empty(0, dtype=np.int64)  # the tail of a chunk, short of a batch
            for chunk in self.sampler._index_chunks():
                order = np.concatenate((pending, chunk)) if len(pending) else chunk
                stop = len(order) - len(order) % bs
                for start in range(0, stop, bs):
                    yield order[start:start + bs]
                pending = order[stop:]
            if len(pending) and not self.drop_last:
                yield pending
        else:
            for batch in self:
                yield batch

    def __iter__(self):
        if self.drop_last:
            sampler_iter = iter(self.sampler)
            while True:
                batch = []
                try:
                    for _ in range(self.batch_size):
                        batch.append(next(sampler_iter))
                except StopIteration:
                    return
                yield batch
        else:
            batch = []
            for idx in self.sampler:
                batch.append(idx)
                if len(batch) == self.batch_size:
                    yield batch
                    batch = []
            if batch:
                yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


class DistributedSampler(Sampler[_T_co]):
    """The share of a dataset's indices that process ``rank`` of ``num_replicas`` visits in
    data-parallel training: every ``num_replicas``-th index of the (shuffled, seeded with
    ``seed + epoch``) order, padded by repeating it so each replica gets the same count, or cut
    to a multiple of ``num_replicas`` with ``drop_last``.  Without an explicit
    ``num_replicas``/``rank`` they come from the default process group (``ValueError``, as
    PyTorch's, before ``init_process_group``)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False) -> None:
        from ... import distributed
        if num_replicas is None:
            num_replicas = distributed.get_world_size()
        if rank is None:
            rank = distributed.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if drop_last and len(dataset) % num_replicas != 0:
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            generator = _random.Generator()
            generator.manual_seed(self.seed + self.epoch)
            from ... import randperm
            indices = randperm(n, generator=generator).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            missing = self.total_size - len(indices)
            indices += (indices * math.ceil(missing / len(indices)))[:missing] if missing else []
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch about to run: with ``shuffle``, each epoch has its own order (the same on
        every replica)."""
        self.epoch = epoch
