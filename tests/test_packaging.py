"""The installed distribution's metadata tells the truth (issue 18): one version everywhere, the
licences declared (SPDX) and shipped.  Skips when tapegrad runs from a source tree that is not
installed (no metadata); CI checks both an editable install and the repaired wheel
(tools/wheel_check.sh)."""
import importlib.metadata
import subprocess
import sys

import pytest

import tapegrad


def _distribution() -> importlib.metadata.Distribution:
    try:
        return importlib.metadata.distribution("tapegrad")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("tapegrad is not installed: no distribution metadata to check")


def test_one_version_everywhere():
    dist = _distribution()
    cli = subprocess.run([sys.executable, "-m", "tapegrad", "--version"], capture_output=True,
                         text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    assert tapegrad.version.tapegrad_version == dist.version
    # the PyTorch API version, labelled with the package's (docs/differences.md)
    assert tapegrad.__version__ == tapegrad.version.__version__ == \
        f"{tapegrad.version.torch_api_version}+tapegrad.{dist.version}"
    assert cli.stdout.strip() == f"tapegrad {dist.version}"


def test_licences_are_declared_and_shipped():
    dist = _distribution()
    # The code is MIT; the bundled digits (tapegrad/data/digits.csv.gz) are CC BY 4.0.
    assert dist.metadata["License-Expression"] == "MIT AND CC-BY-4.0"
    assert sorted(dist.metadata.get_all("License-File")) == ["LICENSE", "LICENSE-DATA"]
    shipped = {f.name: f for f in dist.files or () if f.name in ("LICENSE", "LICENSE-DATA")}
    assert set(shipped) == {"LICENSE", "LICENSE-DATA"}, dist.files
    data_licence = shipped["LICENSE-DATA"].read_text()
    assert "digits.csv.gz" in data_licence and "CC BY 4.0" in data_licence


def test_requirements_match_what_ci_tests():
    dist = _distribution()
    # numpy 1.26 casts by value (float32 means came back float64): numpy 2 is the floor.
    assert "numpy>=2.0" in dist.requires
    assert dist.metadata["Requires-Python"] == ">=3.10"


def test_import_loads_no_command_modules():
    # The CLI's commands (demo, bench: a 1,000-line harness kept in the package for
    # `python -m tapegrad bench`) load on use only: `import tapegrad` stays close to numpy's.
    probe = ("import sys, tapegrad; "
             "print(sorted(m for m in sys.modules if m in ('tapegrad.bench', 'tapegrad.demo', "
             "'tapegrad.demo_chars', 'tapegrad.examples', 'torch')))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
