"""Footprints, measured in fresh interpreters: import time and peak RSS of the MLP step.

Plain tests (no benchmark fixture): each prints its figures in the summary after the run (the
``bench_report`` fixture of conftest.py) and asserts only that the measurement worked, never a
time or a size.  Marked ``footprint``: ``pytest bench -m "not footprint"`` leaves them out.

import time   `python -c "import tapegrad"` vs `python -c "import numpy"` (and `-c pass`, the
              interpreter's own start-up), wall time of the whole subprocess, runs interleaved,
              median of 5 each (2 under --benchmark-disable).  tapegrad imports numpy, so the
              ratio is >= 1 by construction: it says what tapegrad adds on top.
peak RSS      10 MLP 784-256-10 SGD steps (batch 64, float32; tapegrad.bench.rss_probe) in a
              fresh interpreter per library: hand-written numpy (that process never imports
              tapegrad), tapegrad, and torch when installed (timed runs only).  The figure is the
              process's VmHWM, the high-water mark of its resident set; after setup (imports,
              data, model) and after the steps.  (Not ru_maxrss: on Linux a subprocess started by
              vfork + exec inherits its launcher's ru_maxrss when that is larger, here pytest's.)
Both footprints take the libraries as installed, from bytecode: numpy's .pyc files come with its
install; tapegrad's are compiled first (tapegrad.bench._ensure_bytecode), because a checkout run
with PYTHONDONTWRITEBYTECODE=1 would otherwise parse its sources in every probe (about 1 MiB more
peak heap, none of it the library's steady cost).
"""
from __future__ import annotations

import numpy as np
import pytest

from tapegrad import bench as B

pytestmark = pytest.mark.footprint


def test_import_time(bench_report, benchmark_disabled):
    repeat = 2 if benchmark_disabled else 5
    t = B.import_times(repeat=repeat)
    assert all(v > 0 for v in t.values())
    net = (t["tapegrad"] - t["python"]) / (t["numpy"] - t["python"])
    bench_report(f"import time (median of {repeat} fresh interpreters): python -c pass "
                 f"{t['python'] * 1e3:.0f} ms, import numpy {t['numpy'] * 1e3:.0f} ms, "
                 f"import tapegrad {t['tapegrad'] * 1e3:.0f} ms")
    bench_report(f"    tapegrad / numpy = {t['tapegrad'] / t['numpy']:.2f} (wall); "
                 f"{net:.2f} net of the interpreter's start-up")


def test_peak_rss_mlp_step(bench_report, benchmark_disabled):
    modes = ["numpy", "tapegrad"]
    if _have_torch() and not benchmark_disabled:
        modes.append("torch")
    steps = 10
    r = B.peak_rss(modes, steps=steps)
    # The probes did the same work: the weights after `steps` steps agree across libraries.
    for mode in modes[1:]:
        np.testing.assert_allclose(r[mode]["checksum"], r["numpy"]["checksum"], rtol=1e-5)
    assert all(r[m]["peak_kib"] >= r[m]["setup_kib"] > 0 for m in modes)

    def mib(kib):
        return f"{kib / 1024:.1f} MiB"

    bench_report(f"peak RSS (VmHWM), {steps} MLP 784-256-10 steps, one fresh interpreter each: "
                 + ";  ".join(f"{m} {mib(r[m]['peak_kib'])} (after setup {mib(r[m]['setup_kib'])})"
                              for m in modes))
    growth = {m: r[m]["peak_kib"] - r[m]["setup_kib"] for m in modes}
    line = (f"    tapegrad / numpy = {r['tapegrad']['peak_kib'] / r['numpy']['peak_kib']:.2f} "
            f"(peak); growth during the steps: "
            + ", ".join(f"{m} {mib(g)}" for m, g in growth.items()))
    if "torch" in r:
        line += f"; tapegrad / torch = {r['tapegrad']['peak_kib'] / r['torch']['peak_kib']:.2f}"
    bench_report(line)


def _have_torch() -> bool:
    try:
        import torch  # noqa: F401
    except Exception:
        return False
    return True
