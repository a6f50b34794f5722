"""The extension's type stub (tapegrad/_core.pyi) lists everything the compiled core exports."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_core_stub_is_current():
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_stubs.py"), "--check"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_package_ships_typing_markers():
    assert (ROOT / "tapegrad" / "py.typed").exists()
