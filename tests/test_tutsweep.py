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
