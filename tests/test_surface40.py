"""PyTorch names small scripts still stopped at (issue surface40): the float8 dtypes, the old
torch.nn.intrinsic / qat namespaces, torch.Sym*, Stream / Event, torch.futures and a few
top-level functions, each checked against torch."""
import math
import os

import pytest

import tapegrad as tg


def _torch():
    return pytest.importorskip("torch")


def _outcome(fn):
    """(result, None) or (None, (exception type name, message))."""
    try:
        return fn(), None
    except Exception as e:      # noqa: BLE001 (compared with torch's outcome)
        return None, (type(e).__name__, str(e).split("\n")[0])


# -- old namespaces ---------------------------------------------------------------------------

def test_old_quantization_namespaces_alias_ao_nn():
    import tapegrad.nn.intrinsic as nni
    import tapegrad.nn.intrinsic.qat as nniqat
    import tapegrad.nn.intrinsic.quantized as nniq
    import tapegrad.nn.qat as nnqat
    from tapegrad.nn.intrinsic.modules.fused import ConvReLU2d
    assert nni.ConvBnReLU2d is tg.ao.nn.intrinsic.ConvBnReLU2d
    assert ConvReLU2d is tg.ao.nn.intrinsic.ConvReLU2d
    assert nniqat.LinearReLU is tg.ao.nn.intrinsic.qat.LinearReLU
    assert nniq.LinearReLU is tg.ao.nn.intrinsic.quantized.LinearReLU
    assert nnqat.Linear is tg.ao.nn.qat.Linear and nnqat.Conv2d is tg.ao.nn.qat.Conv2d
    torch = _torch()
    import torch.nn.intrinsic as tnni
    # the old namespace lists exactly PyTorch's names (no LinearTanh, LinearLeakyReLU)
    assert sorted(nni.__all__) == sorted(n for n in tnni.__all__)
    m = tg.nn.Sequential(tg.nn.Conv2d(1, 2, 3), tg.nn.BatchNorm2d(2), tg.nn.ReLU()).eval()
    fused = tg.ao.quantization.fuse_modules(m, [["0", "1", "2"]])
    assert isinstance(fused[0], tg.nn.intrinsic.ConvReLU2d)
    assert torch.nn.intrinsic.ConvReLU2d.__name__ == type(fused[0]).__name__


# -- Sym*, sym_* ------------------------------------------------------------------------------

_SYM_CALLS = [
    ("sym_max", (2, 3.0)), ("sym_max", (2.5, 1)), ("sym_min", (1, 2)), ("sym_max", (True, 0)),
    ("sym_max", (1, float("nan"))), ("sym_min", (float("nan"), 1.0)), ("sym_max", ("a", 1)),
    ("sym_not", (0,)), ("sym_not", (1,)), ("sym_ite", (True, 1, 2)), ("sym_ite", (0, 1, 2)),
    ("sym_ite", (True, 1, 2.0)), ("sym_sum", ([1.5, 2],)), ("sym_sum", (1, 2, 3)),
    ("sym_sum", ([],)), ("sym_int", (-2.5,)), ("sym_int", (True,)), ("sym_int", ("3",)),
    ("sym_float", (3,)), ("sym_sqrt", (2,)), ("sym_sqrt", (-1,)),
]


@pytest.mark.parametrize("name, args", _SYM_CALLS)
def test_sym_functions_match_torch(name, args):
    torch = _torch()
    got, got_error = _outcome(lambda: getattr(tg, name)(*args))
    want, want_error = _outcome(lambda: getattr(torch, name)(*args))
    if want_error:
        assert got_error is not None and got_error[0] == want_error[0]
        assert got_error[1].split(",")[0] == want_error[1].split(",")[0]
    else:
        assert got_error is None and type(got) is type(want)
        assert got == want or (math.isnan(got) and math.isnan(want))


