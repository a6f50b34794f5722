"""Differences found by running state-space-model / linear-recurrence scripts (S4, LRU, Mamba,
RWKV, RetNet) under tapegrad and PyTorch: each test replays the idiom in both and compares."""
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
