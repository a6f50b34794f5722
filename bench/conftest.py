"""Benchmark environment: one thread everywhere, and an optional PyTorch comparison.

Thread pinning.  The environment variables OMP_NUM_THREADS / OPENBLAS_NUM_THREADS /
MKL_NUM_THREADS are only read when a BLAS or OpenMP runtime first loads, which is usually before
this conftest runs (pytest plugins, or the test modules' imports, may already have imported numpy).
So this file does what still works at this point:

* sets those variables with ``os.environ.setdefault`` (effective for anything that has not been
  loaded yet, e.g. torch when it is imported below, and for any subprocess);
* limits already-loaded BLAS/OpenMP pools with ``threadpoolctl`` when it is installed, and
  otherwise numpy's OpenBLAS through its own ``openblas_set_num_threads`` (ctypes;
  ``tapegrad.bench.limit_threads``);
* calls ``torch.set_num_threads(1)`` (and ``set_num_interop_threads(1)``) when torch imports.

For a fully pinned run independent of import order, export the variables in the shell:
``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 pytest bench``.
The settings in effect are recorded in the benchmark's machine_info (``--benchmark-json``).

PyTorch.  Use the ``torch`` fixture in a benchmark that needs PyTorch: it returns the module, or
skips the benchmark cleanly when torch is not importable.  ``HAVE_TORCH`` is the same as a flag.

Reporting.  Every benchmark's extra_info gets ``blas`` and ``threads`` (autouse fixture below).
After the timing tables, a summary prints per workload the medians of each kind (numpy, record,
sweep, total, torch: from extra_info ``kind``/``workload``), µs per op where ``n_ops`` is known,
and the ratios; then the lines that plain tests handed to the ``bench_report`` fixture (import
time, peak RSS).
"""
from __future__ import annotations

import os
import sys

import pytest

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
_NUMPY_ALREADY_IMPORTED = "numpy" in sys.modules
for _var in _THREAD_VARS:
    os.environ.setdefault(_var, "1")

# Limit pools that are already loaded (numpy's BLAS, OpenMP).  Keep the limiter object alive for
# the whole session: threadpool_limits restores the old limits when it is garbage collected.
try:
    from threadpoolctl import threadpool_limits as _threadpool_limits
except Exception:  # pragma: no cover - depends on the machine
    _THREADPOOL_LIMITER = None
    THREADPOOLCTL = "not installed"        # completed below (OpenBLAS limited through ctypes)
else:
    _THREADPOOL_LIMITER = _threadpool_limits(limits=1)
    THREADPOOLCTL = "limits=1"

try:  # PyTorch is an optional comparison; its benchmarks skip cleanly without it.
    import torch as _torch
except Exception:  # pragma: no cover - depends on the machine
    _torch = None
else:
    _torch.set_num_threads(1)
    try:
        _torch.set_num_interop_threads(1)
    except RuntimeError:  # already set, or parallel work has already started
        pass

HAVE_TORCH = _torch is not None

from tapegrad import bench as _tgbench  # noqa: E402  (after torch, so BLAS info includes it)

if _THREADPOOL_LIMITER is None:
    # Without threadpoolctl, numpy's already-loaded OpenBLAS would keep its default pool (one
    # thread per core): limit it through OpenBLAS's own openblas_set_num_threads instead.
    THREADPOOLCTL = f"not installed; numpy's BLAS limited with {_tgbench.limit_threads(1)}"
_BLAS = _tgbench.blas_info()
_REPORT_KEY = pytest.StashKey[list]()


def pytest_configure(config):
    config.addinivalue_line("markers", "footprint: import-time and peak-RSS measurements "
                                       "(subprocesses; deselect with -m 'not footprint')")
    config.stash[_REPORT_KEY] = []


@pytest.fixture(autouse=True)
def _record_environment(request):
    """Every benchmark records the BLAS in use and the thread settings in its extra_info."""
    if "benchmark" in request.fixturenames:
        benchmark = request.getfixturevalue("benchmark")
        benchmark.extra_info["blas"] = _tgbench.blas_line(_BLAS)
        benchmark.extra_info["threads"] = {
            **_tgbench.thread_env(), "threadpoolctl": THREADPOOLCTL,
            "torch": _torch.get_num_threads() if _torch is not None else None}
    yield


@pytest.fixture
def bench_report(request):
    """Call with a line of text: printed in the summary after the run (not captured)."""
    return request.config.stash[_REPORT_KEY].append


@pytest.fixture(scope="session")
def benchmark_disabled(request) -> bool:
    """True under --benchmark-disable (the smoke test): footprint tests take fewer samples."""
    return bool(request.config.getoption("benchmark_disable", False))


