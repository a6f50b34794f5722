"""`import tapegrad` loads what the op families need and leaves the rest to first use (PEP 562
tables in tapegrad/__init__.py and tapegrad/autograd/__init__.py, tapegrad/_lazy.py), while every
public name still resolves: each name of each stub's __all__, each table entry, dir().

The probes run in fresh interpreters: in this process other tests have loaded everything already.
"""
import ast
import json
import subprocess
import sys
from pathlib import Path

import tapegrad
from tapegrad import _lazy
from tapegrad._class_members import has_member

PACKAGE_DIR = Path(tapegrad.__file__).parent


def _run(code: str):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _stub_all(stub: Path) -> list:
    for node in ast.parse(stub.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                for t in node.targets):
            return ast.literal_eval(node.value)
    return []


def _stub_modules() -> dict:
    """{module name: its stub's __all__} for every stub that has one."""
    modules = {}
    for stub in sorted(PACKAGE_DIR.rglob("*.pyi")):
        parts = stub.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names = _stub_all(stub)
        if names:
            modules[".".join(parts)] = names
    return modules


def test_import_leaves_the_lazy_modules_unloaded():
    loaded = _run("import json, sys; before = set(sys.modules); import tapegrad; "
                  "print(json.dumps(sorted(set(sys.modules) - before)))")
    for module in ("tapegrad.nn", "tapegrad.optim", "tapegrad.replay", "tapegrad.func",
                   "tapegrad.contractions", "tapegrad._settings", "tapegrad._sparse_coo",
                   "tapegrad._legacy", "tapegrad.profiler", "tapegrad.autograd.functional",
                   "tapegrad.autograd.forward_ad", "tapegrad.autograd.profiler"):
        assert module not in loaded, module
    # What the op families do need is there: autograd.function (their Function subclasses).
    assert "tapegrad.autograd.function" in loaded and "tapegrad._more_math" in loaded


def test_every_name_in_each_stubs_all_resolves_in_a_fresh_process():
    modules = _stub_modules()
    assert "tapegrad" in modules and len(modules["tapegrad"]) > 500
    missing = _run(
        "import importlib, json, sys\n"
        f"modules = {modules!r}\n"
        "missing = []\n"
        "for name, names in modules.items():\n"
        "    try:\n"
        "        module = importlib.import_module(name)\n"
        "    except ModuleNotFoundError as e:\n"
        "        # a module over an optional package (utils.tensorboard) fails to import without\n"
        "        # it, as PyTorch's does; a missing module of tapegrad's own is an error\n"
        "        if (e.name or '').split('.')[0] == 'tapegrad':\n"
        "            raise\n"
        "        continue\n"
        "    missing += [f'{name}.{n}' for n in names if not hasattr(module, n)]\n"
        "print(json.dumps(missing))")
    assert missing == []


def test_each_lazy_entry_resolves_to_its_modules_object_and_is_listed_by_dir():
    for package in ("tapegrad", "tapegrad.autograd"):
        # A fresh process per package: the first access is the one that imports.
        result = _run(
            "import importlib, json\n"
            f"package = importlib.import_module({package!r})\n"
            "listed = dir(package)\n"
            "bad = []\n"
            "for name, (module, attribute) in package._LAZY.items():\n"
            "    value = getattr(package, name)\n"
            "    home = importlib.import_module(f'{package.__name__}.{module}')\n"
            "    expected = getattr(home, attribute) if attribute else home\n"
            "    # (the public entry, _public_calls.py / _out_arg.py, here or at home)\n"
            "    plain = getattr(value, '__out_arg_of__', value)\n"
            "    if (value is not expected and plain is not expected) or name not in listed:\n"
            "        bad.append(name)\n"
            "print(json.dumps([len(package._LAZY), bad]))")
        count, bad = result
        assert count > 0 and bad == [], (package, bad)


def test_lazy_names_are_the_public_objects_pytorch_scripts_use():
    assert tapegrad.einsum is tapegrad.contractions.einsum
    assert tapegrad.compile is tapegrad.replay.compile
    assert tapegrad.FloatTensor.__name__ == "FloatTensor"
    assert tapegrad.finfo(tapegrad.float32).eps == 2.0 ** -23
    assert tapegrad.get_float32_matmul_precision() == "highest"
    assert tapegrad.is_tensor(tapegrad.sparse_coo_tensor([[0], [1]], [2.0], (2, 2)))
    assert not tapegrad.is_tensor([1.0])
    assert tapegrad.autograd.functional.jacobian is not None
    assert tapegrad.autograd.gradcheck.__name__ == "gradcheck"     # the function, not the module


def test_a_missing_name_is_an_attribute_error_naming_it():
    for module, name in ((tapegrad, "no_such_op"), (tapegrad.autograd, "no_such_thing")):
        try:
            getattr(module, name)
        except AttributeError as e:
            # named as PyTorch's module, as the message a script run against PyTorch shows
            torch_name = "torch" + module.__name__[len("tapegrad"):]
            assert str(e) == f"module {torch_name!r} has no attribute {name!r}"
        else:
            raise AssertionError(f"{module.__name__}.{name} resolved")


def test_table_refuses_a_name_listed_twice():
    assert _lazy.table({"nn": (), "_a": ("x",)}) == {"nn": ("nn", None), "x": ("_a", "x")}
    try:
        _lazy.table({"_a": ("x",), "_b": ("x",)})
    except ValueError as e:
        assert "'x' listed twice" in str(e)
    else:
        raise AssertionError("a duplicate lazy name was accepted")


def test_has_member_answers_as_dir_does():
    listed = set(dir(tapegrad.Tensor))
    for name in sorted(listed) + ["no_such_method", "mro", "__name__", "__or__", "__ior__"]:
        assert has_member(tapegrad.Tensor, name) == (name in listed), name


def test_star_import_brings_the_lazy_names_and_no_submodules():
    # As PyTorch's __all__: `from torch import *` gives torch.einsum, torch.finfo, torch.save,
    # and does not bind torch.random over Python's random.
    names = _run("import json, types\n"
                 "ns = {}\n"
                 "exec('from tapegrad import *', ns)\n"
                 "print(json.dumps(sorted(n for n, v in ns.items()\n"
                 "                        if not isinstance(v, types.ModuleType))))")
    import tapegrad as tg
    assert set(names) - {"__builtins__"} == set(tg.__all__)
    for name in ("einsum", "addmm", "finfo", "FloatTensor", "save", "load", "compile", "vmap",
                 "use_deterministic_algorithms", "sparse_coo_tensor", "tensor", "zeros", "exp"):
        assert name in names, name
    assert not {"random", "nn", "autograd", "creation"} & set(tg.__all__)


def test_tensor_methods_do_not_wait_for_a_lazy_module():
    # A lazy module that attached Tensor methods when it loaded left `x.addmm(...)` an
    # AttributeError until something touched `tapegrad.addmm`: the methods a script sees must
    # not depend on which module-level names it used first.
    names = _run("import json, tapegrad; before = set(dir(tapegrad.Tensor)); "
                 "[getattr(tapegrad, n) for n in list(tapegrad._LAZY)]; "
                 "print(json.dumps(sorted(set(dir(tapegrad.Tensor)) - before)))")
    assert names == []
