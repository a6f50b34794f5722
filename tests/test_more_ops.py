"""Issue 15's ops (tapegrad/_more_ops.py, _more_stats.py): values, dtypes, edge cases, errors,
gradients (finite differences in float64) and parity with PyTorch."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(15)


def _raises(exc, phrase, fn, *args, **kwargs):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert phrase in str(info.value)


def _to(lib, value, requires_grad=False):
    """A numpy array (or nested tuple/list of them) as a tensor of `lib`."""
    if isinstance(value, np.ndarray):
        t = lib.tensor(value)
        return t.requires_grad_() if requires_grad else t
    if isinstance(value, tuple):
        return tuple(_to(lib, v) for v in value)
    return value


def _flat(result):
    if isinstance(result, (tuple, list)):
        return [x for r in result for x in _flat(r)]
    return [result]


def _parity(torch, name, args, kwargs=None, grad=True, method=False):
    """Same values, dtypes, shapes (and gradient of the first argument) as torch."""
    kwargs = kwargs or {}
    outs = []
    for lib in (torch, tg):
        first = _to(lib, args[0], grad)
        rest = [_to(lib, a) for a in args[1:]]
        fn = getattr(first, name) if method else getattr(lib, name)
        result = fn(*rest, **kwargs) if method else fn(first, *rest, **kwargs)
        outs.append((first, _flat(result)))
    (xt, rt), (xg, rg) = outs
    assert len(rt) == len(rg)
    for a, b in zip(rt, rg):
        assert str(a.dtype) == str(b.dtype) and tuple(a.shape) == tuple(b.shape), name
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-6)
    if grad:
        differentiable = [(a, b) for a, b in zip(rt, rg) if a.requires_grad]
        assert len(differentiable) == sum(b.requires_grad for b in rg)
        if differentiable:
            weights = [RNG.standard_normal(tuple(a.shape)) for a, _ in differentiable]
            pairs = list(zip(differentiable, weights))
            sum((a * torch.tensor(w)).sum() for (a, _), w in pairs).backward()
            sum((b * tg.tensor(w)).sum() for (_, b), w in pairs).backward()
            np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=1e-9)


def _data(*shape):
    return RNG.standard_normal(shape)


# -- torch parity of forward and gradient ------------------------------------------------------

PARITY = [
    ("repeat_interleave", (_data(2, 3), 2), {"dim": 1}),
    ("repeat_interleave", (_data(2, 3), np.array([1, 0, 2])), {"dim": -1}),
    ("repeat_interleave", (_data(2, 3), 3), {}),
    ("tensor_split", (_data(5, 2), 3), {}),
    ("tensor_split", (_data(2, 6), [1, 4, -1]), {"dim": 1}),
    ("hsplit", (_data(2, 4), 2), {}),
    ("vsplit", (_data(4, 2), [1]), {}),
    ("dsplit", (_data(1, 2, 4), 2), {}),
    ("diagonal", (_data(3, 4), 1), {}),
    ("diagonal", (_data(2, 3, 4), -1, 2, 0), {}),
    ("diag_embed", (_data(2, 3),), {}),
    ("diag_embed", (_data(2, 3), -1, 0, 2), {}),
    ("take_along_dim", (_data(3, 4), np.array([[0, 3], [1, 1], [2, 0]])), {"dim": 1}),
    ("take_along_dim", (_data(3, 4), np.array([[0, 2, 1, 1], [2, 2, 0, 0]])), {"dim": 0}),
    ("take_along_dim", (_data(3, 4), np.array([11, 0, 5])), {}),
    ("tensordot", (_data(2, 3, 4), _data(3, 4, 5)), {}),
    ("tensordot", (_data(2, 3, 4), _data(4, 2)), {"dims": ([0, 2], [1, 0])}),
    ("tensordot", (_data(2, 3), _data(4)), {"dims": 0}),
    ("kron", (_data(2, 3), _data(2, 2)), {}),
    ("kron", (_data(3), _data(2, 2)), {}),
    ("combinations", (_data(4),), {"r": 3}),
    ("combinations", (_data(3),), {"r": 2, "with_replacement": True}),
    ("cartesian_prod", (_data(2), _data(3)), {}),
    ("block_diag", (_data(2, 2), _data(3), _data(1, 2)), {}),
    ("frexp", (_data(5) * 100,), {}),
    ("median", (_data(7),), {}),
    ("median", (_data(3, 4), 1, True), {}),
    ("nanmedian", (np.array([[1.0, np.nan, 3.0, 0.5], [np.nan, 2.0, 7.0, np.nan]]), 1), {}),
    ("quantile", (_data(3, 5), np.array([0.1, 0.5, 0.93])), {"dim": 1, "keepdim": True}),
    ("quantile", (_data(3, 5), 0.3), {"interpolation": "midpoint"}),
    ("nanquantile", (np.array([[1.0, np.nan, 3.0, 0.5], [2.0, 4.0, 8.0, 6.0]]), 0.4),
     {"dim": 1}),
    ("var_mean", (_data(3, 4), 1), {"correction": 0, "keepdim": True}),
    ("std_mean", (_data(3, 4),), {}),
    ("std_mean", (_data(3, 4), (0, 1), False), {}),
    ("cummax", (_data(3, 5), 1), {}),
    ("cummin", (_data(3, 5), 0), {}),
    ("logcumsumexp", (_data(3, 5), 1), {}),
    ("trapezoid", (_data(3, 5),), {"dx": 0.5}),
    ("trapezoid", (_data(3, 5), np.array([0.0, 0.5, 1.5, 2.0, 4.0])), {}),
    ("trapz", (_data(3, 5), _data(3, 5).cumsum(1)), {"dim": 1}),
    ("cumulative_trapezoid", (_data(3, 5),), {"dim": 0}),
    ("kthvalue", (_data(3, 5), 2, 1, True), {}),
    ("msort", (_data(4, 3),), {}),
    ("take", (_data(3, 4), np.array([[0, -1], [11, 5]])), {}),
    ("inner", (_data(2, 3), _data(4, 3)), {}),
    ("diagflat", (_data(2, 2), -1), {}),
]


@pytest.mark.parametrize("name,args,kwargs", PARITY, ids=[p[0] for p in PARITY])
def test_parity_with_torch(torch, name, args, kwargs):
    _parity(torch, name, args, kwargs)


METHOD_PARITY = [
    ("repeat_interleave", (_data(2, 3), 2), {"dim": 0}),
    ("tensor_split", (_data(5), 2), {}),
    ("diagonal", (_data(3, 3),), {"offset": -1}),
    ("diag_embed", (_data(3),), {}),
    ("take_along_dim", (_data(3), np.array([2, 2])), {"dim": 0}),
    ("kron", (_data(2), _data(2)), {}),
    ("median", (_data(2, 3),), {"dim": 0}),
    ("quantile", (_data(6), 0.25), {}),
    ("cummax", (_data(6),), {"dim": 0}),
    ("logcumsumexp", (_data(6),), {"dim": 0}),
    ("frexp", (_data(6),), {}),
    ("argwhere", (np.array([[0.0, 1.0], [2.0, 0.0]]),), {}),
]


@pytest.mark.parametrize("name,args,kwargs", METHOD_PARITY, ids=[p[0] for p in METHOD_PARITY])
def test_method_parity_with_torch(torch, name, args, kwargs):
    _parity(torch, name, args, kwargs, grad=name != "argwhere", method=True)


# -- finite differences (float64) ----------------------------------------------------------------

GRADCHECK = [
    ("repeat_interleave", lambda x: tg.repeat_interleave(x, tg.tensor([2, 0, 1]), dim=1), (2, 3)),
    ("tensor_split", lambda x: tg.tensor_split(x, [1, 3], dim=0)[1] * 3, (4, 2)),
    ("diagonal", lambda x: tg.diagonal(x, 1, 0, 2) ** 2, (3, 2, 4)),
    ("diag_embed", lambda x: tg.diag_embed(x, -1) ** 2, (2, 3)),
    ("take_along_dim", lambda x: tg.take_along_dim(x, tg.tensor([[1, 1, 0]]), 0) ** 2, (2, 3)),
    ("tensordot", lambda x: tg.tensordot(x, x, dims=([0], [0])), (3, 2)),
    ("kron", lambda x: tg.kron(x, x), (2, 2)),
    ("block_diag", lambda x: tg.block_diag(x, x[0]) ** 2, (2, 2)),
    ("cartesian_prod", lambda x: tg.cartesian_prod(x, x * 2) ** 2, (3,)),
    ("combinations", lambda x: tg.combinations(x, 2).prod(1), (4,)),
    ("vander", lambda x: tg.vander(x, 4), (3,)),
    ("fill_diagonal_", lambda x: (x * 1).fill_diagonal_(2.0) ** 2, (3, 3)),
    ("frexp", lambda x: tg.frexp(x * 10).mantissa, (4,)),
    ("median", lambda x: tg.median(x) * tg.median(x, 1).values.sum(), (3, 5)),
    ("nanmedian", lambda x: tg.nanmedian(x, 0, keepdim=True).values, (4, 3)),
    ("quantile", lambda x: tg.quantile(x, tg.tensor([0.2, 0.7], dtype=tg.float64), dim=1),
     (3, 5)),
    ("nanquantile", lambda x: tg.nanquantile(x, 0.6, interpolation="midpoint"), (2, 5)),
    ("var_mean", lambda x: tg.stack(tg.var_mean(x, 1)), (3, 4)),
    ("std_mean", lambda x: tg.stack(tg.std_mean(x, 0, correction=0)), (3, 4)),
    ("cummax", lambda x: tg.cummax(x, 1).values ** 2, (3, 5)),
    ("cummin", lambda x: tg.cummin(x, 0).values ** 2, (4, 3)),
    ("logcumsumexp", lambda x: tg.logcumsumexp(x, 1) ** 2, (3, 5)),
    ("trapezoid", lambda x: tg.trapezoid(x ** 2, dx=0.3), (3, 4)),
    ("trapezoid_x", lambda x: tg.trapezoid(x, x ** 2), (6,)),
    ("cumulative_trapezoid", lambda x: tg.cumulative_trapezoid(x ** 2, dim=0), (3, 4)),
    ("kthvalue", lambda x: tg.kthvalue(x, 3, 0).values ** 2, (4, 3)),
    ("take", lambda x: tg.take(x, tg.tensor([[0, 0], [-1, 3]])) ** 2, (2, 3)),
    ("inner", lambda x: tg.inner(x, x * x), (2, 3)),
]


@pytest.mark.parametrize("name,fn,shape", GRADCHECK, ids=[g[0] for g in GRADCHECK])
def test_gradcheck(gradcheck, name, fn, shape):
    gradcheck(fn, np.random.default_rng(1).standard_normal(shape))


def test_vander_forward_parity(torch):
    """(PyTorch's own vander backward fails with an in-place error; gradcheck covers ours.)"""
    _parity(torch, "vander", (_data(4),), {"N": 3}, grad=False)
    _parity(torch, "vander", (np.array([1, 2, 3]),), {"increasing": True}, grad=False)


def test_logcumsumexp_second_order(torch):
    """The backward is recorded: create_graph gives PyTorch's second derivative."""
    data = _data(5)
    grads = []
    for lib in (torch, tg):
        x = lib.tensor(data, requires_grad=True)
        (g,) = lib.autograd.grad(lib.logcumsumexp(x, 0).pow(2).sum(), x, create_graph=True)
        g.sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


# -- values without torch -----------------------------------------------------------------------

def test_nonzero_and_argwhere_values():
    x = tg.tensor([[0, 3], [4, 0]])
    assert x.nonzero().tolist() == [[0, 1], [1, 0]]
    assert tg.argwhere(x).dtype == tg.int64
    rows, cols = tg.nonzero(x, as_tuple=True)
    assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0]
    assert tg.nonzero(tg.tensor(5.0)).shape == (1, 0)
    assert tg.nonzero(tg.tensor(0.0)).shape == (0, 0)
    assert [t.tolist() for t in tg.nonzero(tg.tensor(5.0), as_tuple=True)] == [[0]]
    assert tg.nonzero(tg.zeros(0, 3)).shape == (0, 2)


