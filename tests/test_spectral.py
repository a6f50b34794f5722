"""torch.stft / torch.istft (tapegrad/_spectral.py): values, shapes, dtypes and gradients against
PyTorch over the options' combinations, float64 finite differences, the round trip, and
PyTorch's refusals and warnings."""
import itertools
import warnings

import numpy as np
import pytest

import tapegrad as tg

STFT_CASES = list(itertools.product(
    [16, 15],                       # n_fft (odd: the centred window's padding is uneven)
    [None, 5],                      # hop_length
    [None, 7],                      # win_length
    [(True, "reflect"), (True, "constant"), (True, "circular"), (False, "reflect")],
    [False, True],                  # normalized
    ["float32", "float64", "complex64"],
    [False, True],                  # a batch of two signals
))


def _window(lib, kind, n, dtype):
    if kind is None:
        return None
    real = {"complex64": "float32", "complex128": "float64"}.get(dtype, dtype)
    return lib.hann_window(n, dtype=getattr(lib, real))


def _stft_run(lib, x0, n_fft, hop, win, center, mode, normalized):
    x = lib.tensor(x0, requires_grad=True)
    window = _window(lib, "hann", win or n_fft, str(x0.dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = lib.stft(x, n_fft, hop_length=hop, win_length=win, window=window, center=center,
                     pad_mode=mode, normalized=normalized, return_complex=True)
    (s.abs() ** 2 * lib.arange(s.shape[-1])).sum().backward()
    return s.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("n_fft,hop,win,center_mode,normalized,dtype,batch", STFT_CASES)
def test_stft_matches_torch(torch, n_fft, hop, win, center_mode, normalized, dtype, batch):
    rng = np.random.default_rng(n_fft * 7 + (hop or 0))
    x0 = rng.standard_normal((2, 41) if batch else 41)
    if dtype == "complex64":
        x0 = x0 + 1j * rng.standard_normal(x0.shape)
    x0 = x0.astype(dtype)
    args = (n_fft, hop, win) + center_mode + (normalized,)
    s_tg, g_tg = _stft_run(tg, x0, *args)
    s_t, g_t = _stft_run(torch, x0, *args)
    assert s_tg.dtype == s_t.dtype and s_tg.shape == s_t.shape
    tol = 1e-4 if dtype != "float64" else 1e-10
    np.testing.assert_allclose(s_tg, s_t, atol=tol * 10, rtol=tol)
    np.testing.assert_allclose(g_tg, g_t, atol=tol * 100, rtol=tol * 10)


@pytest.mark.parametrize("onesided,length,return_complex,normalized", [
    (None, None, False, False), (None, 50, False, True), (None, 80, False, False),
    (False, None, False, False), (False, 45, True, False), (True, None, False, True)])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_istft_matches_torch(torch, onesided, length, return_complex, normalized, dtype):
    n_fft, hop = 16, 4
    freq = n_fft if onesided is False else n_fft // 2 + 1
    rng = np.random.default_rng(3)
    s0 = (rng.standard_normal((2, freq, 12)) + 1j * rng.standard_normal((2, freq, 12)))
    s0 = s0.astype(dtype)
    results = []
    for lib in (tg, torch):
        s = lib.tensor(s0, requires_grad=True)
        window = _window(lib, "hann", n_fft, dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = lib.istft(s, n_fft, hop_length=hop, window=window, normalized=normalized,
                          onesided=onesided, length=length, return_complex=return_complex)
        (y.abs() ** 2).sum().backward()
        results.append((y.detach().numpy(), s.grad.numpy()))
    (y_tg, g_tg), (y_t, g_t) = results
    assert y_tg.dtype == y_t.dtype and y_tg.shape == y_t.shape
    np.testing.assert_allclose(y_tg, y_t, atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(g_tg, g_t, atol=1e-3, rtol=1e-4)


def test_round_trip_restores_the_signal():
    x = tg.randn(3, 100, dtype=tg.float64)
    window = tg.hann_window(32, dtype=tg.float64)
    s = tg.stft(x, 32, hop_length=8, window=window, return_complex=True)
    assert s.shape == (3, 17, 13) and s.dtype == tg.complex128
    y = tg.istft(s, 32, hop_length=8, window=window, length=100)
    np.testing.assert_allclose(y.numpy(), x.numpy(), atol=1e-12)
    assert x.stft(32, 8, window=window, return_complex=True).shape == s.shape   # the method


def test_stft_gradients_by_finite_differences(gradcheck):
    rng = np.random.default_rng(5)
    window = rng.uniform(0.5, 1.5, 10)

    def power_spectrum(x, w):
        s = tg.stft(x, 12, hop_length=3, win_length=10, window=w, return_complex=True)
        return (s.real ** 2 + 3 * s.imag) * tg.arange(s.shape[-1], dtype=tg.float64)

    gradcheck(power_spectrum, rng.standard_normal(30), window)


def test_istft_gradients_by_finite_differences(gradcheck):
    rng = np.random.default_rng(6)

    def resynthesis(re, im):
        y = tg.istft(tg.complex(re, im), 8, hop_length=2, window=tg.hann_window(8,
                     dtype=tg.float64), length=20)
        return y * tg.arange(20, dtype=tg.float64)

    gradcheck(resynthesis, rng.standard_normal((5, 9)), rng.standard_normal((5, 9)))


def test_return_complex_false_is_view_as_real_with_the_deprecation_warning(torch):
    x0 = np.random.default_rng(0).standard_normal(40).astype(np.float32)
    for lib in (tg, torch):
        with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
            r = lib.stft(lib.tensor(x0), 8, window=lib.hann_window(8), return_complex=False)
        assert tuple(r.shape) == (5, 21, 2)
    with pytest.warns(UserWarning, match="A window was not provided"):
        tg.stft(tg.tensor(x0), 8, return_complex=True)


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.stft(x, 16),
    lambda lib, x: lib.stft(x, 0, return_complex=True),
    lambda lib, x: lib.stft(x, 200, center=False, return_complex=True),
    lambda lib, x: lib.stft(x, 16, hop_length=0, return_complex=True),
    lambda lib, x: lib.stft(x, 16, win_length=20, return_complex=True),
    lambda lib, x: lib.stft(x, 16, window=lib.ones(5), return_complex=True),
    lambda lib, x: lib.stft(x.reshape(2, 2, 25), 8, center=False, return_complex=True),
    lambda lib, x: lib.stft(x, 16, center=True, align_to_window=True, return_complex=True),
    lambda lib, x: lib.stft(x, 16, onesided=True, window=lib.ones(16, dtype=lib.complex64),
                            return_complex=True),
    lambda lib, x: lib.stft(x.long(), 16, return_complex=True),
])
def test_stft_refusals_match_torch(torch, call):
    x0 = np.random.default_rng(1).standard_normal(100).astype(np.float32)
    errors = []
    for lib in (tg, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError) as info:
                call(lib, lib.tensor(x0))
        errors.append(str(info.value))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("kwargs", [
    dict(onesided=False), dict(n_fft=15), dict(window="short"), dict(win_length=20),
    dict(hop_length=0), dict(center=False), dict(real=True), dict(extra_dims=True),
    dict(onesided=True, return_complex=True)])
def test_istft_refusals_match_torch(torch, kwargs):
    s0 = np.random.default_rng(2).standard_normal((9, 17)).astype(np.complex64)
    errors = []
    for lib in (tg, torch):
        k = dict(kwargs)
        s = lib.tensor(s0)
        if k.pop("real", False):
            s = s.real
        if k.pop("extra_dims", False):
            s = s.reshape(1, 1, 9, 17)
        n_fft = k.pop("n_fft", 16)
        k["window"] = lib.ones(3) if k.get("window") == "short" else lib.hann_window(16)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError) as info:
                lib.istft(s, n_fft, **k)
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_istft_pads_a_short_signal_with_a_warning():
    s = tg.stft(tg.randn(64), 16, window=tg.hann_window(16), return_complex=True)
    with pytest.warns(UserWarning, match="shorter than the length parameter"):
        y = tg.istft(s, 16, window=tg.hann_window(16), length=120)
    assert y.shape == (120,) and float(y[72:].abs().max()) == 0.0


def test_complex_tensor_type_names(torch):
    for dtype in ("complex64", "complex128"):
        assert (tg.zeros(2, dtype=getattr(tg, dtype)).type()
                == torch.zeros(2, dtype=getattr(torch, dtype)).type())
