"""torch.__config__: what this tapegrad was built with and how it runs in parallel.

Scripts print ``torch.__config__.show()`` and ``torch.__config__.parallel_info()`` in their
environment cells.  PyTorch reports its C++ build; tapegrad reports its own: the interpreter and
numpy (whose BLAS computes its matrix products), the SIMD level its C kernels dispatch to, and
its thread pool.
"""
from __future__ import annotations as _annotations

import os
import platform

__all__ = ["show", "parallel_info"]


def _blas() -> str:
    """numpy's BLAS as numpy describes its build ('unknown' where it cannot say)."""
    import numpy as np
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    except Exception:           # numpy < 1.26 prints its configuration only
        return "unknown"
    return f"{blas.get('name', 'unknown')} {blas.get('version', '')}".strip()


def show() -> str:
    """A human-readable description of how tapegrad was built and what it computes with."""
    import numpy as np
    from . import __version__
    from .backends.cpu import get_cpu_capability
    lines = ["tapegrad built with:",
             f"  - tapegrad {__version__} (Cython extension modules, no C++ library)",
             f"  - Python {platform.python_version()} ({platform.python_implementation()}, "
             f"{platform.python_compiler()})",
             f"  - numpy {np.__version__}",
             f"  - BLAS: {_blas()} (numpy's)",
             "  - LAPACK is enabled (numpy's)",
             f"  - CPU capability usage: {get_cpu_capability()}",
             "  - Devices: CPU only (no CUDA, MPS or XPU)",
             "  - Parallel backend: tapegrad's C kernels' thread pool", ""]
    return "\n".join(lines)


def parallel_info() -> str:
    """The thread pools' sizes and the environment variables that set them."""
    from ._threads import get_num_interop_threads, get_num_threads
    lines = ["tapegrad/Parallel:",
             f"\tget_num_threads() : {get_num_threads()}",
             f"\tget_num_interop_threads() : {get_num_interop_threads()}",
             f"numpy BLAS: {_blas()}",
             f"os.cpu_count() : {os.cpu_count()}",
             "Environment variables:"]
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        lines.append(f"\t{name} : {os.environ.get(name, '[not set]')}")
    lines.append("tapegrad parallel backend: its C kernels' thread pool")
    return "\n".join(lines) + "\n"
