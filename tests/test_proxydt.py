"""Gaps found running speech / sequence-alignment scripts (CTC, DTW, RNN-T lattices, log-mel,
SpecAugment, packed bidirectional encoders) under tapegrad: each compared with PyTorch."""
import numpy as np
import pytest

import tapegrad


def _lp(lib, T=12, N=2, C=5, requires_grad=False):
    x = np.linspace(-3, 1, T * N * C).reshape(T, N, C) * np.cos(np.arange(T * N * C)).reshape(
        T, N, C)
    t = lib.tensor(x, dtype=lib.float64).log_softmax(-1)
    return t.detach().requires_grad_() if requires_grad else t


def _raises(fn):
    try:
        fn()
    except Exception as e:          # (the comparison is of the type and message)
        return type(e).__name__, str(e)
    return None


# ---- CTC: an input of no frames -------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_zero_input_length_reads_no_frame(torch, reduction, zero_infinity):
    # SILENT: a sample of input length 0 had its loss read from frame 0 (1.6 instead of 0, and a
    # finite loss instead of inf for a non-empty target)
    outs = []
    for lib in (tapegrad, torch):
        lp = _lp(lib, requires_grad=True)
        tg = lib.tensor([[1, 2, 3], [2, 2, 4]])
        loss = lib.nn.functional.ctc_loss(lp, tg, lib.tensor([0, 5]),
                                          lib.tensor([0, 3]), reduction=reduction,
                                          zero_infinity=zero_infinity)
        loss2 = lib.nn.functional.ctc_loss(lp, tg, lib.tensor([0, 5]), lib.tensor([2, 3]),
                                           reduction="none", zero_infinity=zero_infinity)
        total = loss.sum() + (loss2.sum() if zero_infinity else 0)
        total.backward()
        outs.append((loss.detach().numpy(), loss2.detach().numpy(), lp.grad.numpy()))
    for ours, theirs in zip(*outs):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    assert np.signbit(outs[0][1][0]) == np.signbit(outs[1][1][0]) or not np.isfinite(
        outs[1][1][0])


def test_ctc_zero_input_length_unbatched(torch):
    vals = [lib.nn.functional.ctc_loss(_lp(lib)[:, 0], lib.tensor([], dtype=lib.long),
                                       lib.tensor(0), lib.tensor(0)).item()
            for lib in (tapegrad, torch)]
    assert vals[0] == vals[1] == 0.0


# ---- CTC: target shape checks ---------------------------------------------------------------

_TARGET_CASES = [
    # SILENT: concatenated targets longer than the lengths' total were accepted, extra ignored
    ("concat longer", lambda L: (_lp(L), L.tensor([1, 2, 3, 4, 1]), L.tensor([5, 5]),
                                 L.tensor([2, 2]))),
    ("concat shorter", lambda L: (_lp(L), L.tensor([1, 2, 3]), L.tensor([5, 5]),
                                  L.tensor([2, 2]))),
    # SILENT: unbatched 1-d targets longer than the target length were accepted
    ("unbatched longer", lambda L: (_lp(L)[:, 0], L.tensor([1, 2, 3]), L.tensor(5),
                                    L.tensor(2))),
    ("unbatched 2-d two rows", lambda L: (_lp(L)[:, 0], L.tensor([[1, 2], [1, 2]]),
                                          L.tensor(5), L.tensor(2))),
    ("3-d targets", lambda L: (_lp(L), L.tensor([[[1, 2, 3], [1, 2, 3]]]), L.tensor([5, 5]),
                               L.tensor([2, 2]))),
    ("0-d targets", lambda L: (_lp(L), L.tensor(3), L.tensor([5, 5]), L.tensor([0, 0]))),
    ("more rows", lambda L: (_lp(L), L.tensor([[1, 2, 3]] * 3), L.tensor([5, 5]),
                             L.tensor([2, 2]))),
    ("fewer rows", lambda L: (_lp(L), L.tensor([[1, 2, 3]]), L.tensor([5, 5]),
                              L.tensor([2, 2]))),
    ("3-d targets before blank", lambda L: (_lp(L), L.tensor([[[1, 2, 3], [1, 2, 3]]]),
                                            L.tensor([5, 5]), L.tensor([2, 2]), 7)),
]


@pytest.mark.parametrize("name, make", _TARGET_CASES, ids=[c[0] for c in _TARGET_CASES])
def test_ctc_target_shape_refusals(torch, name, make):
    ours = _raises(lambda: tapegrad.nn.functional.ctc_loss(*make(tapegrad)))
    theirs = _raises(lambda: torch.nn.functional.ctc_loss(*make(torch)))
    assert theirs is not None
    assert ours == theirs


