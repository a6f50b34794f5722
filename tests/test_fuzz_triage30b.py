"""Regressions of the session-30 fuzz run of fuzz17 (compile-mode programs 62703600-, programs
60671705-, the extended generator's 65017249-; surface 60803943-).

Each test compares with PyTorch (skipped cleanly without it).
"""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _outcome(lib, make, op):
    x = make(lib)
    try:
        op(lib, x)
    except Exception as e:  # noqa: BLE001 - the outcome compared is the exception's type
        return type(e).__name__, "single memory location" in str(e)
    return "ran", tuple(x.shape)


# -- a write whose source is the tensor itself, without elements -------------------------------
# PyTorch's overlap test finds a tensor overlapping itself fully before it looks at elements, so
# the index and scatter writes refuse x as their own source even when x is empty; but x[k] = x
# first views the value without its leading size-1 dims (another tensor), whose empty memory
# shares nothing: x of shape (1, 0) is written (fuzz seed 62705660).

def _long(L):
    return L.tensor([], dtype=L.long)


_SELF_WRITES = {
    "setitem_mask": lambda L, x: x.__setitem__(x > 0, x),
    "setitem_index": lambda L, x: x.__setitem__(_long(L), x),
    "index_put_mask": lambda L, x: x.index_put_((x > 0,), x),
    "index_put_index": lambda L, x: x.index_put_((_long(L),), x),
    "index_put_accumulate": lambda L, x: x.index_put_((_long(L),), x, accumulate=True),
    "scatter_": lambda L, x: x.scatter_(0, L.zeros(x.shape, dtype=L.long), x),
    "scatter_add_": lambda L, x: x.scatter_add_(0, L.zeros(x.shape, dtype=L.long), x),
    "scatter_reduce_": lambda L, x: x.scatter_reduce_(0, L.zeros(x.shape, dtype=L.long), x,
                                                      "amax"),
    "put_": lambda L, x: x.put_(_long(L), x),
    "index_add_1d": lambda L, x: x.index_add_(0, _long(L), x) if x.ndim == 1 else None,
    "index_copy_1d": lambda L, x: x.index_copy_(0, _long(L), x) if x.ndim == 1 else None,
}


@pytest.mark.parametrize("shape", [(0,), (1, 0), (1, 1, 0), (2, 0), (1, 3), (2,)])
@pytest.mark.parametrize("name", sorted(_SELF_WRITES))
def test_write_of_a_tensor_into_itself_refused_or_run_as_torch(name, shape):
    op = _SELF_WRITES[name]

    def make(L):
        return -L.ones(shape) if 0 not in shape else L.zeros(shape)
    expected = _outcome(torch, make, op)
    got = _outcome(tg, make, op)
    if expected[0] == "RuntimeError" and expected[1]:
        assert got == expected
    else:
        assert got[0] == expected[0]


def test_setitem_of_an_empty_1xN_tensor_into_itself_records_as_torch():
    # the fuzz program: the written tensor requires grad (IndexPutBackward0), no elements
    for L in (torch, tg):
        w = L.zeros(1, 3, requires_grad=True)
        x = L.nn.functional.linear(w, L.zeros(0, 3, requires_grad=True),
                                   L.zeros(0, requires_grad=True))
        x[x > 0] = x
        assert tuple(x.shape) == (1, 0) and x.requires_grad
        assert type(x.grad_fn).__name__ == "IndexPutBackward0"
        (w * 2).sum().backward()
        np.testing.assert_array_equal(np.asarray(w.grad.tolist()), np.full((1, 3), 2.0))


def test_one_element_self_index_put_with_a_mask_is_masked_fill_as_torch():
    # (one element and a mask: PyTorch's masked_fill_, which checks no overlap)
    for shape in [(1,), (1, 1)]:
        for L in (torch, tg):
            x = L.ones(shape)
            x.index_put_((x > 0,), x)
            x[x > 0] = x
            assert x.tolist() == torch.ones(shape).tolist()


@pytest.mark.parametrize("index", [[0, 1], [5, 6, 7], [[0]]])
def test_index_copy_refuses_a_shared_source_before_checking_the_index(index):
    # PyTorch wraps dim, then refuses the overlap, then checks the index (its length, range and
    # rank): the overlap's RuntimeError, not the index's IndexError
    make = lambda L: L.zeros(3)  # noqa: E731
    op = lambda L, x: x.index_copy_(0, L.tensor(index), x)  # noqa: E731
    assert _outcome(tg, make, op) == _outcome(torch, make, op) == ("RuntimeError", True)
    op = lambda L, x: x.index_copy_(0, L.tensor(index), x[:2])  # noqa: E731
    assert _outcome(tg, make, op) == _outcome(torch, make, op) == ("RuntimeError", True)
