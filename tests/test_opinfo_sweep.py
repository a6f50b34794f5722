"""Smoke test of tools/opinfo_sweep.py: PyTorch's own OpInfo samples for ~20 common ops replay
against tapegrad with no difference (values, dtypes, shapes, requires_grad, gradients, the
method and in-place variants)."""
import importlib.util
import pathlib

import pytest

torch = pytest.importorskip("torch")

_TOOL = pathlib.Path(__file__).resolve().parent.parent / "tools" / "opinfo_sweep.py"
_OPS = ("add", "mul", "sub", "sum", "mean", "softmax", "matmul", "cat", "stack", "gather",
        "index_select", "where", "clamp", "exp", "abs", "neg", "transpose", "reshape", "expand",
        "max.reduction_with_dim", "argmax", "nn.functional.relu")


def _tool():
    spec = importlib.util.spec_from_file_location("opinfo_sweep", _TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_common_ops_replay_without_differences():
    pytest.importorskip("torch.testing._internal.common_methods_invocations")
    tool = _tool()
    only = "^(%s)$" % "|".join(n.replace(".", r"\.") for n in _OPS)
    res = tool.sweep(only=only, dtypes=("float64", "int64"), out=None,
                     per_sample_timeout=10.0, per_op_timeout=30.0, max_samples=12)
    assert res["stats"]["resolved"] == len(_OPS), res["stats"]
    assert res["stats"]["samples"] > 200
    assert res["diffs"] == []


def test_the_sweep_sees_a_wrong_value(monkeypatch):
    # a sweep that cannot fail proves nothing: a perturbed op must show up as value and grad
    pytest.importorskip("torch.testing._internal.common_methods_invocations")
    import tapegrad
    tool = _tool()
    orig = tapegrad.exp
    monkeypatch.setattr(tapegrad, "exp", lambda *a, **k: orig(*a, **k) * 1.001)
    res = tool.sweep(only="^exp$", dtypes=("float64",), variants=False, out=None)
    kinds = {d["kind"] for d in res["diffs"]}
    assert {"value", "grad"} <= kinds
