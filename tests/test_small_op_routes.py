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
