"""IeeeResults: the core's errstate(all="ignore"), entered through numpy's error-state variable.

Ops return IEEE values (inf, nan) without warnings, as PyTorch does, and leave the caller's
numpy error state exactly as they found it, whatever that state is and however guards nest.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _core


def test_inside_the_guard_numpy_ignores_every_error():
    with np.errstate(all="raise"):
        with _core.IeeeResults():
            assert np.geterr() == {"divide": "ignore", "over": "ignore", "under": "ignore",
                                   "invalid": "ignore"}
            one = np.ones(3)
            np.testing.assert_array_equal(one / 0, np.full(3, np.inf))
            assert np.isnan(np.float64(0) / np.float64(0))
        assert np.geterr()["divide"] == "raise"


def test_the_callers_state_is_restored_after_nesting_and_after_an_exception():
    with np.errstate(divide="raise", over="warn", invalid="print", under="ignore"):
        before = np.geterr()
        with _core.IeeeResults():
            with _core.IeeeResults():
                pass
            assert np.geterr()["divide"] == "ignore"
        assert np.geterr() == before
        with pytest.raises(ZeroDivisionError):
            with _core.IeeeResults():
                raise ZeroDivisionError("propagates")
        assert np.geterr() == before


def test_a_changed_outer_state_is_seen_by_the_next_guard():
    # The guard caches the "ignore all" state it derives; a different outer state (here a new
    # buffer size) must give a new one, not the cached one.
    old = np.getbufsize()
    try:
        with _core.IeeeResults():
            pass
        np.setbufsize(16384)
        with _core.IeeeResults():
            assert np.getbufsize() == 16384
            assert np.geterr()["over"] == "ignore"
        assert np.getbufsize() == 16384
    finally:
        np.setbufsize(old)


def test_ops_return_ieee_values_without_warnings_and_keep_the_callers_state():
    x = tg.tensor([1e38, -1e38, 0.0], dtype=tg.float32, requires_grad=True)
    w = tg.tensor([[1e38, 1e38, 0.0]], dtype=tg.float32, requires_grad=True)
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        y = tg.nn.functional.linear(x * 10, w)           # the product overflows in the GEMM
        (y.sum() + (x / 0).sum()).backward()
        assert np.geterr()["over"] == "raise"
    # PyTorch 2.13 prints the same: y = [nan] (inf - inf in the product), x.grad = [inf, inf,
    # inf] (10 * 1e38 overflows; 1/0), w.grad = [[inf, -inf, 0]].
    assert np.isnan(y.item())
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, np.inf, np.float32))
    np.testing.assert_array_equal(w.grad.numpy(), np.array([[np.inf, -np.inf, 0]], np.float32))
