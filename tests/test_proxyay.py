"""Regression tests from the audio / autoregressive-generative proxy task (session 31)."""
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _istft_warnings(lib, clear):
    clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="complex-valued input"):
            lib.istft(lib.zeros(17, 3, 2), 32)
    return [str(w.message) for w in caught if "window was not provided" in str(w.message)]


def test_istft_missing_window_warns_before_real_input_error():
    # PyTorch warns about the absent window first, then refuses the real (view_as_real) input
    from tapegrad import _core
    expected = _istft_warnings(torch, lambda: None)
    got = _istft_warnings(tapegrad, _core.WARNED_ONCE.clear)
    assert len(got) == 1
    assert got[0].startswith("A window was not provided. A rectangular window will be applied.Please")
    # torch's TORCH_WARN_ONCE may already have fired in this process; when it did not, both agree
    if expected:
        assert expected[0].split(" (Triggered")[0] == got[0]


def test_istft_missing_window_still_inverts():
    rs = np.random.RandomState(3)
    x = rs.randn(2, 300)
    ref = torch.istft(torch.stft(torch.from_numpy(x), 64, window=torch.ones(64), return_complex=True),
                      64, length=300)
    tx = tapegrad.from_numpy(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = tapegrad.istft(tapegrad.stft(tx, 64, window=tapegrad.ones(64), return_complex=True),
                             64, length=300)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-10, atol=1e-10)