def test_nonzero_out():
    out = tg.empty(0, dtype=tg.int64)
    assert tg.nonzero(tg.tensor([1.0, 0.0, 2.0]), out=out) is out
    assert out.tolist() == [[0], [2]]
    _raises(RuntimeError, "Expected out tensor to have scalar type Long", tg.nonzero,
            tg.tensor([1.0]), out=tg.zeros(1))
    _raises(RuntimeError, "does not support the out kwarg when as_tuple is True", tg.nonzero,
            tg.tensor([1.0]), out=out, as_tuple=True)


def test_repeat_interleave_values_and_errors():
    assert tg.repeat_interleave(tg.tensor([1, 2]), 2).tolist() == [1, 1, 2, 2]
    assert tg.repeat_interleave(tg.tensor([2, 0, 1])).tolist() == [0, 0, 2]
    x = tg.tensor([[1, 2], [3, 4]])
    assert x.repeat_interleave(tg.tensor([1, 2]), dim=0).tolist() == [[1, 2], [3, 4], [3, 4]]
    assert x.repeat_interleave(tg.tensor(2), dim=1, output_size=4).shape == (2, 4)
    assert tg.repeat_interleave(tg.tensor(3.0), 2).tolist() == [3.0, 3.0]
    _raises(RuntimeError, "repeats must have the same size as input along dim",
            tg.repeat_interleave, x, tg.tensor([1, 2, 3]), dim=0)
    _raises(RuntimeError, "repeats can not be negative", tg.repeat_interleave, x,
            tg.tensor([1, -1]), dim=0)
    _raises(RuntimeError, "Repeats must be non-negative", tg.repeat_interleave, x, -1)
    _raises(RuntimeError, "repeats must be 0-dim or 1-dim tensor", tg.repeat_interleave, x,
            tg.tensor([[1, 2]]), dim=0)
    _raises(NotImplementedError, "not implemented for 'Float'", tg.repeat_interleave, x,
            tg.tensor([1.0, 2.0]), dim=0)
    _raises(RuntimeError, "Invalid output_size, expected 4 but got 3", tg.repeat_interleave,
            tg.tensor([1, 2]), 2, output_size=3)
    _raises(RuntimeError, "allocated size does not match required size",
            tg.repeat_interleave, tg.tensor([1, 2]), tg.tensor([1, 2]), output_size=4)
    _raises(IndexError, "Dimension out of range", tg.repeat_interleave, x, 2, dim=2)


