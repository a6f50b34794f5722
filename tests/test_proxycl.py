"""What the session-38 proxy of audio / DSP scripts (plain-torch STFT, mel / MFCC, FFT filtering,
DDSP, Griffin-Lim, WaveNet / TCN, CTC) found tapegrad printing differently from PyTorch: the error
text of an integer-dtype window and istft's refusals of 0-d, 1-d and empty spectra."""
from __future__ import annotations

import pytest

import tapegrad as tg


def _error_of(module, fn):
    try:
        fn(module)
    except Exception as e:          # noqa: BLE001 - the exception is what is compared
        return type(e).__name__, str(e)
    return None


def _same_error(fn):
    torch = pytest.importorskip("torch")
    expected = _error_of(torch, fn)
    assert expected is not None
    assert _error_of(tg, fn) == expected


# -- windows ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window",
                                  "bartlett_window", "kaiser_window"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "int16", "int8", "uint8", "bool"])
def test_window_of_an_integer_dtype_prints_pytorchs_tensor_options(name, dtype):
    _same_error(lambda m: getattr(m, name)(4, dtype=getattr(m, dtype)))


def test_window_with_an_explicit_layout_loses_the_default_tag():
    _same_error(lambda m: m.hann_window(4, dtype=m.int64, layout=m.strided))


def test_float_windows_still_build():
    torch = pytest.importorskip("torch")
    for name in ("hann_window", "kaiser_window"):
        got = getattr(tg, name)(5, layout=tg.strided, dtype=tg.float64).numpy()
        want = getattr(torch, name)(5, layout=torch.strided, dtype=torch.float64).numpy()
        assert (abs(got - want) < 1e-12).all()


# -- istft's refusals ------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(33,), (), (0,)])
def test_istft_of_a_0d_or_1d_spectrum_is_pytorchs_index_error(shape):
    _same_error(lambda m: m.istft(m.zeros(shape, dtype=m.complex64), 64, 16,
                                  window=m.hann_window(64)))


@pytest.mark.parametrize("shape", [(33, 0), (0, 5), (2, 0, 5), (0, 0, 0, 0)])
def test_istft_of_an_empty_spectrum_says_so_before_any_other_check(shape):
    _same_error(lambda m: m.istft(m.zeros(shape, dtype=m.complex64), 64, 16,
                                  window=m.hann_window(64)))


def test_istft_still_inverts_stft():
    torch = pytest.importorskip("torch")
    signal = [float(v) for v in torch.sin(torch.arange(300.0) * 0.21)]
    for m in (tg, torch):
        x = m.tensor(signal, dtype=m.float64)
        w = m.hann_window(64, dtype=m.float64)
        y = m.istft(m.stft(x, 64, 16, window=w, return_complex=True), 64, 16, window=w,
                    length=300)
        assert float((y - x).abs().max()) < 1e-12
