"""`dtype=` arguments as PyTorch's argument parser checks them: a dtype or Python's float/int/bool/
complex; a string or a numpy dtype is a TypeError naming the function and the type it got."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _calls(lib):
    """(name, call taking a dtype argument) over representative factories, reductions and methods."""
    t = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
    return [
        ("zeros", lambda d: lib.zeros(2, 3, dtype=d)),
        ("ones", lambda d: lib.ones(2, dtype=d)),
        ("empty", lambda d: lib.empty(2, dtype=d)),
        ("full", lambda d: lib.full((2,), 1, dtype=d)),
        ("tensor", lambda d: lib.tensor([1, 2], dtype=d)),
        ("as_tensor", lambda d: lib.as_tensor([1, 2], dtype=d)),
        ("arange", lambda d: lib.arange(3, dtype=d)),
        ("linspace", lambda d: lib.linspace(0, 1, 3, dtype=d)),
        ("zeros_like", lambda d: lib.zeros_like(t, dtype=d)),
        ("new_zeros", lambda d: t.new_zeros((2,), dtype=d)),
        ("sum", lambda d: t.sum(dtype=d)),
        ("cumsum", lambda d: t.cumsum(0, dtype=d)),
        ("softmax", lambda d: lib.softmax(t, 0, dtype=d)),
        ("to", lambda d: t.to(d)),
        ("type", lambda d: t.type(d)),
        ("to_dense", lambda d: t.to_dense(d)),
    ]


NAMES = [name for name, _ in _calls(tg)]
BAD = {"str": "float", "numpy_type": np.float32, "numpy_dtype": np.dtype("float64")}


def _outcome(call, d):
    try:
        result = call(d)
    except Exception as exc:                            # noqa: BLE001 - compared with torch's
        return type(exc), str(exc)
    return None, str(result.dtype)


@pytest.mark.parametrize("bad", list(BAD), ids=list(BAD))
@pytest.mark.parametrize("name", NAMES)
def test_bad_dtype_raises_as_torch_does(name, bad):
    ours = dict(_calls(tg))[name]
    theirs = dict(_calls(torch))[name]
    got_type, got_msg = _outcome(ours, BAD[bad])
    want_type, want_msg = _outcome(theirs, BAD[bad])
    if want_type is None:                               # torch accepts it (Tensor.type('...'))
        assert got_type is None, got_msg
        assert got_msg.replace("tapegrad", "torch") == want_msg
        return
    assert got_type is want_type, (got_msg, want_msg)
    if want_type is TypeError and "must be torch.dtype" in want_msg:
        # the key phrase: which argument, and what type was given
        assert "must be torch.dtype" in got_msg, got_msg
        assert type(BAD[bad]).__name__ in got_msg, got_msg


@pytest.mark.parametrize("valid", ["float64", "int32", float, int, bool], ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_valid_dtype_gives_torchs_dtype(name, valid):
    ours = dict(_calls(tg))[name]
    theirs = dict(_calls(torch))[name]
    d_ours = getattr(tg, valid) if isinstance(valid, str) else valid
    d_theirs = getattr(torch, valid) if isinstance(valid, str) else valid
    got_type, got = _outcome(ours, d_ours)
    want_type, want = _outcome(theirs, d_theirs)
    assert got_type is want_type, (got, want)
    if want_type is None:
        assert got.replace("tapegrad", "torch") == want


def test_internal_default_dtypes_still_work():
    # factories that infer a dtype internally (full from its value; normal, binomial through full)
    assert tg.full((2,), True).dtype == tg.bool and tg.full((2,), 3).dtype == tg.int64
    assert tg.full((2,), 1.5).dtype == tg.float32 and tg.full((1,), 1j).dtype == tg.complex64
    tg.manual_seed(0)
    assert tg.normal(0.0, 1.0, (3,)).dtype == tg.float32
    assert tg.binomial(tg.full((4,), 10.0), tg.full((4,), 0.5)).dtype == tg.float32


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "uint8", "bool"])
def test_integer_sum_keeps_the_requested_dtype(name):
    # was SILENT: numpy widened the sum to int64 (and summed bools as counts) under dtype=
    data = [[100, 27, 3], [0, 1, 120]]
    ours = tg.tensor(data, dtype=tg.int64).sum(dim=1, dtype=getattr(tg, name))
    theirs = torch.tensor(data, dtype=torch.int64).sum(dim=1, dtype=getattr(torch, name))
    assert str(ours.dtype).replace("tapegrad", "torch") == str(theirs.dtype)
    assert ours.tolist() == theirs.tolist()
    assert tg.tensor(data, dtype=tg.int16).sum(dtype=tg.int16).dtype == tg.int16
