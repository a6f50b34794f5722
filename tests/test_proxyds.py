"""Differences found by running state-space-model / linear-recurrence scripts (S4, LRU, Mamba,
RWKV, RetNet) under tapegrad and PyTorch: each test replays the idiom in both and compares."""
import warnings

import numpy as np
import pytest

import tapegrad as tg


def _outcome(fn):
    """(exception type name, message) of fn(), or ("ok", result)."""
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__, str(e)


# -- clip_grad_value_ on complex gradients (LRU / S4 complex parameters) -----------------------

def _clip_value_case(lib):
    real = lib.nn.Parameter(lib.ones(2))
    cplx = lib.nn.Parameter(lib.ones(2, dtype=lib.complex64))
    real64 = lib.nn.Parameter(lib.ones(2, dtype=lib.float64))
    real.grad = lib.tensor([5.0, -0.5])
    cplx.grad = lib.tensor([5 + 0j, 0.5 - 3j], dtype=lib.complex64)
    real64.grad = lib.tensor([-7.0, 0.25], dtype=lib.float64)
    kind, msg = _outcome(lambda: lib.nn.utils.clip_grad_value_([cplx, real, real64], 1.0))
    return kind, msg, real.grad.numpy(), cplx.grad.numpy(), real64.grad.numpy()


def test_clip_grad_value_refuses_complex_gradients(torch):
    ours, theirs = _clip_value_case(tg), _clip_value_case(torch)
    assert ours[0] == theirs[0] == "NotImplementedError"
    assert "clamp is not supported for complex types" in ours[1]
    # the real gradients are clipped before the complex one refuses; the complex one is untouched
    for a, b in zip(ours[2:], theirs[2:]):
        np.testing.assert_array_equal(a, b)


def test_clip_grad_value_real_gradients_unchanged_behaviour(torch):
    def run(lib):
        p = lib.nn.Parameter(lib.zeros(3))
        p.grad = lib.tensor([3.0, -0.2, -9.0])
        lib.nn.utils.clip_grad_value_(p, 0.5)
        return p.grad.numpy()
    np.testing.assert_array_equal(run(tg), run(torch))


# -- view_as_complex's storage offset ------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda lib: lib.arange(7.0)[1:].view(3, 2),                          # odd offset: refused
    lambda lib: lib.arange(8.0)[2:].view(3, 2),                          # even offset: a view
    lambda lib: lib.arange(8.0).view(4, 2)[1:],
    lambda lib: lib.view_as_real(lib.zeros(4, dtype=lib.complex64)).flatten()[1:7].view(3, 2),
    lambda lib: lib.view_as_real(lib.zeros(4, dtype=lib.complex64))[1:],
])
def test_view_as_complex_storage_offset(torch, make):
    def run(lib):
        kind, out = _outcome(lambda: lib.view_as_complex(make(lib)))
        return kind, (out if kind != "ok" else out.numpy())
    ours, theirs = run(tg), run(torch)
    assert ours[0] == theirs[0]
    if ours[0] == "ok":
        np.testing.assert_array_equal(ours[1], theirs[1])
    else:
        assert "storage_offset divisible by 2" in ours[1] and ours[1] == theirs[1]


# -- complex logcumsumexp at log(0) and NaN (Heinsen's log-space scan over complex logs) --------

_INF, _NAN = float("inf"), float("nan")
_SPECIAL = [complex(-_INF, 0), complex(-_INF, np.pi), complex(-_INF, -1.0), complex(_INF, 0),
            complex(_INF, 2.0), complex(1, 1), complex(0, np.pi), complex(_NAN, 0),
            complex(1, _NAN), complex(-_INF, _NAN)]


@pytest.mark.parametrize("first", _SPECIAL)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_logcumsumexp_special_values(torch, first, dtype):
    seq = [first] + _SPECIAL
    ours = tg.logcumsumexp(tg.tensor(seq, dtype=getattr(tg, dtype)), 0).numpy()
    theirs = torch.logcumsumexp(torch.tensor(seq, dtype=getattr(torch, dtype)), 0).numpy()
    # (parts apart: NaNs compare equal, and -inf+pi*j differs from -inf+0j)
    np.testing.assert_allclose(ours.real, theirs.real, rtol=1e-6)
    np.testing.assert_allclose(ours.imag, theirs.imag, rtol=1e-6)


def test_complex_logcumsumexp_leading_log_zero_scan(torch):
    """log of a sequence starting with 0 and holding negatives (the log-space scan's input):
    the phase of exp(-inf) is PyTorch's (+0j), and the scan's exp gives back the cumsum."""
    vals = [0.0, -1.0, 2.0, -3.0, 0.5]
    def run(lib):
        z = lib.log(lib.tensor(vals, dtype=lib.float64).to(lib.complex128))
        return lib.logcumsumexp(z, 0).numpy()
    ours, theirs = run(tg), run(torch)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    assert str(ours[0]) == str(theirs[0])
    np.testing.assert_allclose(np.exp(ours).real, np.cumsum(vals), atol=1e-12)


# -- complex initialisers that PyTorch refuses ----------------------------------------------------

@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("call", [
    lambda lib, t: lib.nn.init.orthogonal_(t),
    lambda lib, t: lib.nn.init.trunc_normal_(t),
    lambda lib, t: lib.nn.init.trunc_normal_(t, a=3.0, b=4.0),
    lambda lib, t: lib.nn.init.trunc_normal_(t, std=0.02, a=-0.001, b=0.001),
    lambda lib, t: lib.nn.init.trunc_normal_(t[:0]),
])
def test_complex_init_refusals(torch, dtype, call):
    def run(lib):
        return _outcome(lambda: call(lib, lib.zeros(3, 4, dtype=getattr(lib, dtype))))[:2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (trunc_normal_'s "mean is more than 2 std")
        ours, theirs = run(tg), run(torch)
    assert ours[0] == theirs[0] == "NotImplementedError"
    assert ours[1] == theirs[1]


def test_complex_orthogonal_of_empty_is_a_no_op(torch):
    for lib in (tg, torch):
        t = lib.zeros(0, 3, dtype=lib.complex64)
        assert lib.nn.init.orthogonal_(t) is t
