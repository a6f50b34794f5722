"""torch.set_num_threads and friends: the size of the CPU thread pools.

tapegrad's parallel work happens in its C kernels' thread pool (elementwise ops and their
gradients on big arrays; default size: OMP_NUM_THREADS, else the cores available) and inside
numpy's BLAS.  set_num_threads sizes the kernels' pool and, when threadpoolctl is importable, limits
the BLAS/OpenMP pools through it; otherwise numpy's pools keep their size (set OMP_NUM_THREADS /
OPENBLAS_NUM_THREADS before starting Python for that).  tapegrad has no inter-op pool: its size is
recorded only.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import os

from . import _core


def _available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_num_interop_threads = None
_limiter = None     # the threadpoolctl limiter in force (kept alive so the limit stays)


def _check_count(fn: str, n) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"{fn} expects an int, but got {_type_name(n)}")
    if n <= 0:
        raise RuntimeError(f"{fn} expects a positive integer")
    return n


def init_num_threads() -> None:
    """Initialise the intra-op pool's size for this thread (PyTorch calls it from a new thread
    before parallel work): tapegrad's pool is sized when first used, so there is nothing to do."""
    return None


def get_num_threads() -> int:
    """The number of threads used for intra-op parallelism (the C kernels' pool, BLAS): the value
    last given to ``set_num_threads``, else ``OMP_NUM_THREADS``, else the number of cores available
    to the process.
    """
    return _core._kernel_threads()


def set_num_threads(n: int) -> None:
    """Set the number of threads for intra-op parallelism (a positive int): the C kernels' pool,
    and the BLAS and OpenMP pools through ``threadpoolctl`` when it is installed (otherwise set
    ``OMP_NUM_THREADS`` before starting Python for those).  Results do not depend on it.
    """
    global _limiter
    n = _check_count("set_num_threads", n)
    _core._capture_setting("the thread count (set_num_threads)")
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = None
    if threadpool_limits is not None:
        _limiter = threadpool_limits(limits=n)
    _core._kernel_threads(n)


def get_num_interop_threads() -> int:
    """The number of inter-op threads: the value set once by ``set_num_interop_threads``, else the
    number of cores available. tapegrad runs ops one at a time; the value is recorded only.
    """
    return _available_cores() if _num_interop_threads is None else _num_interop_threads


def set_num_interop_threads(n: int) -> None:
    """Settable once, as in PyTorch (its pool starts with the first parallel work)."""
    global _num_interop_threads
    n = _check_count("set_num_interop_threads", n)
    if _num_interop_threads is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has "
                           "started or set_num_interop_threads called")
    _num_interop_threads = n