def test_tensor_split_and_directional_splits():
    x = tg.arange(7)
    assert [p.tolist() for p in x.tensor_split(3)] == [[0, 1, 2], [3, 4], [5, 6]]
    assert [p.tolist() for p in tg.tensor_split(x, tg.tensor([2, 5]))] == [[0, 1], [2, 3, 4],
                                                                           [5, 6]]
    assert [p.shape[0] for p in tg.tensor_split(x, [5, 2])] == [5, 0, 5]
    assert len(tg.tensor_split(x, tg.tensor(2))) == 2
    _raises(RuntimeError, "expected at least a 1-dimensional tensor", tg.tensor_split,
            tg.tensor(1), 2)
    _raises(RuntimeError, "number of sections must be larger than 0, got 0", tg.tensor_split,
            x, 0)
    _raises(RuntimeError, "to have dtype of long, but got Float", tg.tensor_split, x,
            tg.tensor([1.0]))
    _raises(RuntimeError, "zero-dimensional or one-dimensional tensor", tg.tensor_split, x,
            tg.tensor([[1]]))
    assert [p.shape for p in tg.hsplit(tg.ones(2, 4), 2)] == [(2, 2), (2, 2)]
    _raises(RuntimeError, "not divisible by the split_size 2", tg.hsplit, tg.ones(3), 2)
    _raises(RuntimeError, "torch.vsplit requires a tensor with at least 2 dimension",
            tg.vsplit, tg.ones(3), 1)
    _raises(RuntimeError, "torch.dsplit requires a tensor with at least 3 dimension",
            tg.dsplit, tg.ones(3, 3), 1)


