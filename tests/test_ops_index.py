"""Indexing (x[key]), select, narrow, gather, index_select, masked_fill, masked_select -
gradients, views, errors and PyTorch parity."""
import gc

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.testing import count_python_calls

RNG = np.random.default_rng(1)


def arr(*shape):
    return RNG.standard_normal(shape)


def weighted(fn):
    """fn's output times fixed random weights, summed: a gradient that is not all ones."""
    cache = {}

    def f(*xs):
        o = fn(*xs)
        key = tuple(o.shape)
        if key not in cache:
            cache[key] = np.random.default_rng(len(cache) + 7).standard_normal(key)
        return (o * tg.tensor(cache[key])).sum()
    return f


def name(t):
    return type(t.grad_fn).__name__


def shares(a, b):
    return np.shares_memory(a.detach().numpy(), b.detach().numpy())


def L(data, lib=tg, dtype=None):
    return lib.tensor(data, dtype=dtype)


# Keys as functions of the library (tensor keys are built with it); (id, key, input shape).
KEYS = [
    ("int", lambda lib: 0, (2, 3, 4)),
    ("neg int", lambda lib: -1, (2, 3, 4)),
    ("slice", lambda lib: slice(1, None), (2, 3, 4)),
    ("full slice", lambda lib: slice(None), (2, 3, 4)),
    ("slice step", lambda lib: slice(None, None, 2), (5, 3)),
    ("slice neg bounds", lambda lib: (slice(-2, None), slice(None, -1, 2)), (4, 5)),
    ("slice past end", lambda lib: slice(0, 10), (2, 3)),
    ("empty slice", lambda lib: slice(5, 1), (2, 3)),
    ("ellipsis", lambda lib: Ellipsis, (2, 3, 4)),
    ("empty tuple", lambda lib: (), (2, 3)),
    ("trivial tuple", lambda lib: (slice(None), slice(None)), (2, 3, 4)),
    ("trivial then slice", lambda lib: (slice(0, 10), slice(1, 3)), (2, 3, 4)),
    ("neg start not trivial", lambda lib: (slice(-10, None), slice(None)), (2, 3, 4)),
    ("None", lambda lib: None, (2, 3)),
    ("int None", lambda lib: (0, None), (2, 3, 4)),
    ("None int", lambda lib: (None, 0), (2, 3, 4)),
    ("ellipsis int", lambda lib: (Ellipsis, 1), (2, 3, 4)),
    ("ellipsis None", lambda lib: (Ellipsis, None), (2, 3, 4)),
    ("int slice", lambda lib: (0, slice(1, 3)), (2, 3, 4)),
    ("slice int", lambda lib: (slice(None), 0), (2, 3, 4)),
    ("int full slice", lambda lib: (0, slice(None)), (2, 3, 4)),
    ("ints to 0-d", lambda lib: (1, 2, 3), (2, 3, 4)),
    ("0-d ellipsis", lambda lib: Ellipsis, ()),
    ("0-d None", lambda lib: None, ()),
    ("0-d int tensor", lambda lib: L(1, lib), (2, 3, 4)),
    ("0-d int tensor in tuple", lambda lib: (L(1, lib), 0), (2, 3, 4)),
    ("list", lambda lib: [0, 2], (3, 4)),
    ("list repeated", lambda lib: [1, 1, 0, 1], (3, 4)),
    ("list negative", lambda lib: [0, -1], (3, 4)),
    ("empty list", lambda lib: [], (3, 4)),
    ("int tensor", lambda lib: L([2, 0, 2], lib), (3, 4)),
    ("int32 tensor", lambda lib: L([2, 0], lib, lib.int32), (3, 4)),
    ("2-d int tensor", lambda lib: L([[0, 1], [1, 1]], lib), (3, 4)),
    ("empty int tensor", lambda lib: L([], lib, lib.int64), (3, 4)),
    ("numpy int array", lambda lib: np.array([1, 0]), (3, 4)),
    ("two tensors", lambda lib: (L([0, 1, 1], lib), L([2, 2, 0], lib)), (2, 3, 4)),
    ("two tensors broadcast", lambda lib: ([0, 1], [[0], [2]]), (2, 3, 4)),
    ("tensors split by slice", lambda lib: ([0, 1], slice(None), [1, 3]), (2, 3, 4)),
    ("slice then list", lambda lib: (slice(None), [0, 2, 2]), (2, 3, 4)),
    ("ellipsis list", lambda lib: (Ellipsis, [0, 1]), (2, 3, 4)),
    ("list ellipsis list", lambda lib: ([0, 1], Ellipsis, [0, 3]), (2, 3, 4)),
    ("int with list", lambda lib: (0, [0, 1]), (2, 3, 4)),
    ("int slice list (torch order)", lambda lib: (0, slice(None), [0, 1]), (2, 3, 4)),
    ("list slice int", lambda lib: ([0, 1], slice(None), 0), (2, 3, 4)),
    ("slice int list", lambda lib: (slice(None), 0, [0, 1]), (2, 3, 4)),
    ("None list None", lambda lib: (None, [0, 1], None), (2, 3, 4)),
    ("slice None list", lambda lib: (slice(None), None, [0, 1]), (2, 3, 4)),
    ("list None list", lambda lib: ([0, 1], None, [1, 2]), (2, 3, 4)),
    ("sliced step then list", lambda lib: (slice(None, None, 2), [1, 1]), (5, 3)),
    ("mask", lambda lib: L([True, False, True], lib), (3, 4)),
    ("mask 2-d", lambda lib: L([[True, False], [False, True], [True, True]], lib), (3, 2, 4)),
    ("mask full", lambda lib: L(np.arange(6).reshape(2, 3) % 4 == 1, lib), (2, 3)),
    ("mask after slice", lambda lib: (slice(None), L([True, False, True], lib)), (2, 3, 4)),
    ("ellipsis mask", lambda lib: (Ellipsis, L([True, False, True, True], lib)), (2, 3, 4)),
    ("list and mask", lambda lib: (L([0, 1], lib), L([True, False, True], lib)), (2, 3, 4)),
    ("bool list", lambda lib: [True, False], (2, 3)),
    ("numpy mask", lambda lib: np.array([False, True]), (2, 3)),
    ("all-false mask", lambda lib: L([False, False, False], lib), (3, 4)),
    ("True", lambda lib: True, (2, 3)),
    ("False", lambda lib: False, (2, 3)),
    ("0-d bool tensor", lambda lib: L(True, lib), (2, 3)),
    ("True after slice", lambda lib: (slice(0, 1), True), (2, 3)),
    ("True int", lambda lib: (True, 0), (2, 3)),
    ("list True", lambda lib: ([0, 1], True), (2, 3)),
    ("ellipsis True", lambda lib: (Ellipsis, True), (2, 3)),
    ("0-d True", lambda lib: True, ()),
    ("two ellipses (torch)", lambda lib: (Ellipsis, 1, Ellipsis), (2, 3, 4)),
    ("two ellipses and colon", lambda lib: (Ellipsis, 0, Ellipsis, slice(None)), (2, 3, 4)),
    ("ellipsis mask ellipsis", lambda lib: (Ellipsis, L([True, False], lib), Ellipsis), (3, 2)),
]


