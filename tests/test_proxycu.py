"""Testing idioms of model test files and graders, compared with PyTorch: bfloat16 isclose /
allclose / assert_close (PyTorch rounds every intermediate to bfloat16), complex magnitudes
in assert_close's report, and anomaly mode keeping the error's own message."""
import warnings

import numpy as np
import pytest

import tapegrad as tg


def _bfloat16_pairs(torch_module, n=4000):
    rng = np.random.default_rng(0)
    a = rng.uniform(-2, 2, n).astype(np.float32)
    e = a * rng.uniform(0.97, 1.03, n).astype(np.float32)
    return (torch_module.tensor(a).to(torch_module.bfloat16),
            torch_module.tensor(e).to(torch_module.bfloat16))


TOLERANCES = [(1e-2, 1e-5), (0.0123, 0.0031), (0.0, 0.0078), (0.0051, 0.0029)]


@pytest.mark.parametrize("rtol,atol", TOLERANCES)
def test_bfloat16_isclose_rounds_like_pytorch(rtol, atol):
    torch = pytest.importorskip("torch")
    ta, te = _bfloat16_pairs(torch)
    a, e = _bfloat16_pairs(tg)
    expected = torch.isclose(ta, te, rtol=rtol, atol=atol).numpy()
    got = tg.isclose(a, e, rtol=rtol, atol=atol)
    assert got.dtype == tg.bool
    np.testing.assert_array_equal(got.numpy(), expected)
    assert tg.allclose(a[:8], e[:8], rtol=rtol, atol=atol) == \
        torch.allclose(ta[:8], te[:8], rtol=rtol, atol=atol)


def test_bfloat16_isclose_atol_alone_is_rounded():
    # atol 0.0078 rounds to bfloat16's 0.0078125: an error of exactly 0.0078125 is close
    a = tg.tensor([1.0], dtype=tg.bfloat16)
    e = tg.tensor([1.0078125], dtype=tg.bfloat16)
    assert tg.isclose(a, e, rtol=0.0, atol=0.0078).item()
    assert tg.allclose(a, e, rtol=0.0, atol=0.0078)
    assert a.isclose(e, rtol=0.0, atol=0.0078).item()


def test_bfloat16_isclose_refuses_another_dtype():
    with pytest.raises(RuntimeError, match="BFloat16 did not match Float"):
        tg.isclose(tg.ones(2, dtype=tg.bfloat16), tg.ones(2))
    with pytest.raises(RuntimeError, match="BFloat16 did not match Float"):
        tg.allclose(tg.ones(2, dtype=tg.bfloat16), tg.ones(2))


def _assert_close_message(module, *args, **kwargs):
    try:
        module.testing.assert_close(*args, **kwargs)
    except AssertionError as e:
        return str(e)
    return None


@pytest.mark.parametrize("rtol,atol", [(None, None)] + TOLERANCES)
def test_bfloat16_assert_close_report_matches_pytorch(rtol, atol):
    torch = pytest.importorskip("torch")
    ta, te = _bfloat16_pairs(torch)
    a, e = _bfloat16_pairs(tg)
    assert _assert_close_message(tg, a, e, rtol=rtol, atol=atol) == \
        _assert_close_message(torch, ta, te, rtol=rtol, atol=atol)


def test_bfloat16_assert_close_differences_are_bfloat16():
    # 3 - 1.0078125 = 1.9921875 is a bfloat16; its ratio to 1.0078125 rounds to 1.9765625
    a = tg.tensor([1.0, 3.0, 2.0], dtype=tg.bfloat16)
    e = tg.tensor([1.01, 1.0078125, 2.0], dtype=tg.bfloat16)
    msg = _assert_close_message(tg, a, e)
    assert msg.splitlines()[2:] == [
        "Mismatched elements: 1 / 3 (33.3%)",
        "Greatest absolute difference: 1.9921875 at index (1,) (up to 1e-05 allowed)",
        "Greatest relative difference: 1.9765625 at index (1,) (up to 0.016 allowed)"]
    assert _assert_close_message(tg, a, a.clone()) is None


def test_complex_assert_close_relative_difference_uses_hypot():
    torch = pytest.importorskip("torch")
    args = ([1 + 1j], [1 + 1.1j])
    assert _assert_close_message(tg, *map(tg.tensor, args)) == \
        _assert_close_message(torch, *map(torch.tensor, args))


def test_anomaly_error_keeps_pytorch_message():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly():
            a = tg.tensor([0.0, 1.0], requires_grad=True)
            out = (a / a).sum()
            with pytest.raises(RuntimeError) as info:
                out.backward()
    assert str(info.value) == "Function 'DivBackward0' returned nan values in its 1th output."  # PyTorch's words


def test_anomaly_warning_is_a_filterable_warning():
    a = tg.tensor([0.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tg.autograd.detect_anomaly():
            y = tg.log(a).mul(0).sum()
            with pytest.raises(RuntimeError, match="LogBackward0"):
                y.backward()
    texts = [str(w.message) for w in caught]
    assert any(t.startswith("Error detected in LogBackward0. Traceback of forward call") and
               "y = tg.log(a).mul(0).sum()" in t for t in texts)


def test_assert_close_mismatch_percentage_rounds_as_pytorch():
    # PyTorch formats k / n with "{:.1%}": 23 / 80 is 28.7%, while 100 * 23 / 80 would give 28.8%
    actual = tg.zeros(80)
    expected = tg.cat([tg.ones(23), tg.zeros(57)])
    msg = _assert_close_message(tg, actual, expected)
    assert "Mismatched elements: 23 / 80 (28.7%)" in msg
