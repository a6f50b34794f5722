"""Memory formats (a real channels_last layout) and the global switches of tapegrad._settings,
against PyTorch and without it."""
import pickle

import numpy as np
import pytest

import tapegrad as tg


@pytest.fixture(autouse=True)
def _restore_switches():
    yield
    tg.use_deterministic_algorithms(False)
    tg.set_float32_matmul_precision("highest")
    tg.set_warn_always(False)


def _layout(lib, fn):
    try:
        t = fn(lib)
    except (RuntimeError, TypeError) as e:
        return type(e).__name__, str(e)
    if isinstance(t, bool):
        return t
    return tuple(t.shape), t.stride()


@pytest.mark.parametrize("fn", [
    lambda L: L.ones(2, 3, 4, 5).contiguous(memory_format=L.channels_last),
    lambda L: L.ones(2, 3, 4, 5).to(memory_format=L.channels_last),
    lambda L: L.ones(2, 3, 4, 5).to(L.float64, memory_format=L.channels_last),
    lambda L: L.ones(2, 3, 4, 5, 6).contiguous(memory_format=L.channels_last_3d),
    lambda L: L.ones(2, 3, 4, 5).contiguous(memory_format=L.channels_last).clone(),
    lambda L: L.ones(2, 3, 4, 5).to(memory_format=L.channels_last) * 2 + 1,
    lambda L: L.ones(2, 3, 4, 5).to(memory_format=L.channels_last).contiguous(),
    lambda L: L.ones(2, 3, 4, 5).contiguous(memory_format=L.preserve_format),
    lambda L: L.ones(2, 3, 4, 5).to(memory_format=L.channels_last).is_contiguous(
        memory_format=L.channels_last),
    lambda L: L.ones(2, 3, 4, 5).to(memory_format=L.channels_last).is_contiguous(),
    lambda L: L.ones(2, 3, 1, 1).contiguous(memory_format=L.channels_last).is_contiguous(),
    lambda L: L.ones(2, 3, 4, 5).permute(0, 2, 3, 1).is_contiguous(
        memory_format=L.channels_last),
    lambda L: L.ones(2, 3).t().is_contiguous(memory_format=L.preserve_format),
    lambda L: L.ones(2, 3).t().contiguous(memory_format=L.preserve_format),
    lambda L: L.ones(2).contiguous(memory_format=1),
    lambda L: L.ones(2).contiguous(memory_format=L.channels_last),
    lambda L: L.ones(2, 3, 4, 5).contiguous(memory_format=L.channels_last_3d),
])
def test_layouts_match_torch(torch, fn):
    assert _layout(tg, fn) == _layout(torch, fn)


def test_channels_last_is_a_real_layout():
    x = tg.randn(2, 3, 4, 5, requires_grad=True)
    y = x.to(memory_format=tg.channels_last)
    assert y.stride() == (60, 1, 15, 3)
    assert y.is_contiguous(memory_format=tg.channels_last) and not y.is_contiguous()
    np.testing.assert_array_equal(y.detach().numpy(), x.detach().numpy())
    (y * y).sum().backward()                             # the conversion is differentiable
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-6)
    assert y.contiguous().stride() == (60, 20, 5, 1)
    out = tg.nn.functional.conv2d(y.detach(), tg.ones(3, 3, 3, 3))
    expected = tg.nn.functional.conv2d(x.detach(), tg.ones(3, 3, 3, 3))
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-5)
    assert repr(tg.channels_last) == "torch.channels_last"
    assert tg.legacy_contiguous_format is tg.contiguous_format
    assert isinstance(tg.preserve_format, tg.memory_format)
    assert pickle.loads(pickle.dumps(tg.channels_last)) is tg.channels_last


