"""The scatter family, fill/zero_/detach at torch level, the split variants, sum_to_size,
resize_, apply_/map_, H/mH/adjoint, dim_order and is_set_to (tapegrad._more_tensor_ops)."""
import warnings

import numpy as np
import pytest

import tapegrad as tg

rng = np.random.default_rng(2)


def _randn(*shape):
    return rng.standard_normal(shape)


_X = _randn(2, 3)
CASES = [
    ("select_scatter", (_X, _randn(2), 1, -1), {}),
    ("select_scatter", (_X, np.array([7, 8]), 1, 0), {}),
    ("slice_scatter", (_X, _randn(2, 2), 1, 1), {}),
    ("slice_scatter", (_X, _randn(2, 2), 1, 0, 3, 2), {}),
    ("slice_scatter", (_X, _randn(1, 3)), {"start": -1}),
    ("diagonal_scatter", (_X, _randn(2)), {}),
    ("diagonal_scatter", (_X, _randn(2), 1), {}),
    ("diagonal_scatter", (_randn(2, 3, 4), _randn(4, 2), 0, 0, 1), {}),
    ("masked_scatter", (_X, np.array([True, False, True]), _randn(10)), {}),
    ("masked_scatter", (_X, np.ones((2, 2, 3), dtype=bool), _randn(20)), {}),
    ("put", (_X, np.array([0, -1]), _randn(2)), {}),
    ("put", (_X, np.array([0, 0]), _randn(2), True), {}),
    ("index_reduce", (_X, 0, np.array([0, 0, 1]), _randn(3, 3), "prod"), {}),
    ("index_reduce", (_X, 1, np.array([0, 0, 1]), _randn(2, 3), "mean"),
     {"include_self": False}),
    ("index_reduce", (_X, 1, np.array([0, 0, 1]), _randn(2, 3), "amax"), {}),
    ("fill", (_X, np.array(3.0)), {}),
    ("split_with_sizes", (_X, [1, 2], 1), {}),
    ("unsafe_split", (_X, 2, 1), {}),
    ("unsafe_chunk", (_X, 2, 1), {}),
    ("unsafe_split_with_sizes", (_X, [2, 1], 1), {}),
    ("adjoint", (_randn(2, 3, 4),), {}),
]


def _args(lib, args):
    return [lib.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray) else a
            for a in args]