def test_sym_classes_are_not_plain_numbers():
    torch = _torch()
    for tg_cls, t_cls, value in ((tg.SymInt, torch.SymInt, 3), (tg.SymFloat, torch.SymFloat, 1.0),
                                 (tg.SymBool, torch.SymBool, True)):
        assert isinstance(value, tg_cls) == isinstance(value, t_cls) is False
        assert issubclass(tg_cls, type(value)) == issubclass(t_cls, type(value)) is False


# -- Stream, Event ----------------------------------------------------------------------------

_STREAM_CALLS = [
    "repr(m.Stream())", "m.Stream('cpu').query()", "m.Stream().synchronize()",
    "m.Stream().stream_id", "m.Stream().device_index", "m.Stream().device_type",
    "m.Stream() == m.Stream()", "m.Stream().record_event()", "m.Stream().wait_stream(m.Stream())",
    "m.Stream(device='cuda')", "m.Stream(device=0)", "str(m.Stream().device)",
    "repr(m.Event())", "repr(m.Event(enable_timing=True))", "m.Event().query()",
    "m.Event().record()", "m.Event().synchronize()", "m.Event().wait()",
    "m.Event().elapsed_time(m.Event())",
    "m.Event(enable_timing=True).elapsed_time(m.Event(enable_timing=True))",
    "m.Event(device='cuda')",
]


@pytest.mark.parametrize("expr", _STREAM_CALLS)
def test_stream_and_event_on_cpu_match_torch(expr):
    torch = _torch()
    got = _outcome(lambda: eval(expr, {"m": tg}))
    want = _outcome(lambda: eval(expr, {"m": torch}))
    assert got == want


# -- futures, fork / wait ---------------------------------------------------------------------

@pytest.mark.parametrize("m_name", ["tg", "torch"])
def test_futures_as_torch(m_name):
    m = tg if m_name == "tg" else _torch()
    F = m.futures.Future
    f = F()
    assert not f.done()
    chained = f.then(lambda fut: fut.wait() * 10)
    seen = []
    f.add_done_callback(lambda fut: seen.append(fut.value()))
    f.set_result(4)
    assert f.done() and f.wait() == 4 and chained.wait() == 40 and seen == [4]
    with pytest.raises(RuntimeError, match="can only be marked completed once"):
        f.set_result(5)
    failed = F()
    failed.set_exception(ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        failed.wait()
    with pytest.raises(ValueError, match="boom"):
        m.futures.wait_all([f, failed])
    a, b = F(), F()
    both = m.futures.collect_all([a, b])
    a.set_result(1)
    assert not both.done()
    b.set_result(2)
    assert [x.wait() for x in both.wait()] == [1, 2]
    assert m.futures.wait_all([]) == [] and m.futures.collect_all([]).wait() == []
    assert m.wait(m.fork(lambda x: x * 2, 3)) == 6
    with pytest.warns(DeprecationWarning, match="torch.jit.fork` is deprecated"):
        forked = m.jit.fork(lambda: 5)
    with pytest.warns(DeprecationWarning, match="torch.jit.wait` is deprecated"):
        assert m.jit.wait(forked) == 5
    with pytest.raises(ZeroDivisionError):
        m.fork(lambda: 1 / 0)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        m.wait(3)
    with pytest.raises(TypeError, match="is not an instance of 'function'"):
        m.fork(3)


def test_future_completed_from_another_thread():
    import threading
    f = tg.futures.Future()
    threading.Timer(0.05, f.set_result, (7,)).start()
    assert f.wait() == 7


# -- small functions --------------------------------------------------------------------------

def test_small_functions_match_torch():
    torch = _torch()
    assert tg.is_distributed(tg.ones(2)) is torch.is_distributed(torch.ones(2)) is False
    got, want = _outcome(lambda: tg.is_distributed(3)), _outcome(lambda: torch.is_distributed(3))
    assert got == want
    assert tg.init_num_threads() is torch.init_num_threads() is None
    assert tg.get_file_path("a", "b") == os.path.join(
        os.path.dirname(os.path.dirname(tg.__file__)), "a", "b")
    assert tg.get_file_path() == os.path.dirname(os.path.dirname(tg.__file__))
    with pytest.raises(TypeError):
        tg.get_file_path(1)
