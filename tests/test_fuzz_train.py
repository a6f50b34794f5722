"""Smoke test of tools/fuzz_train.py: a few seeds of both modes (against PyTorch, and compiled
against eager tapegrad) show no float64 finding."""
import pathlib
import sys

import pytest

pytest.importorskip("torch")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tools"))
import fuzz_train  # noqa: E402

SEEDS = range(0, 20)


def _float64_findings(compiled):
    out = []
    for seed in SEEDS:
        p, findings = fuzz_train.check(seed, compiled)
        if findings and "float64" in p.lines[0]:
            out.append(f"{seed}: {findings[0]}")
    return out


def test_against_torch():
    assert _float64_findings(False) == []


def test_compiled_against_eager():
    assert _float64_findings(True) == []
