"""The corpus of PyTorch-style scripts (tools/corpus/) run under tapegrad, and the runner's parts.

The per-script tests are marked `corpus` and are left out of the default run (pyproject's addopts
has `-m "not corpus"`): the whole corpus takes minutes.  Select them with

    python -m pytest tests/test_corpus.py -m corpus -q

Each compares a script's output under tapegrad with PyTorch's output cached in
tools/corpus/expected/ (so no PyTorch is needed).  The runner's comparison rules and its import
hook are tested by the fast, default tests below.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("run_corpus", ROOT / "tools" / "run_corpus.py")
run_corpus = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("run_corpus", run_corpus)  # dataclasses look their module up there
_spec.loader.exec_module(run_corpus)

_STATUS = run_corpus.json.loads(run_corpus.STATUS_FILE.read_text()) if run_corpus.STATUS_FILE.exists() else {}
SCRIPTS = run_corpus.corpus_scripts()


@pytest.mark.corpus
@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_script_prints_what_pytorch_prints(script):
    expected = run_corpus.load_expected(script.stem, _STATUS)
    assert expected is not None, f"no cached PyTorch output for {script.stem}: run tools/run_corpus.py --regen"
    actual = run_corpus.run_script(script, use_tapegrad=True)
    ok, why = run_corpus.compare(expected, actual)
    assert ok, why


def test_every_script_has_a_cached_pytorch_output():
    assert len(SCRIPTS) >= 40
    missing = [s.stem for s in SCRIPTS if run_corpus.load_expected(s.stem, _STATUS) is None]
    assert not missing


def test_pytorch_ran_every_script_cleanly():
    # The cache is the specification: a script that failed under PyTorch measures nothing.
    assert [name for name, info in _STATUS.items() if info["returncode"] != 0] == []


# --- the comparison rules ---------------------------------------------------------------------

@pytest.mark.parametrize("expected, actual", [
    ("loss: 0.1234", "loss: 0.1235"),                      # one unit in the last printed digit
    ("tensor([1.0000, 2.5000])", "tensor([1.0000, 2.5001])"),
    ("2.4425110816955566", "2.442511796951294"),            # float32 summation order
    ("y = -0.000 x", "y = 0.000 x"),                        # the sign of a rounded zero
    ("1e-05", "1.0001e-05"),
    ("torch.Size([3, 4])", "torch.Size([3, 4])"),
    ("nan inf", "nan inf"),
])
def test_lines_that_match(expected, actual):
    assert run_corpus.lines_match(expected, actual)


@pytest.mark.parametrize("expected, actual", [
    ("loss: 0.1234", "loss: 0.1240"),                      # beyond tolerance
    ("torch.Size([3, 4])", "torch.Size([3, 5])"),          # integers are exact
    ("tensor([1., 2.])", "tensor([1., 2.], dtype=torch.float64)"),
    ("accuracy: True", "accuracy: False"),
    ("tensor([1, 2])", "tensor([1, 2, 3])"),
    ("nan", "1.0"),
    ("torch.float32", "torch.float64"),
])
def test_lines_that_differ(expected, actual):
    assert not run_corpus.lines_match(expected, actual)


def test_first_difference_reports_missing_lines():
    assert run_corpus.first_difference("a\nb\n", "a\nb\n") is None
    assert run_corpus.first_difference("a\nb\n", "a\n") == (2, "b", "<end of output>")


def test_compare_checks_the_exception_before_the_output():
    ok = run_corpus.Outcome("x\n", 0, None, 1.0)
    raised = run_corpus.Outcome("x\n", 1, "AttributeError", 1.0, "AttributeError: no attribute 'device'")
    assert run_corpus.compare(ok, ok) == (True, "")
    passed, why = run_corpus.compare(ok, raised)
    assert not passed and "AttributeError" in why and "after 1 of 1 lines" in why
    assert run_corpus.compare(raised, raised)[0]


def test_exception_type_is_read_from_the_traceback():
    stderr = "Traceback (most recent call last):\n  File \"x.py\", line 1\ntorch.OutOfMemoryError: boom\n"
    assert run_corpus._exception_type(stderr) == "OutOfMemoryError"
    assert run_corpus._exception_type("warning only\n") is None


# --- the import hook --------------------------------------------------------------------------

def _run_under_hook(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    script = tmp_path / "probe.py"
    script.write_text(code)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                          env={**run_corpus.os.environ,
                               "PYTHONPATH": f"{run_corpus.HOOK_DIR}{run_corpus.os.pathsep}{ROOT}"})


def test_hook_maps_torch_and_its_submodules_to_tapegrad(tmp_path):
    proc = _run_under_hook(
        "import torch\nimport torch.nn as nn\nfrom torch.nn import functional as F\n"
        "from torch.utils.data import DataLoader\nimport tapegrad\n"
        "print(torch is tapegrad, nn is tapegrad.nn, F is tapegrad.nn.functional, torch.nn is nn)\n"
        "print(DataLoader.__module__.split('.')[0])\n", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True", "True", "True", "tapegrad"]


def test_hook_reports_a_missing_submodule_under_its_torch_name(tmp_path):
    proc = _run_under_hook("import torch.no_such_module\n", tmp_path)
    assert proc.returncode == 1
    assert "ModuleNotFoundError: No module named 'torch.no_such_module'" in proc.stderr
