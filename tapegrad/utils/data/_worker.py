"""What runs inside a DataLoader worker process, and what it sends back.

A worker receives (epoch, task index, sampler index) messages on its own index queue, fetches the
batch with the same fetcher the main process uses with num_workers=0, and puts
(epoch, task index, batch) on the shared result queue.  None on the index queue ends the worker.
"""
from __future__ import annotations as _annotations

import dataclasses
import os
import queue
import random
import sys
import traceback

import numpy as np

from ..._shared_memory import register_transport_reducers

# How a tensor crosses a multiprocessing queue (a compact copy of a view, or a handle to shared
# memory) is tapegrad/_shared_memory.py's job; only multiprocessing's pickler uses it.
register_transport_reducers()

# How often (seconds) a waiting worker checks that its parent is still alive.
STATUS_CHECK_INTERVAL = 1.0

_worker_info = None


@dataclasses.dataclass(frozen=True, slots=True)
class WorkerInfo:
    """What `get_worker_info()` returns inside a worker: id, num_workers, seed, dataset (the
    worker's own copy).  Frozen, as PyTorch's dataclass: assigning a field is
    dataclasses.FrozenInstanceError.  rng and worker_method are PyTorch's optional fields
    (tapegrad's workers are processes)."""

    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str | None = "multiprocessing"


def get_worker_info():
    """In a DataLoader worker process: its WorkerInfo (id, num_workers, seed, dataset, the
    worker's own copy of the dataset).  In the main process: None."""
    return _worker_info


class IterableEnd:
    """Sent by a worker whose copy of an iterable-style dataset is exhausted."""

    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id


class _KeyErrorMessage(str):
    """KeyError's str() is the repr of its argument; this keeps the traceback's newlines."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process with its traceback text."""

    def __init__(self, exc_info, where: str) -> None:
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            # an exception type whose constructor does not take one message
            raise RuntimeError(msg) from None
        raise exception


def seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed this worker's random streams as PyTorch does: tapegrad's generator and `random` with
    base_seed + worker_id, numpy's global state with a hash of both."""
    from ..._random import manual_seed
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(4))
    return seed


def worker_loop(fetcher_factory, dataset, index_queue, result_queue, done_event, base_seed,
                init_fn, worker_id: int, num_workers: int, parent_pid: int) -> None:
    global _worker_info
    try:
        seed = seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        init_error = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = fetcher_factory()
        except Exception:
            init_error = ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id}")
        iterable_ended = False
        while True:
            try:
                message = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent_pid:      # the main process died: do not linger
                    return
                continue
            if message is None:
                return
            if done_event.is_set():
                continue                            # shutting down: drain without working
            if message[0] == "reset":               # a new epoch with persistent workers
                fetcher = fetcher_factory() if init_error is None else None
                iterable_ended = False
                continue
            epoch, task, index = message
            if init_error is not None:
                data, init_error = init_error, None
            elif iterable_ended:
                data = IterableEnd(worker_id)
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    iterable_ended = True
                    data = IterableEnd(worker_id)
                except Exception:
                    data = ExceptionWrapper(sys.exc_info(),
                                            f"in DataLoader worker process {worker_id}")
            result_queue.put((epoch, task, data))
            del data
    except KeyboardInterrupt:
        pass
    finally:
        if done_event.is_set():
            # results nobody will read must not keep this process alive at exit
            result_queue.cancel_join_thread()
        result_queue.close()