@pytest.fixture(scope="session")
def torch():
    """The torch module; skips the benchmark when PyTorch is not installed."""
    if _torch is None:
        pytest.skip("torch is not installed")
    return _torch


def pytest_benchmark_update_machine_info(config, machine_info):
    """Record the thread settings and library versions next to the timings."""
    import numpy

    info = {
        "env": {v: os.environ.get(v) for v in _THREAD_VARS},
        "numpy_imported_before_conftest": _NUMPY_ALREADY_IMPORTED,
        "threadpoolctl": THREADPOOLCTL,
        "numpy": numpy.__version__,
        "blas": _BLAS,
    }
    try:
        import tapegrad

        info["tapegrad"] = f"{tapegrad.__version__} ({os.path.dirname(tapegrad.__file__)})"
    except Exception as e:  # pragma: no cover - reported, not fatal
        info["tapegrad"] = f"import failed: {e!r}"
    if _torch is not None:
        info["torch"] = _torch.__version__
        info["torch_num_threads"] = _torch.get_num_threads()
        info["torch_num_interop_threads"] = _torch.get_num_interop_threads()
    machine_info["tapegrad_bench"] = info


def pytest_report_header(config):
    torch_line = (f"torch {_torch.__version__}, {_torch.get_num_threads()} thread(s)"
                  if _torch is not None else "torch not installed: torch benchmarks skip")
    return [f"bench: threads pinned to 1 (threadpoolctl: {THREADPOOLCTL}); {torch_line}",
            f"bench: BLAS {_tgbench.blas_line(_BLAS)}"]


@pytest.hookimpl(trylast=True)      # after pytest-benchmark's tables
def pytest_terminal_summary(terminalreporter, config):
    """After the timing tables: per workload, the medians of each kind and the headline ratios.

    Reads the benchmarks that ran (tagged with extra_info kind/workload, and n_ops for chains).
    Nothing timed is printed with --benchmark-disable; the bench_report lines print regardless.
    """
    session = getattr(config, "_benchmarksession", None)    # pytest-benchmark's session object
    runs = [b for b in getattr(session, "benchmarks", None) or [] if b]    # falsy: no timings
    table: dict[str, dict[str, float]] = {}
    n_ops: dict[str, int | None] = {}
    for b in runs:
        info = getattr(b, "extra_info", None) or {}
        if "kind" not in info or "workload" not in info:
            continue
        table.setdefault(info["workload"], {})[info["kind"]] = b.stats.median
        n_ops[info["workload"]] = info.get("n_ops")
    tr = terminalreporter
    if table:
        tr.write_sep("-", "tapegrad summary (medians; ratios < 1: tapegrad faster)")
        width = max(len(w) for w in table)
        for wl, med in table.items():
            times = "  ".join(f"{k} {_us(v)}" for k, v in med.items())
            line = f"{wl:<{width}}  us: {times}"
            if n_ops[wl]:
                line += "   us/op: " + "  ".join(f"{k} {v / n_ops[wl] * 1e6:.3g}"
                                                for k, v in med.items())
            tr.write_line(line)
            ratios = []
            if "total" in med:
                for other in ("numpy", "torch"):
                    if other in med:
                        ratios.append(f"tapegrad total / {other} = "
                                      f"{med['total'] / med[other]:.2f}")
                if "replay" in med:
                    for other in ("total", "torch"):
                        if other in med:
                            ratios.append(f"replay / {'eager' if other == 'total' else other} = "
                                          f"{med['replay'] / med[other]:.3f}")
                    if "capture" in med:
                        ratios.append(f"capture / eager = {med['capture'] / med['total']:.2f}")
                if "record" in med and "sweep" in med:
                    ratios.append(f"(record + sweep) / total = "
                                  f"{(med['record'] + med['sweep']) / med['total']:.2f}")
            if "hvp" in med and "grad" in med:          # bench/test_hvp.py
                ratios.append(f"tapegrad hvp / grad = {med['hvp'] / med['grad']:.2f}")
                if "torch" in med and "torch grad" in med:
                    ratios.append(f"torch hvp / grad = {med['torch'] / med['torch grad']:.2f}")
                    ratios.append(f"tapegrad hvp / torch hvp = {med['hvp'] / med['torch']:.2f}")
            if ratios:
                tr.write_line(" " * width + "  " + ";  ".join(ratios))
    lines = config.stash.get(_REPORT_KEY, [])
    if lines:
        tr.write_sep("-", "tapegrad footprint")
        for line in lines:
            tr.write_line(line)
        tr.write_line(f"BLAS: {_tgbench.blas_line(_BLAS)}")


def _us(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:,.0f}" if us >= 100 else f"{us:.3g}"
