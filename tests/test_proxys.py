"""Held-out script idioms found by the proxys run (PyTorch is the oracle)."""
import subprocess
import sys

import pytest


@pytest.mark.parametrize("library", ["torch", "tapegrad"])
def test_stdlib_submodules_reachable_after_import(library):
    # PyTorch's spatial-transformer tutorial writes `import urllib` and then calls
    # `urllib.request.build_opener()`, which works because `import torch` loaded urllib.request.
    if library == "torch":
        pytest.importorskip("torch")
    code = (f"import {library}\n"
            "import urllib, importlib\n"
            "opener = urllib.request.build_opener()\n"
            "print(type(opener).__name__, callable(importlib.metadata.version))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["OpenerDirector", "True"]