def test_deterministic_switches():
    assert not tg.are_deterministic_algorithms_enabled()
    tg.use_deterministic_algorithms(True, warn_only=True)
    assert tg.are_deterministic_algorithms_enabled()
    assert tg.is_deterministic_algorithms_warn_only_enabled()
    assert tg.get_deterministic_debug_mode() == 1
    tg.set_deterministic_debug_mode("error")
    assert tg.get_deterministic_debug_mode() == 2
    assert not tg.is_deterministic_algorithms_warn_only_enabled()
    tg.set_deterministic_debug_mode(0)
    assert not tg.are_deterministic_algorithms_enabled()
    with pytest.raises(TypeError, match="argument 'mode' \\(position 1\\) must be bool, not int"):
        tg.use_deterministic_algorithms(1)
    with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`"):
        tg.set_deterministic_debug_mode("bad")
    with pytest.raises(RuntimeError, match="expected 0, 1, or 2, but got 3"):
        tg.set_deterministic_debug_mode(3)


def test_precision_denormal_warn_always():
    assert tg.get_float32_matmul_precision() == "highest"
    tg.set_float32_matmul_precision("high")           # nanoGPT's first line
    assert tg.get_float32_matmul_precision() == "high"
    with pytest.warns(UserWarning, match="low is not one of 'highest', 'high', or 'medium'"):
        tg.set_float32_matmul_precision("low")
    assert tg.get_float32_matmul_precision() == "high"
    assert tg.set_flush_denormal(True) is False         # not configurable from numpy
    tg.set_warn_always(True)
    assert tg.is_warn_always_enabled()
    with pytest.raises(RuntimeError, match="setWarnOnlyOnce expects a bool, but got int"):
        tg.set_warn_always(1)


def test_autocast_queries():
    assert not tg.is_autocast_enabled() and not tg.is_autocast_enabled("cpu")
    assert tg.get_autocast_dtype("cpu") == tg.bfloat16
    assert tg.get_autocast_dtype("cuda") == tg.float16
    assert tg.is_autocast_cache_enabled()
    with pytest.warns(DeprecationWarning, match="get_autocast_cpu_dtype\\(\\) is deprecated"):
        assert tg.get_autocast_cpu_dtype() == tg.bfloat16
    with pytest.raises(RuntimeError, match="device type at start of device string: bad"):
        tg.get_autocast_dtype("bad")
    tg.set_autocast_enabled("cpu", True)      # (CPU autocast: tests/test_autocast38.py)
    try:
        assert tg.is_autocast_enabled("cpu") and not tg.is_autocast_enabled()
    finally:
        tg.set_autocast_enabled("cpu", False)
    tg.set_autocast_enabled("cuda", True)
    try:
        assert tg.is_autocast_enabled("cuda") and tg.is_autocast_enabled()
    finally:
        tg.set_autocast_enabled("cuda", False)
    tg.set_autocast_dtype("cuda", tg.float32)
    try:
        assert tg.get_autocast_dtype("cuda") == tg.float32
    finally:
        tg.set_autocast_dtype("cuda", tg.float16)
    depth = tg.autocast_increment_nesting()
    assert tg.autocast_decrement_nesting() == depth - 1
    with tg.autocast("cpu", enabled=False):
        assert not tg.is_autocast_enabled("cpu")


def test_cpu_device_module(torch):
    assert tg.cpu.is_available() and tg.cpu.device_count() == torch.cpu.device_count() == 1
    assert tg.cpu.current_device() == torch.cpu.current_device() == "cpu"
    tg.cpu.synchronize()
    tg.cpu.set_device("cpu")
    assert tg.get_device_module("cpu") is tg.cpu and tg.get_device_module() is tg.cpu
    assert tg.get_device_module(tg.device("cpu")) is tg.cpu
    assert tg.get_device_module("cuda") is tg.cuda and not tg.cuda.is_available()
    with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
        tg.get_device_module("foo")
    with tg.cpu.stream(tg.cpu.Stream()) as stream:
        assert stream.query() and tg.cpu.current_stream().query()