@pytest.mark.parametrize("name,args,kwargs", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_matches_torch(torch, name, args, kwargs):
    theirs, ours = _args(torch, args), _args(tg, args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # index_reduce's beta warning
        expected, got = getattr(torch, name)(*theirs, **kwargs), getattr(tg, name)(*ours, **kwargs)
    if isinstance(expected, tuple):
        assert len(got) == len(expected)
        expected = torch.cat([e.reshape(-1) for e in expected])
        got = tg.cat([g.reshape(-1) for g in got])
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-7)
    weights = rng.standard_normal(tuple(expected.shape))
    (expected * torch.tensor(weights)).sum().backward()
    (got * tg.tensor(weights)).sum().backward()
    for a, b in zip(theirs, ours):
        if isinstance(a, torch.Tensor) and a.grad is not None:
            np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("fn,arrays", [
    (lambda x, s: tg.select_scatter(x, s, 0, 1), (_randn(3, 2), _randn(2))),
    (lambda x, s: tg.slice_scatter(x, s, 1, 0, 4, 2), (_randn(2, 4), _randn(2, 2))),
    (lambda x, s: tg.diagonal_scatter(x, s, -1), (_randn(3, 3), _randn(2))),
    (lambda x, s: tg.masked_scatter(x, tg.tensor([[True, False], [False, True]]), s),
     (_randn(2, 2), _randn(3))),
    (lambda x, s: tg.put(x, tg.tensor([3, 0, 3]), s, accumulate=True), (_randn(2, 2), _randn(3))),
    (lambda x, s: x.index_reduce(0, tg.tensor([1, 1, 0]), s, "prod"),
     (_randn(2, 2), _randn(3, 2))),
    (lambda x: x.sum_to_size(1, 3), (_randn(2, 3),)),
])
def test_gradcheck(gradcheck, fn, arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradcheck(fn, *arrays)


def test_scatter_values_without_torch():
    x = tg.zeros(2, 3)
    np.testing.assert_array_equal(tg.select_scatter(x, tg.tensor([1.0, 2.0]), 1, 0).numpy(),
                                  [[1, 0, 0], [2, 0, 0]])
    np.testing.assert_array_equal(tg.slice_scatter(x, tg.ones(2, 2), 1, 0, 3, 2).numpy(),
                                  [[1, 0, 1], [1, 0, 1]])
    np.testing.assert_array_equal(tg.diagonal_scatter(x, tg.tensor([5.0, 6.0]), 1).numpy(),
                                  [[0, 5, 0], [0, 0, 6]])
    np.testing.assert_array_equal(
        tg.masked_scatter(x, tg.tensor([True, False, True]), tg.arange(10.0, 20.0)).numpy(),
        [[10, 0, 11], [12, 0, 13]])
    y = tg.arange(6.0).reshape(2, 3)
    assert y.put_(tg.tensor([0, -1]), tg.tensor([9.0, 8.0])) is y
    np.testing.assert_array_equal(y.numpy(), [[9, 1, 2], [3, 4, 8]])
    with pytest.warns(UserWarning, match="index_reduce\\(\\) is in beta"):
        r = tg.ones(2, 2).index_reduce(0, tg.tensor([0, 0]), tg.full((2, 2), 3.0), "prod")
    np.testing.assert_array_equal(r.numpy(), [[9, 9], [1, 1]])


@pytest.mark.parametrize("call,error,match", [
    (lambda: tg.select_scatter(tg.ones(2, 3), tg.ones(3), 1, 0), RuntimeError,
     "expected src to have a size equal to the slice of self. src size = \\[3\\], slice size "
     "= \\[2\\]"),
    (lambda: tg.select_scatter(tg.ones(2, 3), tg.ones(2), 1, 5), IndexError,
     "select\\(\\): index 5 out of range for tensor of size \\[2, 3\\] at dimension 1"),
    (lambda: tg.masked_scatter(tg.ones(2, 3), tg.tensor([True, True, True]), tg.ones(2)),
     RuntimeError, "Number of elements of source < number of ones in mask"),
    (lambda: tg.masked_scatter(tg.ones(2, 3), tg.tensor([1, 0, 1]), tg.ones(9)), RuntimeError,
     "masked_scatter_ only supports boolean masks, but got mask with dtype Long"),
    (lambda: tg.ones(2, 3).masked_scatter_(tg.ones(2, 2, 3, dtype=tg.bool), tg.ones(12)),
     RuntimeError, "the number of sizes provided \\(2\\) must be greater or equal"),
    (lambda: tg.put(tg.ones(2, 3), tg.tensor([6]), tg.ones(1)), IndexError,
     "out of range: tried to access index 6 on a tensor of 6 elements"),
    (lambda: tg.put(tg.ones(2, 3), tg.tensor([1.0]), tg.ones(1)), RuntimeError,
     "Expected a long tensor for index, but got Float"),
    (lambda: tg.put(tg.ones(2, 3), tg.tensor([1]), tg.tensor([1])), RuntimeError,
     "self and source expected to have the same dtype"),
    (lambda: tg.ones(2, 3).index_reduce(1, tg.tensor([0, 0, 1]), tg.ones(2, 3), "sum"),
     RuntimeError, "Expected reduce to be one of prod, mean, amax or amin but got sum"),
    (lambda: tg.fill(tg.ones(2), tg.ones(1)), RuntimeError,
     "fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions"),
    (lambda: tg.split_with_sizes(tg.ones(2, 3), [1, 1], 1), RuntimeError,
     "split_with_sizes expects split_sizes to sum exactly to 3"),
    (lambda: tg.ones(2, 3).sum_to_size(4), RuntimeError,
     "size \\{\\[4\\]\\} is not expandable to size \\{\\[2, 3\\]\\}"),
])
def test_errors(call, error, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=match):
            call()


def test_torch_level_fill_zero_detach():
    leaf = tg.ones(3, requires_grad=True)
    filled = tg.fill(leaf, 2.0)
    assert filled.requires_grad and filled.grad_fn.name() == "FillBackward0"
    filled.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [0, 0, 0])
    value = tg.tensor(3.0, requires_grad=True)
    tg.fill(tg.ones(4), value).sum().backward()
    assert value.grad.item() == 4.0
    x = tg.ones(2)
    assert tg.fill_(x, 5) is x and x.tolist() == [5.0, 5.0]
    assert tg.zero_(x) is x and x.tolist() == [0.0, 0.0]
    assert not tg.detach(leaf).requires_grad
    y = leaf * 2
    assert tg.detach_(y) is y and not y.requires_grad


def test_sum_to_size_values():
    x = tg.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(x.sum_to_size(1, 3).numpy(), [[3, 5, 7]])
    np.testing.assert_array_equal(x.sum_to_size((3,)).numpy(), [3, 5, 7])
    np.testing.assert_array_equal(x.sum_to_size(2, 1).numpy(), [[3], [12]])


def test_resize_keeps_shared_storage():
    """torch.Tensor(t) aliases t; resize_ within the storage keeps the alias (Atcold's tensor
    tutorial: r = torch.Tensor(t); r.resize_(3, 8); r.zero_() zeroes t)."""
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        t = lib.arange(24.0).reshape(2, 3, 4)
        r = lib.Tensor(t)
        r.resize_(3, 8)
        assert r.data_ptr() == t.data_ptr()
        r.zero_()
        assert float(t.abs().sum()) == 0.0
        r.resize_(2)
        r.fill_(5.0)
        np.testing.assert_array_equal(t.reshape(-1)[:3].numpy(), [5.0, 5.0, 0.0])
    for lib in (tg, torch):                      # a strided view: laid out from its offset
        base = lib.arange(6.0)
        y = base[1::2]
        y.resize_(2)
        np.testing.assert_array_equal(y.numpy(), [1.0, 2.0])
        y.resize_(5)                             # still inside the storage: no copy
        y.fill_(-1.0)
        np.testing.assert_array_equal(base.numpy(), [0.0] + [-1.0] * 5)


def test_resize():
    x = tg.arange(6.0).reshape(2, 3)
    assert x.resize_(3, 2) is x
    np.testing.assert_array_equal(x.numpy(), [[0, 1], [2, 3], [4, 5]])
    x.resize_(2, 2)
    np.testing.assert_array_equal(x.numpy(), [[0, 1], [2, 3]])
    x.resize_as_(tg.ones(3))
    np.testing.assert_array_equal(x.numpy(), [0, 1, 2])
    assert tuple(x.resize_(4, 2).shape) == (4, 2)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        tg.ones(3, requires_grad=True).resize_(2)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        assert tuple(tg.ones(2, 3).resize(3, 2).shape) == (3, 2)
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        with pytest.raises(RuntimeError, match="autograd's resize can only change the shape"):
            tg.ones(2, 3).resize_as(tg.ones(3))


def test_apply_and_map():
    x = tg.arange(6.0).reshape(2, 3)
    assert x.apply_(lambda v: v * 2) is x
    np.testing.assert_array_equal(x.numpy(), [[0, 2, 4], [6, 8, 10]])
    x.map_(tg.ones(3), lambda a, b: a + b)
    np.testing.assert_array_equal(x.numpy(), [[1, 3, 5], [7, 9, 11]])
    x.map2_(tg.ones(3), tg.ones(2, 1), lambda a, b, c: a - b - c)
    np.testing.assert_array_equal(x.numpy(), [[-1, 1, 3], [5, 7, 9]])
    with pytest.raises(RuntimeError, match="Can't call apply_\\(\\) on Variable that requires "
                                           "grad"):
        tg.ones(2, requires_grad=True).apply_(lambda v: v)


def test_adjoint_views_dim_order_is_set_to():
    x = tg.arange(6.0).reshape(2, 3)
    for view in (x.H, x.mH, x.adjoint(), tg.adjoint(x)):
        np.testing.assert_array_equal(view.numpy(), x.numpy().T)
    assert tuple(tg.ones(2, 3, 4).mH.shape) == (2, 4, 3)
    with pytest.raises(RuntimeError, match="tensor.H is only supported on matrices \\(2-D "
                                           "tensors\\). Got 3-D tensor. For batches"):
        tg.ones(2, 3, 4).H
    with pytest.raises(RuntimeError, match="tensor.mH is only supported on matrices or batches"):
        tg.ones(3).mH
    with pytest.warns(UserWarning, match="Tensor.H is deprecated on 0-D tensors"):
        tg.ones(()).H
    assert x.dim_order() == (0, 1) and x.t().dim_order() == (1, 0)
    assert tg.ones(2, 3, 4).permute(2, 0, 1).dim_order() == (1, 2, 0)
    with pytest.raises(RuntimeError, match="does not have unique dim order"):
        tg.ones(2, 1, 3).dim_order(ambiguity_check=True)
    assert x.is_set_to(x) and x.is_set_to(x.view(2, 3))
    assert not x.is_set_to(x.clone()) and not x.is_set_to(x.t())


def test_name_is_none_and_read_only():
    t = tg.ones(2)
    assert t.name is None
    with pytest.raises(AttributeError):
        t.name = "x"


def test_small_queries():
    assert tg.get_device(tg.ones(2)) == -1 and tg.is_storage(tg.ones(2)) is False
    np.testing.assert_array_equal(tg.nonzero_static(tg.tensor([0, 1, 2]), size=4).numpy(),
                                  [[1], [2], [-1], [-1]])
    np.testing.assert_array_equal(
        tg.tensor([[0, 1], [2, 0]]).nonzero_static(size=1, fill_value=-5).numpy(), [[0, 1]])
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert tg.ones(2).volatile is False
    tg.set_anomaly_enabled(True)
    try:
        assert tg.is_anomaly_enabled()
    finally:
        tg.set_anomaly_enabled(False)
    assert not tg.is_anomaly_enabled()