@pytest.mark.parametrize("key,shape", [k[1:] for k in KEYS], ids=[k[0] for k in KEYS])
def test_index_gradient_matches_finite_differences(gradcheck, key, shape):
    k = key(tg)
    gradcheck(weighted(lambda x: x[k]), arr(*shape))


@pytest.mark.parametrize("key,shape", [k[1:] for k in KEYS], ids=[k[0] for k in KEYS])
def test_index_of_non_contiguous_input(gradcheck, key, shape):
    # the same key on a transposed (non-contiguous) view of an input of the transposed shape
    k = key(tg)
    gradcheck(weighted(lambda x: x.permute(*reversed(range(x.ndim)))[k] if x.ndim else x[k]),
              arr(*shape[::-1]))


def test_repeated_indices_accumulate():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[[0, 0, 2, 0]].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]
    y = tg.tensor(np.zeros((2, 2)), requires_grad=True)
    (y[[1, 1], [0, 0]] * tg.tensor([2.0, 5.0])).sum().backward()
    assert y.grad.tolist() == [[0, 0], [7, 0]]


def test_basic_indexing_returns_views_advanced_returns_copies():
    x = tg.tensor(arr(2, 3, 4))
    for y in (x[0], x[1:], x[:, ::2], x[..., 1], x[None], x[0, None], x[...], x[1, 2, 3],
              x[tg.tensor(1)], x.select(1, 2), x.narrow(2, 1, 2)):
        assert shares(y, x)
    assert x[...] is not x
    for y in (x[[0, 1]], x[tg.tensor([True, False])], x[True], x[0, [0, 1]]):
        assert not shares(y, x)
    v = x[1, 2, 3]
    assert v.shape == () and v.numpy().base is not None
    x.numpy()[1, 2, 3] = 42.0
    assert v.item() == 42.0