def test_ctc_exact_concatenated_and_unbatched_2d_targets_agree(torch):
    vals = []
    for lib in (tapegrad, torch):
        F = lib.nn.functional
        vals.append([F.ctc_loss(_lp(lib), lib.tensor([1, 2, 3, 4]), lib.tensor([5, 7]),
                                lib.tensor([2, 2]), reduction="none").numpy(),
                     F.ctc_loss(_lp(lib)[:, 1], lib.tensor([[3, 3]]), lib.tensor(9),
                                lib.tensor(2)).numpy()])
    for ours, theirs in zip(*vals):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)


# ---- F.ctc_loss's "got" lists what it passes to torch.ctc_loss ------------------------------

@pytest.mark.parametrize("lengths", [(5, 2), ([5.0, 5.0], [2, 2]), ("tensor", [2, 2])])
def test_ctc_invalid_combination_lists_arguments_passed_on(torch, lengths):
    def call(lib, fn):
        a, b = lengths
        a = lib.tensor([5, 5]) if a == "tensor" else a
        return _raises(lambda: fn(_lp(lib), lib.tensor([[1, 2], [1, 2]]), a, b))
    for fn_name in ("functional", "torch"):
        got = []
        for lib in (tapegrad, torch):
            fn = lib.nn.functional.ctc_loss if fn_name == "functional" else lib.ctc_loss
            kind, message = call(lib, fn)
            got.append((kind, message.split("\n")[0]))
        assert got[0] == got[1]


# ---- window functions: PyTorch's overloads take the optional parameters as a prefix -------------

_WINDOW_CALLS = [
    ("hamming_window", (4,), {"alpha": 0.5}),
    ("hamming_window", (4,), {"beta": 0.3}),
    ("hamming_window", (4, True), {"beta": 0.3}),
    ("hamming_window", (4,), {"alpha": 0.3, "beta": 0.2}),
    ("hamming_window", (4, True, 0.5), {"beta": 0.3}),
    ("hamming_window", (4,), {"periodic": True, "alpha": 0.5, "beta": 0.3}),
    ("hamming_window", (5, False, 0.5), {}),
    ("hamming_window", (5,), {"dtype": "float64"}),
    ("kaiser_window", (4,), {"beta": 8.0}),
    ("kaiser_window", (4,), {"periodic": False, "beta": 8.0}),
]


@pytest.mark.parametrize("name, args, kwargs", _WINDOW_CALLS)
def test_window_optional_parameters_as_torch(torch, name, args, kwargs):
    # hamming_window(N, alpha=0.5) made a window where PyTorch raises TypeError
    def call(lib):
        kw = {k: getattr(lib, v) if k == "dtype" else v for k, v in kwargs.items()}
        try:
            out = getattr(lib, name)(*args, **kw)
        except TypeError as e:
            return str(e)
        return out.numpy(), str(out.dtype)
    ours, theirs = call(tapegrad), call(torch)
    if isinstance(theirs, str):
        assert ours == theirs
    else:
        assert ours[1] == theirs[1]
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6, atol=1e-7)


# ---- stft: a signal shorter than n_fft -------------------------------------------------------

@pytest.mark.parametrize("kwargs", [{"win_length": 27}, {"win_length": 20, "window": "ones"}, {},
                                    {"win_length": 40}])
def test_stft_short_signal_message_reports_win_length(torch, kwargs):
    # PyTorch words the refusal "but got n_fft=<win_length>"
    import warnings

    def call(lib):
        kw = dict(kwargs)
        if kw.get("window") == "ones":
            kw["window"] = lib.ones(kw["win_length"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")         # (the no-window warning)
            return _raises(lambda: lib.stft(lib.zeros(28), 61, center=False, return_complex=True,
                                            **kw))
    assert call(tapegrad) == call(torch)


@pytest.mark.parametrize("n_fft, frames", [(14, 1), (20, 1), (15, 1), (14, 2)])
def test_istft_single_centred_frame(torch, n_fft, frames):
    # one centred frame of an even n_fft leaves no sample: PyTorch's min() of the empty envelope
    # refuses it (tapegrad named the overlap-add test instead)
    def call(lib):
        spec = lib.ones(n_fft // 2 + 1, frames, dtype=lib.complex128)
        try:
            return lib.istft(spec, n_fft, hop_length=n_fft // 2, window=lib.hann_window(
                n_fft, dtype=lib.float64) + 0.1).numpy()
        except RuntimeError as e:
            return str(e)
    ours, theirs = call(tapegrad), call(torch)
    if isinstance(theirs, str):
        assert ours == theirs
    else:
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
