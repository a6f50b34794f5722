"""The DataLoader iterator that loads batches in worker processes (num_workers > 0).

The main process walks the index sampler and hands the indices out round-robin, keeping at most
`prefetch_factor` tasks outstanding per worker; results come back on one queue, possibly out of
order, and are yielded in task order (unless in_order=False), so the batches equal those of
num_workers=0.  For an
iterable-style dataset every worker iterates its own copy and the batches interleave worker by
worker (PyTorch's behaviour: without get_worker_info() the data is duplicated).

Workers end when the epoch ends (unless persistent_workers), when an exception propagates, and
when the iterator is garbage collected (a `break` out of the loop): nothing is left running.
"""
from __future__ import annotations as _annotations

import itertools
import multiprocessing
import os
import queue
import sys
import weakref

from ..._torch_names import object_repr as _object_repr
from . import _worker

# Seconds between checks that the workers are alive while waiting without a timeout.
_STATUS_CHECK_INTERVAL = 0.5
# Seconds a worker gets to exit after being told to, before it is terminated.
_JOIN_TIMEOUT = 5.0


def _context(spec):
    """The multiprocessing context: the loader's, else 'fork' on Linux (PyTorch's default there:
    the dataset need not be picklable), else the platform default."""
    if spec is None:
        if sys.platform.startswith("linux"):
            return multiprocessing.get_context("fork")
        return multiprocessing.get_context()
    if isinstance(spec, str):
        return multiprocessing.get_context(spec)
    return spec


class _MultiProcessingDataLoaderIter:

    def __repr__(self) -> str:
        return _object_repr(self, "tapegrad.utils.data.dataloader")  # PyTorch's class lives there

    def __init__(self, loader, base_seed: int) -> None:
        self._loader = loader
        self._base_seed = base_seed
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._iterable = loader._iterable
        self._in_order = loader.in_order
        self._epoch = 0
        ctx = _context(loader.multiprocessing_context)
        self._pool = _WorkerPool(ctx, loader, base_seed)
        # A weakref callback, not __del__: when the iterator dies in a reference cycle (the
        # loader keeps its persistent iterator), callbacks run before any object of the cycle
        # is finalized, so the queues are still open to tell the workers to exit.
        self._finalizer = weakref.finalize(self, self._pool.shutdown)
        self._index_queues = self._pool.index_queues
        self._result_queue = self._pool.result_queue
        self._workers = self._pool.workers
        self._start_epoch()

    # -- epochs -------------------------------------------------------------------------------
    def _start_epoch(self) -> None:
        self._sampler_iter = self._loader._index_stream()
        self._send_idx = 0           # next task number to hand out
        self._rcvd_idx = 0           # next task number to yield
        self._task_info = {}         # task -> [worker] while outstanding, [worker, data] if early
        self._tasks_outstanding = 0
        self._worker_active = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _reset(self) -> None:
        """A new epoch on the same (persistent) workers."""
        self._epoch += 1             # results of an abandoned epoch still queued are dropped
        for q in self._index_queues:
            q.put(("reset",))
        self._start_epoch()

    def _try_put_index(self) -> None:
        if self._tasks_outstanding >= self._prefetch_factor * self._num_workers:
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker = next(self._worker_cycle)
            if self._worker_active[worker]:
                break
        else:
            return
        self._index_queues[worker].put((self._epoch, self._send_idx, index))
        self._task_info[self._send_idx] = [worker]
        self._tasks_outstanding += 1
        self._send_idx += 1

    # -- results ------------------------------------------------------------------------------
    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self):
        while True:
            # skip tasks of iterable workers that have run out
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._worker_active[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process(info[1])
            epoch, task, data = self._get_result()
            if epoch != self._epoch:
                continue
            self._tasks_outstanding -= 1
            if isinstance(data, _worker.IterableEnd):
                self._worker_active[data.worker_id] = False
                self._task_info.pop(task, None)
                self._try_put_index()
                continue
            if task != self._rcvd_idx:
                if not self._in_order:
                    # in_order=False: yield what arrives; its entry's absence lets the loop
                    # above skip the task when rcvd_idx reaches it
                    del self._task_info[task]
                    return self._process(data)
                self._task_info[task].append(data)
                continue
            del self._task_info[task]
            self._rcvd_idx += 1
            return self._process(data)

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            self._shutdown_workers()
            data.reraise()
        return data

    def _get_result(self):
        if self._timeout > 0:
            try:
                return self._result_queue.get(timeout=self._timeout)
            except queue.Empty:
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None
        while True:
            try:
                return self._result_queue.get(timeout=_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                dead = [w for w in self._workers if not w.is_alive()]
                if dead:
                    pids = ", ".join(str(w.pid) for w in dead)
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited "
                                       "unexpectedly") from None

    def _shutdown_workers(self) -> None:
        self._finalizer()


class _WorkerPool:
    """The worker processes of one iterator and their queues."""

    def __init__(self, ctx, loader, base_seed: int) -> None:
        self.workers = []
        self.index_queues = []
        self.result_queue = ctx.Queue()
        self.done_event = ctx.Event()
        self.closed = False
        factory = loader._fetcher_factory()
        try:
            for worker_id in range(loader.num_workers):
                index_queue = ctx.Queue()
                index_queue.cancel_join_thread()    # never block exit on indices nobody reads
                w = ctx.Process(
                    target=_worker.worker_loop,
                    args=(factory, loader.dataset, index_queue, self.result_queue,
                          self.done_event, base_seed, loader.worker_init_fn, worker_id,
                          loader.num_workers, os.getpid()),
                    daemon=True)
                w.start()
                self.index_queues.append(index_queue)
                self.workers.append(w)
        except BaseException:
            self.shutdown()
            raise

    def shutdown(self) -> None:
        if self.closed:
            return
        self.closed = True
        if any(w._parent_pid != os.getpid() for w in self.workers):
            return                   # a forked child inherited this pool: the parent owns it
        self.done_event.set()
        for q in self.index_queues:
            q.put(None)
        for w in self.workers:
            w.join(timeout=_JOIN_TIMEOUT)
            if w.is_alive():
                w.terminate()
                w.join(timeout=_JOIN_TIMEOUT)
        for q in self.index_queues:
            q.close()
        self.result_queue.cancel_join_thread()
        self.result_queue.close()
