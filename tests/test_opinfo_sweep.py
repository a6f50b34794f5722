"""Smoke test of tools/opinfo_sweep.py: PyTorch's own OpInfo samples for ~20 common ops replay
against tapegrad with no difference (values, dtypes, shapes, requires_grad, gradients, the
method and in-place variants).  The tool runs in a subprocess: importing torch's op_db freezes
torch.backends' global flags (common_utils calls disable_global_flags), which must not leak
into other tests."""
import importlib.util
import json
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

_ROOT = pathlib.Path(__file__).resolve().parent.parent
_TOOL = _ROOT / "tools" / "opinfo_sweep.py"
_OPS = ("add", "mul", "sub", "sum", "mean", "softmax", "matmul", "cat", "stack", "gather",
        "index_select", "where", "clamp", "exp", "abs", "neg", "transpose", "reshape", "expand",
        "max.reduction_with_dim", "argmax", "nn.functional.relu")

# runs the tool's main() with tapegrad (this checkout's) optionally perturbed first
_DRIVER = """
import runpy, sys
sys.path.insert(0, {root!r})
import tapegrad
if {perturb!r}:
    orig = tapegrad.exp
    tapegrad.exp = lambda *a, **k: orig(*a, **k) * 1.001
sys.argv = ["opinfo_sweep.py"] + {argv!r}
runpy.run_path({tool!r}, run_name="__main__")
"""


def _run(tmp_path, argv, perturb=False):
    if importlib.util.find_spec("torch.testing._internal.common_methods_invocations") is None:
        pytest.skip("torch's OpInfo database is not installed")      # (not imported here)
    if importlib.util.find_spec("expecttest") is None:
        pytest.skip("torch's OpInfo database needs the expecttest package")
    out = tmp_path / "res.json"
    code = _DRIVER.format(root=str(_ROOT), perturb=perturb, tool=str(_TOOL),
                          argv=argv + ["--json", str(out)])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600)
    assert out.exists(), proc.stderr[-2000:]
    return proc, json.loads(out.read_text())


def test_common_ops_replay_without_differences(tmp_path):
    only = "^(%s)$" % "|".join(n.replace(".", r"\.") for n in _OPS)
    proc, res = _run(tmp_path, ["--only", only, "--dtypes", "float64,int64",
                                "--max-samples", "12", "--timeout", "10", "--op-timeout", "30"])
    assert res["stats"]["resolved"] == len(_OPS), res["stats"]
    assert res["stats"]["samples"] > 200
    assert res["diffs"] == [], proc.stdout[-3000:]
    assert proc.returncode == 0


def test_the_sweep_sees_a_wrong_value(tmp_path):
    # a sweep that cannot fail proves nothing: a perturbed op must show up as value and grad
    proc, res = _run(tmp_path, ["--only", "^exp$", "--dtypes", "float64", "--no-variants"],
                     perturb=True)
    kinds = {d["kind"] for d in res["diffs"]}
    assert {"value", "grad"} <= kinds
    assert proc.returncode == 1