def positive(x):
    return tg.tensor(x.detach().numpy() > 0)


def test_grad_fn_names():
    x = tg.tensor(arr(2, 3, 4), requires_grad=True)
    assert name(x[0]) == name(x[:, 0]) == name(x[0, :]) == name(x[None, 0]) == "SelectBackward0"
    assert name(x[1:]) == name(x[:]) == name(x[0, 1:2]) == name(x[-10:, :]) == "SliceBackward0"
    assert name(x[...]) == name(x[:, :]) == name(x[0:10, :]) == name(x[()]) == "AliasBackward0"
    assert name(x[None]) == name(x[0, None]) == name(x[..., None]) == "UnsqueezeBackward0"
    assert name(x[[0]]) == name(x[positive(x)]) == name(x[True]) == "IndexBackward0"
    assert name(x[0, [0]]) == "IndexBackward0"
    assert name(x.select(0, 1)) == "SelectBackward0" and name(x.narrow(0, 0, 1)) == "SliceBackward0"
    idx = tg.tensor([[0], [1], [2]])
    assert name(x[0].gather(1, idx)) == "GatherBackward0"
    assert name(x.index_select(1, tg.tensor([0]))) == "IndexSelectBackward0"
    assert name(x.masked_fill(positive(x), 0.0)) == "MaskedFillBackward0"
    assert name(x.masked_fill(positive(x), tg.tensor(1.0))) == "MaskedFillBackward1"
    assert name(x.masked_select(positive(x))) == "MaskedSelectBackward0"


def test_non_tuple_sequence_is_a_tuple_with_a_warning():
    x = tg.tensor(arr(2, 3))
    with pytest.warns(UserWarning, match="Using a non-tuple sequence for multidimensional"):
        y = x[[0, slice(None)]]
    np.testing.assert_array_equal(y.numpy(), x.numpy()[0])
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        assert x[[[0, 1]]].shape == (2, 3)
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        assert x[[tg.tensor(1), tg.tensor(2)]].shape == ()


def test_uint8_index_is_a_deprecated_mask():
    x = tg.tensor(arr(2, 3))
    with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
        y = x[tg.tensor([1, 0], dtype=tg.uint8)]
    np.testing.assert_array_equal(y.numpy(), x.numpy()[:1])


# -- select, narrow, gather, index_select, masked_fill, masked_select ----------------------------

