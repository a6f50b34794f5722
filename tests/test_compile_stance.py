"""torch.compiler.set_stance: each stance runs, raises or compiles for the calls PyTorch's does
(the expected texts are what PyTorch 2.13 printed for the same code), as a function call, a
context manager and a decorator, and the default stance is restored after each."""
import pytest

import tapegrad
from tapegrad import _compile_stance


@pytest.fixture(autouse=True)
def default_stance():
    yield
    tapegrad.compiler.set_stance("default")


def _branching():
    @tapegrad.compile
    def f(x):
        if tapegrad.compiler.is_compiling():
            return x + 1
        return x - 1
    return f


def test_force_eager_three_ways():
    f = _branching()
    x = tapegrad.zeros(3)
    assert f(x).tolist() == [1, 1, 1]

    @tapegrad.compiler.set_stance("force_eager")
    def bar(x):
        return f(x)
    assert f(x).tolist() == [1, 1, 1]         # decorating sets nothing
    assert bar(x).tolist() == [-1, -1, -1]
    with tapegrad.compiler.set_stance("force_eager"):
        assert f(x).tolist() == [-1, -1, -1]
    assert f(x).tolist() == [1, 1, 1]
    tapegrad.compiler.set_stance("force_eager")
    assert f(x).tolist() == [-1, -1, -1]
    tapegrad.compiler.set_stance("default")
    assert f(x).tolist() == [1, 1, 1]


def test_fail_on_recompile_names_the_guard_as_pytorch():
    f = _branching()
    f(tapegrad.zeros(3))
    code = f.fn.__code__
    with tapegrad.compiler.set_stance("fail_on_recompile"):
        assert f(tapegrad.zeros(3)).tolist() == [1, 1, 1]
        with pytest.raises(RuntimeError) as info:
            f(tapegrad.zeros(4))
    frame = f._torch_cache.frame_id
    assert str(info.value) == (
        "Detected recompile when torch.compile stance is 'fail_on_recompile'. "
        f"filename: '{code.co_filename}', function name: 'f', line number: {code.co_firstlineno}\n"
        "    triggered by the following guard failure(s):\n"
        f"    - {frame}/0: tensor 'x' size mismatch at index 0. expected 3, actual 4")


@pytest.mark.parametrize("value, failure", [
    (tapegrad.zeros(3, dtype=tapegrad.float64), "tensor 'x' dtype mismatch. expected Float, actual Double"),
    (tapegrad.zeros(3, 1), "tensor 'x' rank mismatch. expected 1, actual 2"),
    (tapegrad.zeros(3, requires_grad=True), "tensor 'x' requires_grad mismatch. expected requires_grad=0"),
    (tapegrad.zeros(6)[::2], "tensor 'x' stride mismatch at index 0. expected 1, actual 2"),
])
def test_each_tensor_guard(value, failure):
    f = _branching()
    f(tapegrad.zeros(3))
    with tapegrad.compiler.set_stance("fail_on_recompile"), pytest.raises(RuntimeError) as info:
        f(value)
    assert str(info.value).splitlines()[-1].endswith(f"/0: {failure}")


def test_a_changed_size_becomes_dynamic_except_zero_and_one():
    # PyTorch: the second size compiles the dimension as dynamic; later sizes >= 2 reuse it
    f = _branching()
    f(tapegrad.zeros(3))
    f(tapegrad.zeros(4))
    with tapegrad.compiler.set_stance("fail_on_recompile"):
        assert f(tapegrad.zeros(9)).tolist() == [1] * 9
        with pytest.raises(RuntimeError) as info:
            f(tapegrad.zeros(1))
    frame = f._torch_cache.frame_id
    assert str(info.value).splitlines()[2:] == [
        f"    - {frame}/1: 2 <= x.size()[0]",
        f"    - {frame}/0: tensor 'x' size mismatch at index 0. expected 3, actual 1"]


def test_eager_on_recompile_runs_eagerly_where_pytorch_would_compile():
    f = _branching()
    assert f(tapegrad.zeros(3)).tolist() == [1, 1, 1]
    with tapegrad.compiler.set_stance("eager_on_recompile"):
        assert f(tapegrad.zeros(3)).tolist() == [1, 1, 1]
        assert f(tapegrad.zeros(4)).tolist() == [-1] * 4
        assert f(tapegrad.zeros(3)).tolist() == [1, 1, 1]
    assert f(tapegrad.zeros(5)).tolist() == [1] * 5


