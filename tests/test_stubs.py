"""The extension's type stub (tapegrad/_core.pyi) lists everything the compiled core exports."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_core_stub_is_current():
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_stubs.py"), "--check"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_package_ships_typing_markers():
    # The imported package: the source tree's, or the installed one when the tests run from a
    # copy (tools/test_installed.py), where the wheel must have shipped the marker.
    import tapegrad
    assert (Path(tapegrad.__file__).parent / "py.typed").exists()


# -- the public stubs (tools/gen_public_stubs.py) -----------------------------------------------
import ast  # noqa: E402
import importlib  # noqa: E402
import types  # noqa: E402

import pytest  # noqa: E402

# Modules whose namespace the compiled op families fill at run time: what a stub must not miss.
_DYNAMIC_MODULES = ("tapegrad", "tapegrad.nn", "tapegrad.nn.functional", "tapegrad.optim",
                    "tapegrad.autograd", "tapegrad.utils.data", "tapegrad.distributions")


@pytest.fixture(scope="module")
def public_stubs():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        gen = importlib.import_module("gen_public_stubs")
        return gen.render_all()
    finally:
        sys.path.remove(str(ROOT / "tools"))


def _stub_tree(module_name: str) -> ast.Module:
    module = importlib.import_module(module_name)
    return ast.parse(Path(module.__file__).with_suffix(".pyi").read_text())


def _stub_names(tree: ast.Module) -> set:
    """The names a stub exports: __all__, `import x as x` re-exports and its own definitions."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "__all__":
            names.update(ast.literal_eval(node.value))
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname for a in node.names if a.asname == a.name)
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    assert names, "stub has no __all__"
    return names


def _runtime_public_names(module) -> set:
    names = set()
    for name in dir(module):
        obj = getattr(module, name)
        if name.startswith("_"):
            continue
        if isinstance(obj, types.ModuleType):
            if obj.__name__ == f"{module.__name__}.{name}":
                names.add(name)
        elif getattr(obj, "__module__", "").startswith("tapegrad") or \
                type(obj).__module__.startswith("tapegrad"):
            names.add(name)
    return names


def test_public_stubs_are_current(public_stubs):
    stale = [str(p.relative_to(ROOT)) for p, text in public_stubs.items()
             if not p.exists() or p.read_text() != text]
    assert not stale, f"run python tools/gen_public_stubs.py: out of date {stale}"


@pytest.mark.parametrize("module_name", _DYNAMIC_MODULES)
def test_every_public_runtime_name_is_in_the_stubs(module_name):
    module = importlib.import_module(module_name)
    declared = _stub_names(_stub_tree(module_name))
    missing = _runtime_public_names(module) - declared
    assert not missing, f"{module_name}: names missing from the stub: {sorted(missing)}"
    extra = sorted(n for n in declared if not n.startswith("_") and not hasattr(module, n))
    assert not extra, f"{module_name}: the stub declares names the module lacks: {extra}"


def test_stub_tensor_has_every_runtime_member():
    import tapegrad
    tree = _stub_tree("tapegrad")
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    members = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            members.add(node.target.id)
    runtime = {n for n in dir(tapegrad.Tensor) if not n.startswith("_")}
    assert not runtime - members, f"Tensor members missing from the stub: {runtime - members}"


def test_typed_example_runs():
    """The typed example the type checkers read (tools/typecheck.sh) is a working script."""
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "typing" / "train_mlp.py")],
                         capture_output=True, text=True, cwd=ROOT,
                         # the inherited environment: under tools/asan.sh it carries LD_PRELOAD
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stderr
    assert "parameters, loss" in run.stdout
