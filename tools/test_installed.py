"""Run tapegrad's test suite against the INSTALLED package, from outside any source tree.

    python tools/test_installed.py [--project DIR] [PYTEST ARGS...]

Copies the project's tests/, tools/ (which tests call) and pyproject.toml (pytest's settings:
markers, warnings as errors) into a fresh temporary directory and runs pytest there. That
directory has no tapegrad/ and no src/, so every `import tapegrad`, in the tests and in the
subprocesses they start, finds the installed package; the script checks this before running.

Used by tools/wheel_check.sh (CI, on the repaired wheel) and by cibuildwheel's test-command
(pyproject.toml), so it is plain Python: it must also run on Windows.  DIR defaults to the
directory above this file (a source checkout or an unpacked sdist).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

COPIED = ("tests", "tools", "pyproject.toml")


def installed_tapegrad(cwd: Path) -> Path:
    """Where `import tapegrad` resolves when Python starts in cwd (a subprocess: no state here)."""
    out = subprocess.run([sys.executable, "-c", "import tapegrad; print(tapegrad.__file__)"],
                         cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"test_installed: tapegrad is not importable:\n{out.stderr}")
    return Path(out.stdout.strip()).resolve().parent


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the source checkout or unpacked sdist holding tests/ and tools/")
    args, pytest_args = parser.parse_known_args(argv)
    project = args.project.resolve()
    with tempfile.TemporaryDirectory(prefix="tapegrad-tests-") as tmp:
        work = Path(tmp)
        for name in COPIED:
            source = project / name
            if source.is_dir():
                shutil.copytree(source, work / name,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(source, work / name)
        package = installed_tapegrad(work)
        if project in package.parents:
            print(f"test_installed: tapegrad resolves to {package}, inside the source tree "
                  f"{project}: install the wheel, not the checkout", file=sys.stderr)
            return 1
        print(f"test_installed: testing {package} from {work}", flush=True)
        # -p no:cacheprovider: nothing is written next to the temporary copy.
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                               *pytest_args], cwd=work).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