OP_CASES = [
    ("select", lambda x: x.select(1, -1), (2, 3, 4)),
    ("select transposed", lambda x: x.t().select(0, 2), (2, 3)),
    ("narrow", lambda x: x.narrow(-1, 1, 2), (2, 3, 4)),
    ("narrow neg start", lambda x: x.narrow(0, -2, 2), (3, 2)),
    ("gather dim 1", lambda x: x.gather(1, tg.tensor([[0, 0, 2], [1, 0, 0]])), (2, 3)),
    ("gather dim 0", lambda x: x.gather(0, tg.tensor([[1, 0], [1, 1], [0, 1]])), (2, 3)),
    ("gather neg dim", lambda x: tg.gather(x, -1, tg.tensor([[[1], [0]], [[2], [2]]])),
     (2, 2, 3)),
    ("gather transposed", lambda x: x.t().gather(0, tg.tensor([[1, 0], [1, 1]])), (2, 3)),
    ("gather bigger index dim", lambda x: x.gather(1, tg.tensor([[0, 1, 1, 0, 0]])), (2, 3)),
    ("gather int32", lambda x: x.gather(1, tg.tensor([[2], [1]], dtype=tg.int32)), (2, 3)),
    ("gather 0-d", lambda x: x.gather(0, tg.tensor(0)), ()),
    ("gather 1-d from 0-d idx", lambda x: x.gather(0, tg.tensor(2)), (3,)),
    ("index_select", lambda x: x.index_select(1, tg.tensor([0, 0, 2])), (2, 3)),
    ("index_select dim 0", lambda x: tg.index_select(x, 0, tg.tensor([1, 1])), (2, 3)),
    ("index_select 0-d index", lambda x: x.index_select(-1, tg.tensor(1)), (2, 3)),
    ("index_select transposed", lambda x: x.t().index_select(1, tg.tensor([1])), (2, 3)),
    ("index_select 0-d", lambda x: x.index_select(0, tg.tensor([0])), ()),
    ("masked_fill", lambda x: x.masked_fill(tg.tensor(x.detach().numpy() > 0), 0.5), (3, 4)),
    ("masked_fill broadcast mask", lambda x: x.masked_fill(tg.tensor([True, False, True]), -1.0),
     (2, 3)),
    ("masked_fill broadcast input",
     lambda x: x.masked_fill(tg.tensor([[True, False, True], [False, False, True]]), 2.0), (3,)),
    ("masked_fill transposed",
     lambda x: x.t().masked_fill(tg.tensor(x.t().detach().numpy() < 0), 0.0), (2, 3)),
    ("masked_select", lambda x: x.masked_select(tg.tensor(x.detach().numpy() > 0)), (3, 4)),
    ("masked_select broadcast", lambda x: x.masked_select(tg.tensor([[True], [False]])), (3,)),
    ("masked_select transposed",
     lambda x: tg.masked_select(x.t(), tg.tensor(x.t().detach().numpy() > 0)), (2, 3)),
]


@pytest.mark.parametrize("fn,shape", [c[1:] for c in OP_CASES], ids=[c[0] for c in OP_CASES])
def test_op_gradient_matches_finite_differences(gradcheck, fn, shape):
    gradcheck(weighted(fn), arr(*shape))


def test_masked_fill_value_tensor_gets_gradient(gradcheck):
    mask = tg.tensor([[True, False, True], [False, False, True]])
    gradcheck(weighted(lambda x, v: x.masked_fill(mask, v)), arr(2, 3), arr())
    gradcheck(weighted(lambda x, v: x.masked_fill(mask, v)), arr(3), arr())
    v = tg.tensor(2.0, dtype=tg.float64, requires_grad=True)
    x = tg.tensor(arr(2, 3), dtype=tg.float32)
    y = x.masked_fill(mask, v)
    assert y.dtype == tg.float32 and name(y) == "MaskedFillBackward1"
    y.sum().backward()
    assert v.grad.dtype == tg.float64 and v.grad.item() == 3.0


def test_gather_gradient_accumulates_repeats():
    x = tg.tensor(np.zeros((2, 3)), requires_grad=True)
    x.gather(1, tg.tensor([[0, 0, 0], [2, 1, 2]])).sum().backward()
    assert x.grad.tolist() == [[3, 0, 0], [0, 1, 2]]


def test_masked_fill_dtypes():
    m = tg.tensor([True, False, True])
    assert x_list(tg.arange(3).masked_fill(m, 2.5)) == [2, 1, 2]
    assert tg.zeros(3).masked_fill(m, True).tolist() == [1.0, 0.0, 1.0]
    assert tg.zeros(3, dtype=tg.bool).masked_fill(m, 1).tolist() == [True, False, True]


def x_list(t):
    return t.tolist()


def test_no_grad_and_int_inputs():
    x = tg.tensor(arr(3, 4), requires_grad=True)
    with tg.no_grad():
        ys = [x[0], x[[0, 1]], x[positive(x)], x.gather(0, tg.tensor([[0]])),
              x.masked_fill(positive(x), 1.0)]
    assert all(y.grad_fn is None for y in ys)
    # x[0] is a view: under no_grad it requires grad as its input does (PyTorch's rule)
    assert [y.requires_grad for y in ys] == [True, False, False, False, False]
    i = tg.arange(12).reshape(3, 4)
    assert i[1, [0, 3]].tolist() == [4, 7] and i[tg.tensor(i.numpy() > 9)].tolist() == [10, 11]