def test_int_arguments_are_guarded_by_value():
    @tapegrad.compile
    def f(x, n):
        return x * n
    f(tapegrad.ones(2), 3)
    with tapegrad.compiler.set_stance("fail_on_recompile"):
        assert f(tapegrad.ones(2), 3).tolist() == [3, 3]
        with pytest.raises(RuntimeError, match=r"/0: n == 3$"):
            f(tapegrad.ones(2), 4)


def test_a_function_never_compiled_fails_on_its_first_call():
    with tapegrad.compiler.set_stance("fail_on_recompile"):
        f = _branching()
        with pytest.raises(RuntimeError) as info:
            f(tapegrad.ones(1))
    assert "triggered by" not in str(info.value)
    assert str(info.value).startswith("Detected recompile when torch.compile stance is 'fail_on_recompile'.")


def test_eager_then_compile():
    with tapegrad.compiler.set_stance("eager_then_compile"):
        f = _branching()
        assert f(tapegrad.zeros(2)).tolist() == [-1, -1]
        assert f(tapegrad.zeros(2)).tolist() == [1, 1]
        assert f(tapegrad.zeros(3)).tolist() == [1, 1, 1]


def test_compiled_module_guards_name_args():
    m = tapegrad.compile(tapegrad.nn.Linear(2, 2))
    m(tapegrad.ones(1, 2))
    with tapegrad.compiler.set_stance("force_eager"):
        assert m(tapegrad.ones(3, 2)).shape == (3, 2)
    with tapegrad.compiler.set_stance("fail_on_recompile"), pytest.raises(RuntimeError) as info:
        m(tapegrad.ones(3, 2))
    assert str(info.value).endswith("/0: tensor 'args[0]' size mismatch at index 0. expected 1, actual 3")


def test_bad_stances_and_changes_inside_compiled_code():
    with pytest.raises(RuntimeError, match="non-default stance cannot have force_backend set"):
        tapegrad.compiler.set_stance("force_eager", force_backend="eager")
    f = _branching()
    tapegrad.compiler.set_stance("bogus")         # PyTorch refuses it at the next compiled call
    with pytest.raises(RuntimeError, match=r"invalid torch.compile stance 'DynamoStance\(stance='bogus'"):
        f(tapegrad.ones(1))
    tapegrad.compiler.set_stance("default")

    @tapegrad.compile
    def baz(x):
        with tapegrad.compiler.set_stance("force_eager"):
            return x + 1
    with pytest.raises(AssertionError) as info:
        baz(tapegrad.ones(1))
    lines = str(info.value).splitlines()
    assert lines[0].startswith("Attempt to trace forbidden callable <function set_stance at 0x")
    assert lines[2] == "from user code:"
    assert lines[3].endswith(", in baz")
    assert lines[4] == '    with tapegrad.compiler.set_stance("force_eager"):'
    assert _compile_stance._current[0].stance == "default"


def test_default_stance_after_context_leaves_the_fast_path_on():
    f = _branching()
    x = tapegrad.zeros(2)
    with tapegrad.compiler.set_stance("force_eager"):
        f(x)
    f(x)
    f(x)
    assert f.stats["replays"] >= 1


def test_set_logs_recompiles_writes_pytorchs_lines(capsys):
    tapegrad._logging.set_logs(recompiles=True)
    try:
        f = _branching()
        f(tapegrad.ones(2))
        f(tapegrad.ones(3))
    finally:
        tapegrad._logging.set_logs()
    err = capsys.readouterr().err.splitlines()
    frame = f._torch_cache.frame_id
    assert [line.split("[__recompiles] ", 1)[-1] for line in err] == [
        f"Recompiling function f in {f.fn.__code__.co_filename}:{f.fn.__code__.co_firstlineno}",
        "    triggered by the following guard failure(s):",
        f"    - {frame}/0: tensor 'x' size mismatch at index 0. expected 2, actual 3"]
    assert all(f"[{frame}/1] [__recompiles]" in line for line in err)
    f(tapegrad.ones(7))              # logs off again
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("settings", [dict(dynamo="info"), dict(dynamo=True), dict(bogus=1)])
def test_set_logs_refusals_as_pytorch(settings):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as expected:
        torch._logging.set_logs(**settings)
    torch._logging.set_logs()
    with pytest.raises(type(expected.value)) as got:
        tapegrad._logging.set_logs(**settings)
    assert str(got.value) == str(expected.value)
