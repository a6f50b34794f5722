"""The factories' short routes (creation.py): tensor() of a flat or 2-d list of Python floats/ints
(_plain_number_array), zeros/ones/full's fill, and a size of plain ints (_size_args).  Each must
give what the general route gives and what PyTorch gives: dtype, values (signed zeros and
non-finite values included) and errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tapegrad as tg

TENSOR_DATA = [
    [1.0, 2.0, 3.0], [1, 2, 3], [1.0, 2], [2, 1.5], [1, -0.0], [-0.0], [float("nan"), 1e40, -1e40],
    [float("inf")], [1e-46], [1.5, True], [True, False], [True, 2], [[1.0, 2.0], [3.0, 4.0]],
    [[1, 2], [3, 4]], [[1.0], [2]], [[]], [[], []], [[1, 2], [3]], [[1.0, 2.0], 3.0], [1, 2 ** 63],
    [2 ** 64], [[1, 2 ** 63]], [-2 ** 63], [-2 ** 63 - 1], [1.0, 2 ** 63], [0.1, 0.2, 0.7],
    [[[1.0, 2.0]], [[3.0, 4.0]]], [1 + 2j, 3.0],
]


def _outcome(fn):
    try:
        t = fn()
    except Exception as e:          # noqa: BLE001 - the exception is the outcome compared
        return type(e).__name__, str(e)
    return str(t.dtype), tuple(t.shape), t.detach().numpy().tobytes(), t.requires_grad


@pytest.mark.parametrize("data", TENSOR_DATA, ids=repr)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_tensor_of_python_numbers_matches_torch(data, requires_grad):
    torch = pytest.importorskip("torch")
    got = _outcome(lambda: tg.tensor(data, requires_grad=requires_grad))
    want = _outcome(lambda: torch.tensor(data, requires_grad=requires_grad))
    assert got[0] == want[0]        # dtype, or the exception's type
    if len(want) > 2:
        assert got == want


def test_tensor_of_ints_beyond_int64_is_pytorchs_overflow():
    for data in ([1, 2 ** 63], [2 ** 64], [[1, 2 ** 63]], [-2 ** 63 - 1]):
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            tg.tensor(data)


def test_tensor_under_float64_default_dtype():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        lib.set_default_dtype(lib.float64)
    try:
        for data in ([0.1, 2], [[0.1], [0.2]], [1, 2]):
            got, want = tg.tensor(data), torch.tensor(data)
            assert str(got.dtype) == str(want.dtype)
            assert got.numpy().tobytes() == want.numpy().tobytes()
    finally:
        for lib in (tg, torch):
            lib.set_default_dtype(lib.float32)


FILLS = [
    ("zeros", lambda lib: lib.zeros(2, 3)),
    ("zeros tuple", lambda lib: lib.zeros((2, 3), dtype=lib.int32)),
    ("zeros size", lambda lib: lib.zeros(lib.Size([2, 0]))),
    ("zeros 0-d", lambda lib: lib.zeros(())),
    ("ones", lambda lib: lib.ones(3, dtype=lib.float16)),
    ("ones bool", lambda lib: lib.ones(2, dtype=lib.bool)),
    ("ones complex", lambda lib: lib.ones([2], dtype=lib.complex64)),
    ("full -0.0", lambda lib: lib.full((2,), -0.0)),
    ("full nan", lambda lib: lib.full((2,), math.nan, dtype=lib.float64)),
    ("full int", lambda lib: lib.full((2, 2), 7)),
    ("full uint8 wrap", lambda lib: lib.full((2,), -200, dtype=lib.uint8)),
    ("full bool", lambda lib: lib.full((1,), True)),
    ("full complex", lambda lib: lib.full((2,), 1 - 2j)),
    ("full f16 huge", lambda lib: lib.full((1,), 1e6, dtype=lib.float16)),
    ("full f16 huge 2", lambda lib: lib.full((2,), 1e6, dtype=lib.float16)),
    ("zeros negative", lambda lib: lib.zeros(2, -1)),
    ("ones negative", lambda lib: lib.ones(-1)),
    ("zeros float size", lambda lib: lib.zeros(2.0)),
    ("zeros numpy int", lambda lib: lib.zeros(np.int64(2), 3)),
    ("zeros bool size", lambda lib: lib.zeros(True)),
    ("zeros requires_grad", lambda lib: lib.zeros(2, requires_grad=True)),
    ("ones int requires_grad", lambda lib: lib.ones(2, dtype=lib.int64, requires_grad=True)),
]


@pytest.mark.parametrize("make", [m for _, m in FILLS], ids=[n for n, _ in FILLS])
def test_filled_factories_match_torch(make):
    torch = pytest.importorskip("torch")
    got, want = _outcome(lambda: make(tg)), _outcome(lambda: make(torch))
    assert got[0] == want[0]        # dtype, or the exception's type
    if len(want) > 2:
        assert got == want