def test_backward_through_index_ops_makes_no_python_call_per_node():
    m = tg.tensor([True, False, True, True, False, True])
    not_m = tg.tensor([False, True, False, False, True, False])

    def chain(x, n):
        y = x
        for _ in range(n):
            a = y[1:][[0, 0, 2, 3, 4]][None, ...][0, :, None].squeeze(1)
            b = y.reshape(2, 3)[0, [0, 2]][..., True].flatten()
            c = y.reshape(2, 3).gather(1, tg.tensor([[0, 1, 2], [2, 2, 2]])).flatten()
            d = y.index_select(0, tg.tensor([5, 4, 3, 2, 1, 0])).masked_fill(m, 0.0)
            e = y.masked_select(m).narrow(0, 0, 4).select(0, 1)
            y = tg.cat([a, y[m][:1]]) + c + d + b.sum() + e + y[not_m].sum()
        return y.sum()


    x = tg.tensor(arr(6), requires_grad=True)
    small, big = chain(x, 2), chain(x, 20)
    assert count_python_calls(small.backward) == count_python_calls(big.backward)


# -- bad input -----------------------------------------------------------------------------------

BAD = [
    (ValueError, "step must be greater than zero", lambda x, lib: x[::-1]),
    (ValueError, "slice step cannot be zero", lambda x, lib: x[::0]),
    (IndexError, "index 5 is out of bounds for dimension 0 with size 2", lambda x, lib: x[5]),
    (IndexError, "index -3 is out of bounds for dimension 0 with size 2", lambda x, lib: x[-3]),
    (IndexError, "index 3 is out of bounds for dimension 1 with size 3", lambda x, lib: x[:, 3]),
    (IndexError, "index 5 is out of bounds for dimension 0 with size 2",
     lambda x, lib: x[[0, 5]]),
    (IndexError, "too many indices for tensor of dimension 3", lambda x, lib: x[0, 0, 0, 0]),
    (IndexError, "too many indices for tensor of dimension 3",
     lambda x, lib: x[[0, 1], [0, 1], [0, 1], [0]]),
    (IndexError, "invalid index of a 0-dim tensor. Use `tensor.item\\(\\)` in Python",
     lambda x, lib: x[0, 0, 0][0]),
    (IndexError, "slice\\(\\) cannot be applied to a 0-dim tensor.", lambda x, lib: x[0, 0, 0][:]),
    (IndexError, "too many indices for tensor of dimension 0",
     lambda x, lib: x[0, 0, 0][None, 0]),
    (IndexError, r"shape mismatch: indexing tensors could not be broadcast together with shapes "
     r"\[2\], \[3\]", lambda x, lib: x[[0, 1], [1, 2, 0]]),
    (IndexError, r"The shape of the mask \[3\] at index 0 does not match the shape of the indexed "
     r"tensor \[2, 3, 4\] at index 0", lambda x, lib: x[lib.tensor([True, False, True])]),
    (IndexError, r"The shape of the mask \[3, 3\] at index 1 does not match the shape of the "
     r"indexed tensor \[2, 3, 4\] at index 2", lambda x, lib: x[:, lib.ones(3, 3, dtype=lib.bool)]),
    (IndexError, "tensors used as indices must be long, int, byte or bool tensors",
     lambda x, lib: x[lib.tensor([1.0])]),
    (IndexError, "tensors used as indices must be long, int, byte or bool tensors",
     lambda x, lib: x[lib.tensor([0, 1], dtype=lib.int16)]),
    (IndexError, r"only integers, slices \(`:`\), ellipsis \(`...`\), None and long or byte "
     r"Variables are valid indices \(got float\)", lambda x, lib: x[1.0]),
    (IndexError, r"select\(\): index 5 out of range for tensor of size \[2, 3, 4\] at dimension 1",
     lambda x, lib: x.select(1, 5)),
    (IndexError, "select\\(\\) cannot be applied to a 0-dim tensor.",
     lambda x, lib: x[0, 0, 0].select(0, 0)),
    (IndexError, r"start out of range \(expected to be in range of \[-3, 3\], but got 5\)",
     lambda x, lib: x.narrow(1, 5, 0)),
    (RuntimeError, r"start \(3\) \+ length \(2\) exceeds dimension size \(4\).",
     lambda x, lib: x.narrow(2, 3, 2)),
    (RuntimeError, "narrow\\(\\): length must be non-negative.", lambda x, lib: x.narrow(1, 0, -1)),
    (RuntimeError, "index 5 is out of bounds for dimension 1 with size 4",
     lambda x, lib: x[0].gather(1, lib.tensor([[0, 5], [1, 1], [2, 0]]))),
    (RuntimeError, "index -1 is out of bounds for dimension 1 with size 4",
     lambda x, lib: x[0].gather(1, lib.tensor([[0, -1]]))),
    (RuntimeError, r"Size does not match at dimension 0 expected index \[4, 2\] to be no larger "
     r"than self \[3, 4\] apart from dimension 1",
     lambda x, lib: x[0].gather(1, lib.zeros(4, 2, dtype=lib.int64))),
    (RuntimeError, "Index tensor must have the same number of dimensions as input tensor",
     lambda x, lib: x[0].gather(1, lib.zeros(3, dtype=lib.int64))),
    (RuntimeError, "gather\\(\\): Expected dtype int32/int64 for index",
     lambda x, lib: x[0].gather(1, lib.zeros(3, 2))),
    (IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)",
     lambda x, lib: x[0].gather(2, lib.zeros(3, 2, dtype=lib.int64))),
    (IndexError, "index out of range in self", lambda x, lib: x.index_select(0, lib.tensor([2]))),
    (IndexError, "index out of range in self", lambda x, lib: x.index_select(2, lib.tensor([-1]))),
    (IndexError, "index_select\\(\\): Index is supposed to be a vector",
     lambda x, lib: x.index_select(1, lib.tensor([[1]]))),
    (RuntimeError, "index_select\\(\\): Expected dtype int32 or int64 for index",
     lambda x, lib: x.index_select(1, lib.tensor([1.0]))),
    (TypeError, "must be Tensor, not list", lambda x, lib: x.index_select(1, [0])),
    (RuntimeError, "masked_fill_ only supports boolean masks, but got mask with dtype long int",
     lambda x, lib: x.masked_fill(lib.tensor([1, 0, 1, 0]), 1.0)),
    (RuntimeError, "masked_fill_ only supports boolean masks, but got mask with dtype float",
     lambda x, lib: x.masked_fill(lib.ones(4), 1.0)),
    (RuntimeError, r"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
     r"1 dimension\(s\).",
     lambda x, lib: x.masked_fill(lib.ones(4, dtype=lib.bool), lib.tensor([2.0]))),
    (RuntimeError, r"The size of tensor a \(3\) must match the size of tensor b \(4\) at "
     r"non-singleton dimension 2", lambda x, lib: x.masked_fill(lib.ones(3, dtype=lib.bool), 1.0)),
    (RuntimeError, "masked_select: expected BoolTensor for mask",
     lambda x, lib: x.masked_select(lib.ones(4))),
    (RuntimeError, r"The size of tensor a \(5\) must match the size of tensor b \(4\) at "
     r"non-singleton dimension 2", lambda x, lib: x.masked_select(lib.ones(5, dtype=lib.bool))),
]


