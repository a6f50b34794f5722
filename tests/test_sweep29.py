"""Cases from PyTorch's own test/test_torch.py (TestTorch, TestTorchDeviceType) where tapegrad
differed from PyTorch: each runs the same code under both libraries and compares."""
import numpy as np
import pytest

import tapegrad as tg


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:      # noqa: BLE001 - the exception type is what is compared
        return (type(e).__name__, str(e))


# -- set_ with a tensor source and a geometry; storage_offset of a storage view -----------------

def test_set_tensor_source_with_geometry_views_its_storage(torch):
    # PyTorch's set_(Tensor source, storage_offset, size, stride) views source's storage at
    # source's offset plus storage_offset; it was silently taken as set_(source).
    for T in (torch, tg):
        b = T.arange(6.)
        a = T.zeros(1).set_(b, 1, (2,))
        assert a.tolist() == [1.0, 2.0] and a.storage_offset() == 1
        a.add_(10)
        assert b.tolist() == [0.0, 11.0, 12.0, 3.0, 4.0, 5.0]
        c = T.zeros(1).set_(b[2:], 1, (2,), (2,))
        assert c.tolist() == [3.0, 5.0] and c.storage_offset() == 3 and c.stride() == (2,)
        d = T.zeros(1).set_(b, 0, (2,), (3,))
        assert d.tolist() == [0.0, 3.0]


def test_set_storage_reports_its_offset(torch):
    for T in (torch, tg):
        b = T.arange(6.)
        a = T.zeros(1).set_(b.untyped_storage(), 2, (2,))
        assert a.storage_offset() == 2 and a.data_ptr() - b.data_ptr() == 8
        i = T.zeros(1, dtype=T.int32).set_(b.untyped_storage(), 2, (2,))
        assert i.storage_offset() == 2 and i.tolist() == [1073741824, 1077936128]


def test_set_offset_without_size_is_a_type_error(torch):
    for T in (torch, tg):
        b = T.arange(6.)
        for fn in (lambda: T.zeros(1).set_(b, 1), lambda: T.zeros(1).set_(b.untyped_storage(), 1)):
            kind, msg = _outcome(fn)
            assert kind == "TypeError" and "set_() received an invalid combination" in msg


# -- dtype names in masked_scatter / put_ messages ----------------------------------------------

def test_complex_dtype_names_in_messages(torch):
    for T in (torch, tg):
        z = T.zeros(3, dtype=T.complex64)
        kind, msg = _outcome(lambda: z.clone().put_(T.tensor([1]), T.tensor([1.])))
        assert kind == "RuntimeError" and "self.dtype = ComplexFloat and source.dtype = Float" in msg
        kind, msg = _outcome(lambda: z.masked_scatter(T.tensor([True, False, True]), T.ones(3)))
        assert kind == "RuntimeError" and "ComplexFloat and Float" in msg


# -- uniform_ bounds (tapegrad filled with inf/nan or overflowed where PyTorch refuses) ----------

@pytest.mark.parametrize("dtype, lo, hi", [
    ("float32", 0, float("inf")), ("float32", -float("inf"), 0), ("float32", float("nan"), 0),
    ("float32", 0, 1e39), ("float16", 0, 1e6), ("float16", -60000, 60000),
    ("float64", -1e308, 1e308), ("float32", -3e38, 3e38), ("complex64", 0, float("inf")),
    ("float32", 5, 2)])
def test_uniform_bounds_are_checked(torch, dtype, lo, hi):
    expected = _outcome(lambda: torch.empty(3, dtype=getattr(torch, dtype)).uniform_(lo, hi))
    got = _outcome(lambda: tg.empty(3, dtype=getattr(tg, dtype)).uniform_(lo, hi))
    assert expected[0] == "RuntimeError"
    assert got == expected
    if not dtype.startswith("complex"):
        init = _outcome(lambda: tg.nn.init.uniform_(tg.empty(3, dtype=getattr(tg, dtype)), lo, hi))
        assert init == expected


def test_uniform_within_bounds_still_fills():
    t = tg.empty(1000, dtype=tg.float16).uniform_(-30000, 30000)
    assert float(t.min()) >= -30000 and float(t.max()) <= 30000


# -- bernoulli_ with a tensor p: p expands to self (expand's errors) -----------------------------

@pytest.mark.parametrize("self_shape, p_shape", [((5,), (3,)), ((5,), (2, 5)), ((2, 5), (5,))])
def test_bernoulli_tensor_p_expands(torch, self_shape, p_shape):
    expected = _outcome(lambda: tuple(torch.empty(self_shape).bernoulli_(
        torch.full(p_shape, 0.5)).shape))
    got = _outcome(lambda: tuple(tg.empty(self_shape).bernoulli_(tg.full(p_shape, 0.5)).shape))
    assert got == expected
