"""The scatter family (tapegrad/_scatter_ops.py): scatter, scatter_add, scatter_reduce,
index_put, index_add, index_copy, index_fill and their in-place forms: values, gradients,
in-place rules and errors, against torch and against hand-computed values."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

IDX = [[0, 1, 2, 0]]


# -- values without torch ---------------------------------------------------------------------

def test_scatter_values_and_gradients():
    x = tg.zeros(3, 4, requires_grad=True)
    src = tg.arange(1.0, 5.0).reshape(1, 4).requires_grad_()
    out = x.scatter(0, tg.tensor(IDX), src)
    assert out.tolist() == [[1, 0, 0, 4], [0, 2, 0, 0], [0, 0, 3, 0]]
    (out * tg.arange(12.0).reshape(3, 4)).sum().backward()
    assert x.grad.tolist() == [[0, 1, 2, 0], [4, 0, 6, 7], [8, 9, 0, 11]]
    assert src.grad.tolist() == [[0, 5, 10, 3]]
    assert tg.scatter(tg.zeros(2, 2), 1, tg.tensor([[1], [0]]), value=7).tolist() == [[0, 7], [7, 0]]


def test_scatter_add_accumulates_repeats():
    out = tg.zeros(3).scatter_add(0, tg.tensor([0, 0, 2, 0]), tg.tensor([1.0, 2.0, 3.0, 4.0]))
    assert out.tolist() == [7.0, 0.0, 3.0]
    y = tg.ones(2, 2).scatter_add_(1, tg.tensor([[1, 1], [0, 0]]), tg.ones(2, 2))
    assert y.tolist() == [[1, 3], [3, 1]]


@pytest.mark.parametrize("reduce,include_self,expected", [
    ("sum", True, [10.0, 2.0]), ("sum", False, [9.0, 2.0]), ("prod", True, [24.0, 2.0]),
    ("prod", False, [24.0, 2.0]), ("mean", True, [2.5, 2.0]), ("mean", False, [3.0, 2.0]),
    ("amax", True, [4.0, 2.0]), ("amin", False, [2.0, 2.0]), ("max", True, [4.0, 2.0])])
def test_scatter_reduce_values(reduce, include_self, expected):
    out = tg.tensor([1.0, 2.0]).scatter_reduce(0, tg.tensor([0, 0, 0]), tg.tensor([2.0, 3.0, 4.0]),
                                               reduce, include_self=include_self)
    assert out.tolist() == expected


def test_scatter_reduce_integer_mean_floors():
    out = tg.tensor([-5, 7]).scatter_reduce(0, tg.tensor([0, 0]), tg.tensor([-2, 0]), "mean")
    assert out.tolist() == [-3, 7] and out.dtype == tg.int64


def test_index_ops_values():
    x = tg.zeros(3, 2)
    assert x.index_add(0, tg.tensor([0, 0]), tg.ones(2, 2), alpha=2).tolist() == [[4, 4], [0, 0], [0, 0]]
    assert x.index_copy(0, tg.tensor([2]), tg.tensor([[5.0, 6.0]])).tolist() == [[0, 0], [0, 0], [5, 6]]
    assert x.index_fill(1, tg.tensor([-1]), 3).tolist() == [[0, 3], [0, 3], [0, 3]]
    key = (tg.tensor([0, 0]), tg.tensor([1, 1]))
    assert x.index_put(key, tg.tensor([1.0, 2.0]), accumulate=True).tolist() == [[0, 3], [0, 0], [0, 0]]
    assert x.index_put((tg.tensor([-1]),), tg.tensor(9.0)).tolist() == [[0, 0], [0, 0], [9, 9]]
    y = tg.zeros(3)
    assert y.index_put_((tg.tensor([1, 1]),), tg.tensor(1.0), accumulate=True) is y
    assert y.tolist() == [0.0, 2.0, 0.0]


# -- gradients: float64 finite differences ------------------------------------------------------

def test_gradcheck_scatter_family(gradcheck):
    rng = np.random.default_rng(0)
    x, src = rng.standard_normal((3, 4)), rng.standard_normal((2, 4))
    index = tg.tensor([[0, 1, 2, 0], [2, 2, 1, 0]])
    gradcheck(lambda a, b: a.scatter(0, tg.tensor([[0, 1, 2, 0]]), b[:1]), x, src)
    gradcheck(lambda a, b: a.scatter_add(0, index, b), x, src)
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            gradcheck(lambda a, b: a.scatter_reduce(0, index, b, reduce, include_self=include_self), x, src)
    gradcheck(lambda a, b: a.index_add(0, tg.tensor([2, 0]), b, alpha=1.5), x, src)
    gradcheck(lambda a, b: a.index_copy(0, tg.tensor([2, 0]), b), x, src)
    gradcheck(lambda a, v: a.index_fill(1, tg.tensor([3, 1, 3]), v), x, 0.5)
    gradcheck(lambda a, v: a.index_put((tg.tensor([0, 0, 2]),), v, accumulate=True), x, src[0])
    gradcheck(lambda a, v: a.index_put((tg.tensor([1, 2]), tg.tensor([3, 0])), v), x, src[0, :2])


def test_prod_gradient_with_zero_factors(gradcheck):
    x = np.array([0.0, 2.0, 3.0])
    src = np.array([0.0, 5.0, 0.0, 4.0, 1.5])
    index = tg.tensor([0, 0, 1, 2, 2])
    gradcheck(lambda a, b: a.scatter_reduce(0, index, b, "prod"), x, src)
    gradcheck(lambda a, b: a.scatter_reduce(0, index, b, "prod", include_self=False), x, src)


# -- in-place rules -------------------------------------------------------------------------------

def test_inplace_forms_follow_the_inplace_rules():
    leaf = tg.zeros(3, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.scatter_(0, tg.tensor(IDX), tg.ones(1, 4))
    y = leaf * 2
    assert y.scatter_(0, tg.tensor(IDX), tg.ones(1, 4)) is y
    y.sum().backward()
    assert leaf.grad.tolist() == [[0, 2, 2, 0], [2, 0, 2, 2], [2, 2, 0, 2]]
    a = tg.ones(3, requires_grad=True)
    b = a * 1
    c = b * b
    b.index_fill_(0, tg.tensor([0]), 5.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()
    with tg.no_grad():
        leaf.index_add_(0, tg.tensor([1]), tg.ones(1, 4))
    assert leaf[1].tolist() == [1.0] * 4


# -- errors ------------------------------------------------------------------------------------------

def test_errors_name_arguments():
    x = tg.zeros(3, 4)
    with pytest.raises(RuntimeError, match="out of bounds for dimension 0 with size 3"):
        x.scatter(0, tg.tensor([[-1]]), tg.ones(1, 4))
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        x.scatter(0, tg.tensor(IDX), tg.ones(1, 4, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="same number of dimensions as self"):
        x.scatter(0, tg.tensor([0]), tg.ones(1, 3))
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        x.scatter_add(0, tg.tensor(IDX).float(), tg.ones(1, 4))
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod"):
        x.scatter_reduce(0, tg.tensor(IDX), tg.ones(1, 4), "add")
    with pytest.raises(RuntimeError, match="shape mismatch: value tensor of shape \\[3\\]"):
        x.index_put((tg.tensor([0, 1]),), tg.ones(3))
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0"):
        x.index_put((tg.tensor([0, 5]),), tg.tensor(1.0))
    with pytest.raises(RuntimeError, match="must have the same scalar type"):
        x.index_add(0, tg.tensor([0]), tg.ones(1, 4, dtype=tg.float64))
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        x.index_put((tg.tensor([0]),), 1.0)


# -- torch parity (randomized) ----------------------------------------------------------------------

def _run(lib, fn, arrays):
    tensors = [lib.tensor(a, requires_grad=True) for a in arrays]
    try:
        out = fn(lib, *tensors)
    except Exception as e:  # noqa: BLE001 - comparing what each library raises
        return type(e).__name__
    weights = np.cos(np.arange(out.numel())).reshape(tuple(out.shape)) + 0.5
    (out * lib.tensor(weights)).sum().backward()
    return [out.detach().numpy()] + [t.grad.numpy() for t in tensors]


def test_random_against_torch(torch):
    import warnings
    rng = np.random.default_rng(1)
    for trial in range(40):
        nd = int(rng.integers(1, 4))
        shape = tuple(int(s) for s in rng.integers(1, 4, nd))
        dim = int(rng.integers(-nd, nd))
        ishape = tuple(int(rng.integers(1, s + 1)) if d != dim % nd else int(rng.integers(1, 5))
                       for d, s in enumerate(shape))
        index = rng.integers(0, shape[dim], ishape)
        x, src = rng.standard_normal(shape), rng.standard_normal(ishape)
        if trial % 3 == 0:
            x, src = np.round(x), np.round(src)         # ties for amax/amin, zeros for prod
        k = int(rng.integers(1, 4))
        vindex = rng.integers(0, shape[dim], k)
        source_shape = list(shape)
        source_shape[dim] = k
        source = rng.standard_normal(source_shape)
        cases = [(lambda L, a, b: a.scatter(dim, L.tensor(index), b), [x, src]),
                 (lambda L, a, b: (a * 1).scatter_add_(dim, L.tensor(index), b), [x, src]),
                 (lambda L, a, b: a.index_add(dim, L.tensor(vindex), b, alpha=2), [x, source]),
                 (lambda L, a, b: a.index_copy(dim, L.tensor(vindex), b), [x, source]),
                 (lambda L, a, v: a.index_fill(dim, L.tensor(vindex), v), [x, np.array(3.0)]),
                 (lambda L, a, v: a.index_put((L.tensor(vindex),) * min(nd, 2), v,
                                              accumulate=bool(trial % 2)),
                  [x, rng.standard_normal((k,))])]
        for reduce in ("sum", "prod", "mean", "amax", "amin"):
            cases.append((lambda L, a, b, r=reduce: a.scatter_reduce(
                dim, L.tensor(index), b, r, include_self=bool(trial % 2)), [x, src]))
        for fn, arrays in cases:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theirs = _run(torch, fn, arrays)
            ours = _run(tg, fn, arrays)
            if isinstance(theirs, str):
                assert ours == theirs
                continue
            for a, b in zip(ours, theirs):
                np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