@pytest.mark.parametrize("exc,match,fn", BAD, ids=[b[1][:40] for b in BAD])
def test_bad_input_raises_pytorch_errors(exc, match, fn):
    x = tg.tensor(arr(2, 3, 4), requires_grad=True)
    with pytest.raises(exc, match=match):
        fn(x, tg)


def test_failing_index_records_nothing():
    x = tg.tensor(arr(2, 3), requires_grad=True) * 1.0
    gc.collect()  # earlier tests' cyclic garbage must not be freed mid-test
    live = tg._core.tape().live_records
    for key in (5, (0, 0, 0), [0, 7], (tg.tensor([True]),), (slice(None, None, -1),)):
        try:
            x[key]
        except (IndexError, ValueError):
            pass
    assert tg._core.tape().live_records == live


# -- PyTorch parity ------------------------------------------------------------------------------

def run_parity(torch, fn, a):
    ours = tg.tensor(a, requires_grad=True)
    theirs = torch.tensor(a, requires_grad=True)
    o, t = fn(tg, ours), fn(torch, theirs)
    assert tuple(o.shape) == tuple(t.shape)
    assert str(o.dtype) == str(t.dtype)
    np.testing.assert_array_equal(o.detach().numpy(), t.detach().numpy())
    assert name(o) == type(t.grad_fn).__name__
    w = np.random.default_rng(3).standard_normal(tuple(t.shape)).astype(a.dtype)
    (o * tg.tensor(w)).sum().backward()
    (t * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("key,shape", [k[1:] for k in KEYS], ids=[k[0] for k in KEYS])
def test_index_parity_with_torch(torch, key, shape):
    a = RNG.standard_normal(shape).astype(np.float32)
    run_parity(torch, lambda lib, x: x[key(lib)], a)
    if a.ndim >= 2:
        run_parity(torch, lambda lib, x: x.permute(*reversed(range(x.ndim)))[key(lib)], a.T.copy())


@pytest.mark.parametrize("fn,shape", [c[1:] for c in OP_CASES], ids=[c[0] for c in OP_CASES])
def test_op_parity_with_torch(torch, fn, shape):
    a = RNG.standard_normal(shape).astype(np.float32)
    run_parity(torch, lambda lib, x: type(fn)(fn.__code__, dict(fn.__globals__, tg=lib))(x), a)


def test_masked_fill_value_parity(torch):
    a = RNG.standard_normal((2, 3)).astype(np.float32)
    for lib in (tg, torch):
        x = lib.tensor(a, requires_grad=True)
        v = lib.tensor(0.5, dtype=lib.float64, requires_grad=True)
        y = x.masked_fill(lib.tensor([True, False, True]), v)
        (y * lib.tensor(a)).sum().backward()
        if lib is tg:
            ours = (y.detach().numpy(), x.grad.numpy(), v.grad.numpy(), name(y), str(v.grad.dtype))
        else:
            theirs = (y.detach().numpy(), x.grad.numpy(), v.grad.numpy(),
                      type(y.grad_fn).__name__, str(v.grad.dtype))
    for p, q in zip(ours, theirs):
        if isinstance(p, np.ndarray):
            np.testing.assert_allclose(p, q, rtol=1e-6)
        else:
            assert p == q


def test_warning_parity(torch):
    for lib in (tg, torch):
        x = lib.zeros(2, 3)
        with pytest.warns(UserWarning, match="Using a non-tuple sequence"):
            assert tuple(x[[0, slice(None)]].shape) == (3,)
        with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
            assert tuple(x[lib.tensor([1, 0], dtype=lib.uint8)].shape) == (1, 3)


@pytest.mark.parametrize("exc,match,fn", BAD, ids=[b[1][:40] for b in BAD])
def test_error_parity_with_torch(torch, exc, match, fn):
    x = torch.randn(2, 3, 4, requires_grad=True)
    with pytest.raises(exc, match=match):
        fn(x, torch)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_repeated_index_gradients_equal_numpys_add_at(dtype):
    """The scatter-add of x[idx], x[rows, cols], index_select and embedding backward runs in C
    for 1-D integer keys: the same additions in the same order as np.add.at, so the same bits
    (float32 accumulation included), negative indices included."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((50, 3, 4)).astype(dtype)
    idx = rng.integers(-50, 50, 400)
    rows, cols = rng.integers(0, 50, 300), rng.integers(-3, 3, 300)
    w1 = rng.standard_normal((400, 3, 4)).astype(dtype)
    w2 = rng.standard_normal((300, 4)).astype(dtype)
    cases = [(lambda x: (x[tg.tensor(idx)] * tg.tensor(w1)).sum(), idx, w1),
             (lambda x: (x[tg.tensor(rows), tg.tensor(cols)] * tg.tensor(w2)).sum(),
              (rows, cols), w2),
             (lambda x: (x.index_select(0, tg.tensor(idx % 50)) * tg.tensor(w1)).sum(),
              idx % 50, w1)]
    for f, key, w in cases:
        x = tg.tensor(a, requires_grad=True)
        f(x).backward()
        want = np.zeros_like(a)
        np.add.at(want, key, w)
        assert np.array_equal(x.grad.numpy(), want)
    table = tg.tensor(rng.standard_normal((10, 4)).astype(dtype), requires_grad=True)
    ids = rng.integers(0, 10, (6, 7))
    g = rng.standard_normal((6, 7, 4)).astype(dtype)
    (tg.nn.functional.embedding(tg.tensor(ids), table) * tg.tensor(g)).sum().backward()
    want = np.zeros((10, 4), dtype)
    np.add.at(want, ids.ravel(), g.reshape(-1, 4))
    assert np.array_equal(table.grad.numpy(), want)


# -- Python ranges, numpy integer arrays and scalars as indices ------------------------------------

def test_range_and_numpy_indices_values_and_grads():
    a = np.arange(24.0).reshape(4, 6)
    target = [5, 0, 2]
    x = tg.tensor(a, requires_grad=True)
    y = x[range(3), target]                             # the cross-entropy idiom
    assert y.tolist() == [5.0, 6.0, 14.0]
    y.sum().backward()
    expected = np.zeros_like(a)
    expected[[0, 1, 2], target] = 1
    assert np.array_equal(x.grad.numpy(), expected)
    assert x[range(3)].shape == (3, 6)
    assert x[range(0)].shape == (0, 6)
    assert x[np.int64(1)].tolist() == a[1].tolist()
    assert x[np.int32(1), np.int64(2)].item() == 8.0
    assert x[np.array([0, 2]), np.array([1, 1])].tolist() == [1.0, 13.0]
    assert x[np.array([True, False, True, False])].shape == (2, 6)
    assert x[[True, False, True, False]].shape == (2, 6)
    with pytest.raises(IndexError, match="only integers"):
        x[np.bool_(True)]


def test_range_and_numpy_indices_setitem():
    x = tg.zeros(3, 4)
    x[range(3), [0, 1, 2]] = 1.0
    assert np.array_equal(x.numpy(), np.eye(3, 4))
    x[np.int64(0)] = 5.0
    assert x[0].tolist() == [5.0] * 4
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        x[[[1, 2], [0, 0]]] = -1.0                      # a list holding lists is a tuple of indices
    assert x[1, 0].item() == -1.0 and x[2, 0].item() == -1.0 and x[1, 1].item() == 1.0
    with pytest.raises(IndexError, match="only integers"):
        x[np.bool_(True)] = 0.0


def test_range_and_numpy_indices_match_torch(torch):
    a = np.random.default_rng(0).standard_normal((4, 6))
    keys = [lambda m: (range(3), [1, 2, 0]), lambda m: range(3), lambda m: (range(4), slice(None)),
            lambda m: ([0, 1], [2, 3]), lambda m: np.array([0, 2]),
            lambda m: (np.array([0, 2]), np.array([1, 1])), lambda m: np.int64(1),
            lambda m: (m.tensor([0, 1]), range(2)), lambda m: (slice(1, 3), np.array([0, 5])),
            lambda m: np.array([True, False, True, False]), lambda m: [True, False, True, False]]
    for key in keys:
        x = tg.tensor(a, requires_grad=True)
        tx = torch.tensor(a, requires_grad=True)
        y, ty = x[key(tg)], tx[key(torch)]
        assert np.array_equal(y.detach().numpy(), ty.detach().numpy())
        w = np.arange(ty.numel(), dtype=np.float64).reshape(tuple(ty.shape))
        (y * tg.tensor(w)).sum().backward()
        (ty * torch.tensor(w)).sum().backward()
        assert np.array_equal(x.grad.numpy(), tx.grad.numpy())
        z, tz = tg.tensor(a), torch.tensor(a)
        z[key(tg)] = -1.0
        tz[key(torch)] = -1.0
        assert np.array_equal(z.numpy(), tz.numpy())
