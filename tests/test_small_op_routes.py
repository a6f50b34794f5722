"""Short routes of small ops (ops_reduce.pxi's values_at_positions, _extra_ops.values_at): max/min
along a dim and the values of sort/topk/kthvalue/median, with and without a gradient to record,
on contiguous and strided inputs of several dtypes, against torch."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

DTYPES = ["float32", "float64", "float16", "int64", "uint8", "bool"]


def _inputs(dtype):
    rng = np.random.default_rng(7)
    base = rng.integers(-3, 4, (3, 4, 5)).astype(np.float64)    # ties on purpose
    base[0, 1, 2] = np.nan if dtype.startswith("float") else base[0, 1, 2]
    base[1, 0, 0], base[1, 0, 1] = -0.0, 0.0
    arr = base.astype(dtype) if dtype != "bool" else base > 0
    return {"contiguous": arr, "transposed": arr.transpose(2, 0, 1), "stepped": arr[:, ::2, 1:]}


def _same(got, want):
    g, w = got.detach().numpy(), want.detach().numpy()
    assert str(got.dtype) == str(want.dtype) and g.shape == w.shape
    assert g.tobytes() == np.ascontiguousarray(w).tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", ["max", "min"])
def test_max_min_along_a_dim(dtype, fn):
    torch = pytest.importorskip("torch")
    for arr in _inputs(dtype).values():
        for dim in range(3):
            for keepdim in (False, True):
                got = getattr(tg.tensor(arr), fn)(dim, keepdim)
                want = getattr(torch.tensor(arr), fn)(dim, keepdim)
                _same(got.values, want.values)
                _same(got.indices, want.indices)


def _distinct(arr):
    """Values without ties (which tied index topk/kthvalue/median return is PyTorch's algorithm's,
    not followed: docs/differences.md), in arr's layout."""
    ranks = np.argsort(np.argsort(arr, axis=None, kind="stable")).reshape(arr.shape) * 0.5 - 7
    out = np.empty_like(arr)
    out[...] = ranks
    return out


@pytest.mark.parametrize("requires_grad", [False, True])
def test_sort_and_topk_values(requires_grad):
    torch = pytest.importorskip("torch")
    for arr in _inputs("float64").values():
        for lib_call in (lambda lib, t: t.sort(1), lambda lib, t: t.sort(2, descending=True),
                         lambda lib, t: t.topk(2, 0), lambda lib, t: t.topk(3, -1, largest=False),
                         lambda lib, t: t.kthvalue(2, 1), lambda lib, t: t.median(2)):
            if lib_call.__code__.co_names[0] != "sort":
                arr = _distinct(np.nan_to_num(arr))
            x, xt = tg.tensor(arr, requires_grad=requires_grad), torch.tensor(arr, requires_grad=requires_grad)
            got, want = lib_call(tg, x), lib_call(torch, xt)
            _same(got[0], want[0])
            _same(got[1], want[1])
            if requires_grad:
                got[0].sum().backward()
                want[0].sum().backward()
                _same(x.grad, xt.grad)


INT_INPLACE = [
    ("add_ int", lambda lib: lib.tensor([1, -2, 3]).add_(5)),
    ("sub_ int", lambda lib: lib.tensor([1, -2, 3]).sub_(-7)),
    ("mul_ wraps", lambda lib: lib.tensor([2 ** 62, 5]).mul_(4)),
    ("+= 0-d tensor", lambda lib: lib.tensor([1, 2]).__iadd__(lib.tensor(3))),
    ("+= same shape", lambda lib: lib.arange(6).reshape(2, 3).__iadd__(lib.arange(6).reshape(2, 3))),
    ("-= overlapping view", lambda lib: _overlap(lib)),
    ("*= transposed", lambda lib: lib.arange(6).reshape(2, 3).t().__imul__(lib.arange(6).reshape(3, 2))),
    ("add_ alpha", lambda lib: lib.tensor([1, 2]).add_(lib.tensor([3, 4]), alpha=2)),
    ("add_ float", lambda lib: lib.tensor([1]).add_(1.5)),
    ("/= int", lambda lib: lib.tensor([1]).__itruediv__(2)),
    ("add_ bigger", lambda lib: lib.tensor([1, 2]).add_(lib.ones(2, 2, dtype=lib.int64))),
    ("add_ int32 other", lambda lib: lib.tensor([1, 2]).add_(lib.tensor([1, 2], dtype=lib.int32))),
    ("add_ bool", lambda lib: lib.tensor([1, 2]).add_(True)),
    ("add_ 2**63", lambda lib: lib.tensor(1).add_(2 ** 63)),
    ("add_ 2**64", lambda lib: lib.tensor(1).add_(2 ** 64)),
    ("add_ broadcast row", lambda lib: lib.zeros(2, 3, dtype=lib.int64).add_(lib.tensor([1, 2, 3]))),
]


def _overlap(lib):
    z = lib.tensor([1, 2, 3, 4])
    z[1:] -= z[:3]
    return z


def _int_outcome(make):
    try:
        t = make()
    except Exception as e:          # noqa: BLE001 - the exception is the outcome compared
        return type(e).__name__
    return str(t.dtype), t.tolist()


@pytest.mark.parametrize("make", [m for _, m in INT_INPLACE], ids=[n for n, _ in INT_INPLACE])
def test_int64_in_place_arithmetic_matches_torch(make):
    torch = pytest.importorskip("torch")
    assert _int_outcome(lambda: make(tg)) == _int_outcome(lambda: make(torch))


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_without_a_record(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    for name, arr in _inputs(dtype).items():
        for dim in range(3):
            for along in (1, arr.shape[dim], arr.shape[dim] + 2):
                shape = list(arr.shape)
                shape[dim] = along
                idx = rng.integers(0, arr.shape[dim], shape)
                _same(tg.tensor(arr).gather(dim, tg.tensor(idx)),
                      torch.tensor(arr).gather(dim, torch.tensor(idx)))
        idx = np.zeros(arr.shape, dtype=np.int64)
        idx[0, 0, 0] = arr.shape[1]
        for lib in (tg, torch):
            with pytest.raises(RuntimeError, match="out of bounds for dimension 1"):
                lib.tensor(arr).gather(1, lib.tensor(idx))
