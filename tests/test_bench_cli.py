"""`python -m tapegrad bench`: the short benchmark runs and prints its table (no timing checks)."""
import os
import subprocess
import sys

import tapegrad
from tapegrad import bench

ROWS = ("chain 300 ops, size 1,", "chain 300 ops, size 4096,", "wide graph 20x50 ops",
        "MLP 784-256-10 SGD step", "poly fit of sin", "hand-written Adam step",
        "eval metrics, (64, 10)", "Hessian-vector product, tanh/exp")


def _env():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(tapegrad.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def _parse_table(text: str) -> dict[str, list[str]]:
    """Row label -> the cells after it (numpy, tapegrad, torch, ratios, us/op, rounds)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("workload"))
    rows = {}
    for line in lines[start + 2:]:
        if not line.strip():
            break
        label, cells = line[:46].strip(), line[46:].split()
        rows[label] = cells
    return rows


def test_quick_run_prints_every_workload_row():
    run = subprocess.run([sys.executable, "-m", "tapegrad", "bench", "--quick"],
                         capture_output=True, text=True, env=_env(), timeout=300)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "BLAS: numpy" in out and "threads: 1" in out
    header = next(line for line in out.splitlines() if line.startswith("workload"))
    for column in ("numpy us", "tapegrad us", "torch us", "tg/numpy", "tg/torch"):
        assert column in header
    rows = _parse_table(out)
    assert len(rows) == len(ROWS)
    for prefix in ROWS:
        label = next((r for r in rows if r.startswith(prefix)), None)
        assert label is not None, f"no row for {prefix!r} in:\n{out}"
        cells = rows[label]
        assert len(cells) == 7, cells
        numpy_us, tapegrad_us, torch_us, tg_numpy = cells[:4]
        assert float(numpy_us.replace(",", "")) > 0 and float(tapegrad_us.replace(",", "")) > 0
        assert float(tg_numpy) > 0
        assert cells[6] == "10"                        # --quick: 10 timed rounds
        try:
            import torch  # noqa: F401
        except ImportError:
            assert torch_us == "-" and cells[4] == "-"
        else:
            assert float(torch_us.replace(",", "")) > 0 and float(cells[4]) > 0


def test_options_repeat_and_no_torch():
    run = subprocess.run([sys.executable, "-m", "tapegrad", "bench", "--quick", "--repeat", "3",
                          "--no-torch"], capture_output=True, text=True, env=_env(), timeout=300)
    assert run.returncode == 0, run.stderr
    rows = _parse_table(run.stdout)
    assert len(rows) == len(ROWS)
    assert all(cells[2] == "-" and cells[6] == "3" for cells in rows.values())
    bad = subprocess.run([sys.executable, "-m", "tapegrad", "bench", "--repeat", "0"],
                         capture_output=True, text=True, env=_env())
    assert bad.returncode == 2 and "--repeat" in bad.stderr


def test_workload_checks_hold_in_process():
    """The checks the command runs before timing (tapegrad vs the numpy references)."""
    for label, n_ops, make, check in bench.cli_workloads({"tapegrad": tapegrad}):
        check()
        ways = make()
        assert set(ways) - {"tapegrad grad"} == {"numpy", "tapegrad"}   # the hvp row: grad too
        medians, rounds = bench.time_contenders(ways, repeat=2, budget=0.0, warmup=1)
        assert rounds == 2 and all(m > 0 for m in medians.values())
