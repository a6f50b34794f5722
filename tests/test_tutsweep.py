"""What running PyTorch's tutorials and examples unchanged found (tutsweep): each test replays the
construct a tutorial script uses and compares it with torch where torch is installed."""
from __future__ import annotations

import re

import pytest

import tapegrad as tg


def _rows(text):
    """A profiler table's event names, in order (the timings are wall-clock and differ)."""
    lines = text.strip().splitlines()
    return [line.split()[0] for line in lines[3:-2]]


def _legacy_profile_prints(module):
    prof_unstarted = module.autograd.profiler.profile()
    x = module.ones(3)
    with module.autograd.profiler.profile() as prof:
        inside = str(prof)
        with module.autograd.profiler.record_function("foo"):
            x.exp()
    with module.autograd.profiler.profile() as empty:
        pass
    return (str(prof_unstarted), repr(prof_unstarted), inside, _rows(str(prof)),
            repr(prof).startswith("[<FunctionEvent"), repr(empty), str(empty))


def test_legacy_profile_prints_its_event_table():
    # examples/fx/profiling_tracer.py prints torch.autograd.profiler.profile objects.
    unstarted, unstarted_repr, inside, rows, repr_is_events, empty_repr, empty_str = \
        _legacy_profile_prints(tg)
    assert unstarted == unstarted_repr == inside == "<unfinished torch.autograd.profile>"
    assert rows == ["foo", "aten::exp"]
    assert repr_is_events
    assert (empty_repr, empty_str) == ("[]", "")


def test_legacy_profile_prints_as_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = _legacy_profile_prints(tg), _legacy_profile_prints(torch)
    assert ours == theirs


def test_new_profiler_keeps_the_object_repr():
    # torch.profiler.profile defines no __str__: print(prof) shows the object, not a table.
    with tg.profiler.profile() as prof:
        tg.ones(2).exp()
    assert re.match(r"<[\w.]+\.profile object at 0x[0-9a-f]+>", str(prof))


def _library_errors(module, tmp_path):
    missing = str(tmp_path / "build" / "libinterpreter.so")
    seen = []
    for load in (module.ops.load_library, module.classes.load_library):
        with pytest.raises(OSError) as info:
            load(missing)
        seen.append(str(info.value))
    with pytest.raises(RuntimeError) as info:
        module.classes.NativeInterpretation.ElementwiseInterpreter
    seen.append(str(info.value))
    return seen


def test_loading_a_missing_library_is_oserror(tmp_path):
    # examples/fx/native_interpreter: torch.classes.load_library('build/libinterpreter.so')
    # before the library is built.
    seen = _library_errors(tg, tmp_path)
    assert seen[0] == seen[1] == f"Could not load this library: {tmp_path}/build/libinterpreter.so"
    assert "'NativeInterpretation.ElementwiseInterpreter', but it does not exist" in seen[2]


def test_library_errors_as_torch(tmp_path):
    torch = pytest.importorskip("torch")
    assert _library_errors(tg, tmp_path) == _library_errors(torch, tmp_path)


def test_ops_and_classes_import_as_modules():
    import subprocess
    import sys
    code = ("import tapegrad.ops, tapegrad.classes, tapegrad; "
            "print(tapegrad.ops is tapegrad._ops.ops, tapegrad.classes is tapegrad._ops.classes, "
            "'classes' in tapegrad.__all__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "False"]


# -- torch.compile and the contexts a replay would skip (SILENT wrong results before) -------------
# recipes_source/torch_compile_torch_function_modes.py: a TorchFunctionMode rewriting add into
# mul, entered around or inside a compiled function.  tapegrad's compiled call replayed (or
# captured through routes that bypass the mode) x + y * x whatever the mode said.

def _add_to_mul_mode(module):
    class AddToMultiplyMode(module.overrides.BaseTorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func == module.Tensor.add:
                func = module.mul
            return super().__torch_function__(func, types, args, kwargs)
    return AddToMultiplyMode


def _compiled_under_contexts(module):
    mode = _add_to_mul_mode(module)
    x = module.tensor([[1.0, 2.0], [3.0, 4.0]])
    y = module.tensor([[0.5, 1.5], [2.0, 3.0]])

    @module.compile(backend="eager")   # (torch: dynamo alone, fast)
    def outside(x, y):
        return x + y * x

    @module.compile(backend="eager")
    def inside(x, y):
        with mode():
            return x + y * x

    @module.compile(backend="eager")
    def casting(x):
        with module.autocast("cpu", dtype=module.bfloat16):
            return x @ x

    @module.compile(backend="eager")
    def plain_matmul(x):
        return x @ x

    class Sub(module.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is module.Tensor.add or func is module.add:
                func = module.mul
            return super().__torch_function__(func, types, args, kwargs or {})

    @module.compile(backend="eager")
    def adds(a, b):
        return module.add(a, b)

    seen = {"plain": outside(x, y).tolist()}
    seen["plain again"] = outside(x, y).tolist()
    with mode():
        seen["mode outside"] = [outside(x, y).tolist() for _ in range(3)]
    seen["plain after"] = outside(x, y).tolist()
    seen["mode inside"] = [inside(x, y).tolist() for _ in range(3)]
    seen["autocast inside"] = [str(casting(x).dtype) for _ in range(3)]
    seen["matmul"] = [str(plain_matmul(x).dtype) for _ in range(2)]
    with module.autocast("cpu", dtype=module.bfloat16):
        seen["autocast outside"] = [str(plain_matmul(x).dtype) for _ in range(2)]
    seen["adds plain"] = [adds(x, y).tolist() for _ in range(2)]
    sub = x.as_subclass(Sub)
    seen["adds subclass"] = [adds(sub, y).as_subclass(module.Tensor).tolist() for _ in range(2)]
    return seen


def test_compiled_functions_honour_modes_autocast_and_subclasses():
    seen = _compiled_under_contexts(tg)
    plus = [[1.5, 5.0], [9.0, 16.0]]          # x + y * x
    times = [[0.5, 6.0], [18.0, 48.0]]        # x * (y * x)
    assert seen["plain"] == seen["plain again"] == seen["plain after"] == plus
    assert seen["mode outside"] == [times] * 3
    assert seen["mode inside"] == [times] * 3
    assert seen["autocast inside"] == ["torch.bfloat16"] * 3
    assert seen["matmul"] == ["torch.float32"] * 2
    assert seen["autocast outside"] == ["torch.bfloat16"] * 2
    assert seen["adds plain"] == [[[1.5, 3.5], [5.0, 7.0]]] * 2
    assert seen["adds subclass"] == [[[0.5, 3.0], [6.0, 12.0]]] * 2


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")
def test_compiled_functions_under_contexts_as_torch():
    torch = pytest.importorskip("torch")
    ours = _compiled_under_contexts(tg)
    theirs = _compiled_under_contexts(torch)
    for key in ours:
        if key.startswith("autocast") or key == "matmul":
            assert [d.split(".")[1] for d in ours[key]] == [d.split(".")[1] for d in theirs[key]]
        else:
            assert ours[key] == theirs[key], key