def test_diagonals():
    m = tg.arange(12.0).reshape(3, 4)
    assert m.diagonal().tolist() == [0.0, 5.0, 10.0]
    assert tg.diagonal(m, 2).tolist() == [2.0, 7.0]
    assert tg.diagonal(m, -5).shape == (0,)
    assert tg.diagonal(tg.ones(2, 3, 4), 0, -1, 0).shape == (3, 2)
    _raises(RuntimeError, "diagonal dimensions cannot be identical 1, -1", tg.diagonal, m, 0, 1,
            -1)
    _raises(IndexError, "Dimension out of range", tg.diagonal, tg.ones(3))
    d = tg.diag_embed(tg.tensor([[1.0, 2.0]]), offset=1)
    assert d.tolist() == [[[0.0, 1.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]]
    assert tg.diag_embed(tg.ones(2, 3), 0, 0, 2).shape == (3, 2, 3)
    assert tg.diag_embed(tg.tensor([True])).dtype == tg.bool
    _raises(RuntimeError, "diagonal dimensions cannot be identical 0, 0", tg.diag_embed,
            tg.ones(3), 0, 0, 0)
    _raises(IndexError, "Dimension out of range", tg.diag_embed, tg.tensor(2.0))


def test_fill_diagonal_():
    x = tg.zeros(5, 2)
    assert x.fill_diagonal_(3.0) is x
    assert x.tolist() == [[3.0, 0.0], [0.0, 3.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]
    y = tg.zeros(5, 2).fill_diagonal_(1.0, wrap=True)
    assert y[:, 0].tolist() == [1.0, 0.0, 0.0, 1.0, 0.0]
    assert tg.zeros(2, 2, 2).fill_diagonal_(1)[1, 1, 1].item() == 1
    _raises(RuntimeError, "dimensions must larger than 1", tg.ones(3).fill_diagonal_, 1)
    _raises(RuntimeError, "all dimensions of input must be of equal length",
            tg.ones(3, 3, 2).fill_diagonal_, 1)
    leaf = tg.ones(2, 2, requires_grad=True)
    _raises(RuntimeError, "a leaf Variable that requires grad", leaf.fill_diagonal_, 0.0)


def test_take_along_dim_errors_and_broadcast():
    x = tg.arange(6.0).reshape(2, 3)
    assert tg.take_along_dim(x, tg.tensor([[2], [0]]), 1).tolist() == [[2.0], [3.0]]
    assert tg.take_along_dim(x, tg.tensor([[1]]), 0).shape == (1, 3)
    _raises(RuntimeError, "dtype of indices should be Long but got Int", tg.take_along_dim, x,
            tg.tensor([[1]], dtype=tg.int32), 0)
    _raises(RuntimeError, "should have the same number of dimensions", tg.take_along_dim, x,
            tg.tensor([1]), 0)
    out = tg.empty(0)
    assert tg.take_along_dim(x, tg.tensor([5, 0]), out=out) is out
    assert out.tolist() == [5.0, 0.0]


def test_tensordot_and_kron_values_and_errors():
    a, b = tg.arange(6.0).reshape(2, 3), tg.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(tg.tensordot(a, b, 1).numpy(), a.numpy() @ b.numpy())
    assert tg.tensordot(a, b, dims=tg.tensor(1)).shape == (2, 4)
    assert tg.tensordot(a, b.T, dims=tg.tensor([[1], [1]])).shape == (2, 4)
    assert tg.tensordot(tg.ones(2, 3, dtype=tg.int64), tg.ones(3, dtype=tg.int64), 1).dtype \
        == tg.int64
    _raises(RuntimeError, "contracted dimensions need to match, but first has size 3 in dim -1 "
            "and second has size 4 in dim 0", tg.tensordot, a, tg.ones(4, 5), 1)
    _raises(RuntimeError, "tensordot expects dims >= 0, but got dims=-1", tg.tensordot, a, b, -1)
    _raises(RuntimeError, "tensordot expects dims < ndim_a or ndim_b", tg.tensordot, a, b, 3)
    _raises(RuntimeError, "both inputs should have same dtype", tg.tensordot, a,
            b.double(), 1)
    _raises(RuntimeError, "both dimension lists should have same length", tg.tensordot, a, b,
            ([1], [0, 1]))
    _raises(RuntimeError, "appears multiple times in the list of dims", tg.tensordot, a, b,
            ([1, 1], [0, 0]))
    _raises(TypeError, "must be tuple of ints, not int", tg.tensordot, a, b, (1, 0))
    k = tg.kron(tg.tensor([[1, 2], [3, 4]]), tg.tensor([[0, 1], [1, 0]]))
    np.testing.assert_array_equal(k.numpy(), np.kron([[1, 2], [3, 4]], [[0, 1], [1, 0]]))
    assert tg.kron(tg.tensor(2), tg.tensor(3.0)).tolist() == 6.0
    assert tg.kron(tg.ones(2, dtype=tg.int64), tg.ones(2)).dtype == tg.float32


def test_combinatorics_values_and_errors():
    v = tg.tensor([1, 2, 3])
    assert tg.combinations(v).tolist() == [[1, 2], [1, 3], [2, 3]]
    assert tg.combinations(v, 0).shape == (0,)
    assert tg.combinations(v, 4).shape == (0, 4)
    assert tg.cartesian_prod(v, tg.tensor([5, 6])).tolist()[:3] == [[1, 5], [1, 6], [2, 5]]
    assert tg.cartesian_prod(v) is v
    _raises(RuntimeError, "Expect a 1D vector, but got shape [1, 3]", tg.combinations, v[None])
    _raises(RuntimeError, "Expect a non-negative number, but got -1", tg.combinations, v, -1)
    _raises(RuntimeError, "meshgrid expects all tensors to have the same dtype",
            tg.cartesian_prod, v, tg.tensor([1.0]))
    bd = tg.block_diag(tg.tensor(1), tg.tensor([1.0, 2.0]), tg.ones(2, 2, dtype=tg.int32))
    assert bd.shape == (4, 5) and bd.dtype == tg.float32 and bd.sum().item() == 8.0
    assert tg.block_diag().shape == (1, 0)
    _raises(RuntimeError, "Input tensors must have 2 or fewer dimensions. Input 0 has 3",
            tg.block_diag, tg.ones(1, 1, 1))
    assert tg.vander(tg.tensor([1, 2, 3])).tolist() == [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    assert tg.vander(tg.tensor([True, False])).dtype == tg.int64
    assert tg.vander(tg.tensor([2.0]), N=0).shape == (1, 0)
    _raises(RuntimeError, "x must be a one-dimensional tensor.", tg.vander, tg.tensor(1.0))
    _raises(RuntimeError, "N must be non-negative.", tg.vander, v, -1)


def test_isin_promote_types_frexp():
    assert tg.isin(tg.tensor([1, 2, 3]), tg.tensor([2.0, 5.0])).tolist() == [False, True, False]
    assert tg.isin(tg.tensor([1, 2]), 2, invert=True).tolist() == [True, False]
    assert tg.isin(2, tg.tensor([1, 2])).item() is True
    assert not tg.isin(tg.tensor([math.nan]), tg.tensor([math.nan])).item()
    _raises(TypeError, "isin() received an invalid combination of arguments", tg.isin, 2, 3)
    _raises(RuntimeError, "Unsupported input type encountered for isin(): Bool", tg.isin,
            tg.tensor([True]), tg.tensor([1]))
    assert tg.promote_types(tg.int8, tg.uint8) == tg.int16
    assert tg.promote_types(tg.int64, tg.float16) == tg.float16
    assert tg.promote_types(tg.bool, tg.bool) == tg.bool
    _raises(TypeError, "argument 'type1' (position 1) must be torch.dtype, not int",
            tg.promote_types, 1, tg.uint8)
    mantissa, exponent = tg.frexp(tg.tensor([0.0, 8.0, -3.5, math.inf]))
    assert mantissa.tolist()[:3] == [0.0, 0.5, -0.875] and exponent.dtype == tg.int32
    assert exponent.tolist() == [0, 4, 2, 0]
    _raises(RuntimeError, "only supports floating-point dtypes", tg.frexp, tg.tensor([1]))


def test_median_values_and_errors():
    assert tg.median(tg.tensor([3, 1, 2, 4])).item() == 2          # the lower median
    assert math.isnan(tg.median(tg.tensor([1.0, math.nan, 0.0])).item())
    assert tg.nanmedian(tg.tensor([1.0, math.nan, 0.0, 5.0])).item() == 1.0
    assert math.isnan(tg.median(tg.tensor([])).item())
    values, indices = tg.median(tg.tensor([[1.0, math.nan, 2.0, math.nan]]), 1)
    assert math.isnan(values.item()) and indices.item() == 1
    result = tg.nanmedian(tg.tensor([math.nan, 1.0, math.nan]), 0)
    assert result.values.item() == 1.0 and result.indices.item() == 1
    assert type(result).__name__ == "nanmedian"
    m = tg.median(tg.tensor(3.0), 0)
    assert m.values.item() == 3.0 and m.indices.item() == 0
    assert tg.median(tg.ones(2, 3), 1, keepdim=True).values.shape == (2, 1)
    _raises(IndexError, "median(): Expected reduction dim 0 to have non-zero size.", tg.median,
            tg.tensor([]), 0)
    _raises(NotImplementedError, "\"median_cpu\" not implemented for 'Bool'", tg.median,
            tg.tensor([True]))
    out = (tg.empty(0), tg.empty(0, dtype=tg.int64))
    tg.median(tg.tensor([[1.0, 5.0, 2.0]]), 1, out=out)
    assert out[0].tolist() == [2.0] and out[1].tolist() == [2]
    _raises(RuntimeError, "'indices' to have scalar type Long", tg.median, tg.ones(1, 2), 1,
            out=(tg.empty(0), tg.empty(0)))
    x = tg.ones(3, requires_grad=True)
    _raises(RuntimeError, "functions with out=... arguments don't support automatic "
            "differentiation", tg.median, x, 0, out=out)


def test_median_gradient_shared_among_ties():
    """PyTorch's global median sends the gradient evenly to every element equal to it."""
    x = tg.tensor([1.0, 2.0, 2.0, 3.0, 2.0], requires_grad=True)
    tg.median(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [0, 1 / 3, 1 / 3, 0, 1 / 3])
    assert type(tg.median(x).grad_fn).__name__ == "MedianBackward0"


def test_quantile_values_and_errors():
    x = tg.tensor([0.0, 1.0, 2.0, 3.0])
    assert tg.quantile(x, 0.5).item() == 1.5
    expected = {"linear": 2.1, "lower": 2.0, "higher": 3.0, "midpoint": 2.5, "nearest": 2.0}
    for mode, value in expected.items():
        assert tg.quantile(x.double(), 0.7, interpolation=mode).item() == pytest.approx(value)
    assert tg.quantile(tg.ones(2, 3), tg.tensor([0.5, 0.2]), dim=1, keepdim=True).shape \
        == (2, 2, 1)
    assert tg.quantile(tg.ones(2, 3), 0.5, keepdim=True).shape == (1, 1)
    assert math.isnan(tg.quantile(tg.tensor([1.0, math.nan]), 0.1).item())
    assert tg.nanquantile(tg.tensor([1.0, math.nan, 3.0]), 0.5).item() == 2.0
    _raises(RuntimeError, "quantile() input tensor must be either float or double dtype",
            tg.quantile, tg.tensor([1, 2]), 0.5)
    _raises(RuntimeError, "quantile() q must be in the range [0, 1] but got 1.5", tg.quantile,
            x, 1.5)
    _raises(RuntimeError, "quantile() q values must be in the range [0, 1]", tg.quantile, x,
            tg.tensor([1.5]))
    _raises(RuntimeError, "q tensor must be same dtype as the input tensor", tg.quantile, x,
            tg.tensor([0.5], dtype=tg.float64))
    _raises(RuntimeError, "q must be a scalar or 1D tensor", tg.quantile, x, tg.tensor([[0.5]]))
    _raises(RuntimeError, "interpolation must be one of linear, lower, higher, midpoint or "
            "nearest, but got foo", tg.quantile, x, 0.5, interpolation="foo")
    _raises(RuntimeError, "quantile() input tensor must be non-empty", tg.nanquantile,
            tg.tensor([]), 0.5)


def test_var_mean_std_mean():
    x = tg.tensor([[1.0, 2.0], [3.0, 5.0]])
    var, mean = tg.var_mean(x, 1)
    assert var.tolist() == [0.5, 2.0] and mean.tolist() == [1.5, 4.0]
    var, mean = tg.var_mean(x, 0, False)          # (dim, unbiased) positionally
    assert var.tolist() == [1.0, 2.25]
    var, mean = tg.var_mean(x, True)              # (unbiased) positionally
    assert mean.item() == 2.75
    std, mean = tg.std_mean(x, (0, 1), keepdim=True, correction=0)
    assert std.shape == mean.shape == (1, 1)
    assert isinstance(tg.std_mean(x), tuple)
    _raises(RuntimeError, "std_mean only support floating point and complex dtypes",
            tg.std_mean, tg.tensor([1, 2]))
    _raises(RuntimeError, "var_mean only support floating point and complex dtypes",
            tg.var_mean, tg.tensor([1, 2]))


def test_running_extremes():
    values, indices = tg.cummax(tg.tensor([1, 3, 3, 2]), 0)
    assert values.tolist() == [1, 3, 3, 3] and indices.tolist() == [0, 1, 2, 2]
    result = tg.cummin(tg.tensor([1.0, math.nan, 0.0, math.nan, -1.0]), 0)
    assert result.indices.tolist() == [0, 1, 1, 3, 3]
    assert type(result).__name__ == "cummin"
    assert tg.cummax(tg.tensor([True, False]), 0).indices.tolist() == [0, 0]
    assert tg.cummax(tg.tensor(2.0), 0).indices.item() == 0
    assert tg.cummax(tg.ones(2, 0), 1).values.shape == (2, 0)
    _raises(IndexError, "Dimension out of range", tg.cummin, tg.ones(2), 1)


def test_logcumsumexp_values():
    x = tg.tensor([-1000.0, 0.0, -math.inf, 1.0])
    y = tg.logcumsumexp(x, 0)
    np.testing.assert_allclose(y.numpy(), [-1000.0, 0.0, 0.0, math.log(math.e + 1)],
                               rtol=1e-6)
    assert tg.logcumsumexp(tg.tensor(2.0), 0).item() == 2.0
    _raises(NotImplementedError, "\"logcumsumexp_out_cpu\" not implemented for 'Long'",
            tg.logcumsumexp, tg.tensor([1, 2]), 0)


def test_trapezoid_family():
    assert tg.trapezoid(tg.tensor([1, 2, 4])).item() == 4.5
    assert tg.trapezoid(tg.tensor([1, 2, 4]), dx=2).item() == 9.0
    assert tg.trapezoid(tg.tensor([1.0, 2.0, 4.0]), tg.tensor([1.0, 2.0, 5.0])).item() == 10.5
    assert tg.trapz(tg.ones(2, 3), dx=2).tolist() == [4.0, 4.0]
    empty = tg.trapezoid(tg.ones(2, 0, requires_grad=True))
    assert empty.tolist() == [0.0, 0.0] and not empty.requires_grad
    assert tg.trapezoid(tg.ones(2, 0, dtype=tg.int64)).dtype == tg.int64
    assert tg.cumulative_trapezoid(tg.tensor([1.0, 2.0, 4.0]), tg.tensor([0.0, 1.0, 3.0])
                                   ).tolist() == [1.5, 7.5]
    _raises(RuntimeError, "There must be one `x` value for each sample point", tg.trapezoid,
            tg.tensor([1.0, 2.0, 4.0]), tg.tensor([1.0, 2.0]))
    _raises(TypeError, "invalid combination of arguments", tg.trapezoid, tg.ones(3),
            tg.ones(3), dx=2)
    _raises(IndexError, "Dimension specified as -1 but tensor has no dimensions", tg.trapezoid,
            tg.tensor(1.0))


def test_searchsorted_and_bucketize():
    b = tg.tensor([1, 3, 5])
    assert tg.searchsorted(b, tg.tensor([3, 4])).tolist() == [1, 2]
    assert tg.searchsorted(b, tg.tensor([3, 4]), right=True).tolist() == [2, 2]
    assert tg.searchsorted(b, tg.tensor([3]), side="right").tolist() == [2]
    assert tg.searchsorted(b, 3).shape == ()
    assert tg.searchsorted(b, tg.tensor([3]), out_int32=True).dtype == tg.int32
    rows = tg.tensor([[1, 3, 5], [1, 2, 3]])
    assert tg.searchsorted(rows, tg.tensor([[3], [3]])).tolist() == [[1], [2]]
    assert tg.searchsorted(tg.tensor([5, 3, 1]), tg.tensor([3]),
                           sorter=tg.tensor([2, 1, 0])).tolist() == [1]
    assert tg.bucketize(tg.tensor([3, 4]), b).tolist() == [1, 2]
    assert tg.bucketize(3, b, right=True).item() == 2
    out = tg.empty(0, dtype=tg.int64)
    assert tg.searchsorted(b, tg.tensor([0, 9]), out=out) is out and out.tolist() == [0, 3]
    _raises(RuntimeError, "side and right can't be set to opposites", tg.searchsorted, b,
            tg.tensor([3]), right=True, side="left")
    _raises(RuntimeError, "side can only be 'left' or 'right' but got foo", tg.searchsorted, b,
            tg.tensor([3]), side="foo")
    _raises(RuntimeError, "the first N-1 dimensions of boundaries tensor and input value tensor "
            "must match", tg.searchsorted, rows, tg.tensor([3]))
    _raises(RuntimeError, "input value can be a scalar only when boundaries tensor dimension is "
            "1", tg.searchsorted, rows, 3)
    _raises(RuntimeError, "boundaries tensor should have positive dimension", tg.searchsorted,
            tg.tensor(3), tg.tensor([3]))
    _raises(RuntimeError, "sorter must be a tensor of long dtype but got dtype Float",
            tg.searchsorted, b, tg.tensor([3]), sorter=tg.tensor([2.0, 1.0, 0.0]))
    _raises(RuntimeError, "sorter index out of range", tg.searchsorted, b, tg.tensor([3]),
            sorter=tg.tensor([2, 1, 7]))
    _raises(RuntimeError, "boundaries tensor must be 1 dimension, but got dim(2)", tg.bucketize,
            tg.tensor([3]), rows)
    _raises(RuntimeError, "output tensor's dtype is wrong", tg.searchsorted, b, tg.tensor([3]),
            out=tg.zeros(1))


def test_kthvalue_take_inner_diagflat_msort():
    result = tg.kthvalue(tg.tensor([3.0, math.nan, 2.0]), 3)
    assert math.isnan(result.values.item()) and result.indices.item() == 1
    assert type(result).__name__ == "kthvalue"
    assert tg.tensor([[3, 1, 2]]).kthvalue(2, 1, keepdim=True).values.tolist() == [[2]]
    _raises(RuntimeError, "kthvalue(): selected number k out of range for dimension 0",
            tg.kthvalue, tg.tensor([1.0]), 2)
    _raises(IndexError, "kthvalue(): Expected reduction dim 0 to have non-zero size.",
            tg.kthvalue, tg.tensor([]), 1)
    _raises(NotImplementedError, "\"kthvalue_cpu\" not implemented for 'Bool'", tg.kthvalue,
            tg.tensor([True]), 1)
    assert tg.msort(tg.tensor([[3, 1], [0, 2]])).tolist() == [[0, 1], [3, 2]]
    x = tg.tensor([[1, 2], [3, 4]])
    assert tg.take(x, tg.tensor([[3, 0]])).tolist() == [[4, 1]]
    assert x.take(tg.tensor([-1])).tolist() == [4]
    _raises(IndexError, "out of range: tried to access index 4 on a tensor of 4 elements.",
            tg.take, x, tg.tensor([4]))
    _raises(RuntimeError, "take(): Expected a long tensor for index, but got Float", tg.take, x,
            tg.tensor([1.0]))
    _raises(IndexError, "take(): tried to take from an empty tensor", tg.take, tg.ones(0),
            tg.tensor([0]))
    assert tg.inner(tg.tensor(2.0), tg.tensor([1.0, 2.0])).tolist() == [2.0, 4.0]
    assert tg.inner(tg.ones(2, 3), tg.ones(4, 3)).shape == (2, 4)
    _raises(RuntimeError, "inner() the last dimension must match on both input tensors but got "
            "shapes [2] and [3]", tg.inner, tg.ones(2), tg.ones(3))
    assert tg.diagflat(tg.ones(2, 2), 1).shape == (5, 5)


def test_out_argument_resizes_with_warning_and_checks_dtype():
    out = tg.zeros(1)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        tg.kron(tg.ones(2), tg.ones(2), out=out)
    assert out.shape == (4,)
    _raises(RuntimeError, "result type Float can't be cast to the desired output type Long",
            tg.kron, tg.ones(2), tg.ones(2), out=tg.empty(0, dtype=tg.int64))
    # tensordot's out takes no cast at all, even a widening one (PyTorch's check)
    _raises(RuntimeError, "tensordot: Expected the output tensor to have dtype Float, but got an "
            "output tensor with dtype Double", tg.tensordot, tg.ones(2, 2), tg.ones(2, 2),
            out=tg.empty(0, dtype=tg.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same = tg.empty(0)
        tg.tensordot(tg.ones(2, 2), tg.ones(2, 2), out=same)
        assert same.dtype == tg.float32 and same.item() == 4.0
    mantissa, exponent = tg.empty(0), tg.empty(0, dtype=tg.int32)
    tg.frexp(tg.tensor([4.0]), out=(mantissa, exponent))
    assert mantissa.tolist() == [0.5] and exponent.tolist() == [3]


def test_methods_registered_where_torch_has_them():
    for name in ("kthvalue", "msort", "take", "inner", "diagflat", "nonzero", "argwhere",
                 "repeat_interleave", "tensor_split", "hsplit", "vsplit",
                 "dsplit", "take_along_dim", "diagonal", "diag_embed", "fill_diagonal_", "kron",
                 "frexp", "median", "nanmedian", "quantile", "nanquantile", "cummax", "cummin",
                 "logcumsumexp"):
        assert hasattr(tg.Tensor, name), name
    for name in ("tensordot", "block_diag", "cartesian_prod", "combinations", "vander",
                 "promote_types", "var_mean", "std_mean", "searchsorted", "bucketize",
                 "trapezoid", "trapz", "cumulative_trapezoid", "isin"):
        assert hasattr(tg, name), name


@pytest.mark.parametrize("shape,offset,dims", [((3, 3), 0, (0, 1)), ((3, 4), 1, (0, 1)),
                                               ((4, 3), -2, (0, 1)), ((2, 3, 3), 0, (1, 2)),
                                               ((3, 3, 2), 1, (0, 1))])
def test_diagonal_is_a_view_writes_reach_the_input(shape, offset, dims):
    """x.diagonal() is a view as PyTorch's: fill_ through it changes x (it was a copy, so the
    write was silently lost), and the gradient of a later use still flows."""
    a = np.arange(float(np.prod(shape))).reshape(shape)
    x = tg.tensor(a.copy())
    x.diagonal(offset, *dims).fill_(-1.0)
    expected = a.copy()
    idx = np.indices(shape)
    on_diag = idx[dims[1]] - idx[dims[0]] == offset
    expected[on_diag] = -1.0
    assert np.array_equal(x.numpy(), expected)
    w = tg.tensor(a, requires_grad=True)
    (w.diagonal(offset, *dims) * 2.0).sum().backward()
    assert np.array_equal(w.grad.numpy(), np.where(on_diag, 2.0, 0.0))
