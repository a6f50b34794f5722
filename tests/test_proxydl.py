"""What the proxy of differentiable sorting and ranking scripts (SoftSort, NeuralSort, Sinkhorn,
sparsemax/entmax, ListNet/ListMLE/LambdaRank, searchsorted/bucketize) found tapegrad lacked:
the "<name>_out" result types of out= calls, out= for lu_unpack and torch.slogdet, and
PyTorch's refusal of a list or None as searchsorted's / bucketize's values."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


def _torch():
    return pytest.importorskip("torch")


# -- out= calls return torch.return_types.<name>_out ----------------------------------------------

_OUT_CALLS = {
    "sort": lambda m, x: m.sort(x, 1, out=(m.empty(0), m.empty(0, dtype=m.long))),
    "topk": lambda m, x: m.topk(x, 2, out=(m.empty(0), m.empty(0, dtype=m.long))),
    "kthvalue": lambda m, x: m.kthvalue(x, 2, out=(m.empty(0), m.empty(0, dtype=m.long))),
    "cummax": lambda m, x: m.cummax(x, 1, out=(m.empty(0), m.empty(0, dtype=m.long))),
    "max": lambda m, x: m.max(x, 1, out=(m.empty(0), m.empty(0, dtype=m.long))),
    "median": lambda m, x: m.median(x, 1, out=(m.empty(0), m.empty(0, dtype=m.long))),
    "aminmax": lambda m, x: m.aminmax(x, out=(m.empty(0), m.empty(0))),
    "linalg_slogdet": lambda m, x: m.linalg.slogdet(x[:, :2], out=(m.empty(0), m.empty(0))),
}


@pytest.mark.parametrize("name", sorted(_OUT_CALLS))
def test_out_call_returns_the_out_result_type_as_pytorch(name):
    torch = _torch()
    call = _OUT_CALLS[name]
    data = [[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]]
    want = call(torch, torch.tensor(data))
    got = call(tg, tg.tensor(data))
    assert type(got).__name__ == type(want).__name__ == name + "_out"
    assert repr(got).splitlines()[0] == repr(want).splitlines()[0]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
    assert getattr(tg.return_types, name + "_out") is type(got)
    # (a call without out= keeps the plain type)
    assert type(tg.sort(tg.tensor(data), 1)).__name__ == "sort"


def test_out_result_type_fields_and_histogramdd_has_no_twin():
    torch = _torch()
    got = tg.topk(tg.tensor([3.0, 1.0, 2.0]), 2, out=(tg.empty(0), tg.empty(0, dtype=tg.long)))
    assert got.values.tolist() == [3.0, 2.0] and got.indices.tolist() == [0, 2]
    assert hasattr(torch.return_types, "sort_out") and hasattr(tg.return_types, "sort_out")
    assert not hasattr(torch.return_types, "histogramdd_out")
    assert not hasattr(tg.return_types, "histogramdd_out")


# -- out= of lu_unpack and torch.slogdet -----------------------------------------------------------

def test_lu_unpack_and_slogdet_take_out_like_pytorch():
    torch = _torch()
    a = [[4.0, 3.0], [6.0, 3.0]]
    for m in (torch, tg):
        lu, piv = m.linalg.lu_factor(m.tensor(a))
        outs = (m.empty(0), m.empty(0), m.empty(0))
        res = m.lu_unpack(lu, piv, out=outs)
        assert type(res).__name__ == "lu_unpack_out"
        assert all(r is o for r, o in zip(res, outs))
    want = torch.lu_unpack(*torch.linalg.lu_factor(torch.tensor(a)))
    got = tg.lu_unpack(*tg.linalg.lu_factor(tg.tensor(a)), out=(tg.empty(0), tg.empty(0),
                                                                tg.empty(0)))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
    s, l = tg.empty(0), tg.empty(0)
    res = tg.slogdet(tg.tensor(a), out=(s, l))
    want = torch.slogdet(torch.tensor(a), out=(torch.empty(0), torch.empty(0)))
    assert type(res).__name__ == type(want).__name__ == "slogdet_out"
    assert res[0] is s and float(s) == float(want[0])
    assert float(l) == pytest.approx(float(want[1]), rel=1e-6)


# -- searchsorted / bucketize refuse values that are neither a Tensor nor a Number ---------------

@pytest.mark.parametrize("values", [[1.5], (1.5,), None, "x"])
def test_searchsorted_and_bucketize_refuse_non_number_values_as_pytorch(values):
    torch = _torch()
    for fn, args in (("searchsorted", lambda m: (m.tensor([1.0, 2.0]), values)),
                     ("bucketize", lambda m: (values, m.tensor([1.0, 2.0])))):
        with pytest.raises(TypeError) as want:
            getattr(torch, fn)(*args(torch))
        with pytest.raises(TypeError) as got:
            getattr(tg, fn)(*args(tg))
        assert str(got.value) == str(want.value)
    # a Number still searches (a bool is one)
    assert tg.searchsorted(tg.tensor([1.0, 2.0]), True).item() == \
        torch.searchsorted(torch.tensor([1.0, 2.0]), True).item()
    assert tg.bucketize(2, tg.tensor([1, 2, 5]), right=True).item() == 2
