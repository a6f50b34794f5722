"""Finite-difference gradient checks (float64) for every differentiable op, and autograd semantics.

Every check goes through conftest's `check_grads(fn, *arrays)`: tapegrad's gradient of
sum(fn(*tensors)) against central differences.  Functions are mostly wrapped in a nonlinearity
(`** 2`, `exp`) so that the upstream gradient reaching the op under test is not all ones.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tapegrad as tg

F64 = tg.float64

PROPERTY_SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                             suppress_health_check=[HealthCheck.function_scoped_fixture])


def values(shape, seed=0, lo=-2.0, hi=2.0):
    """Deterministic float64 data of `shape` in [lo, hi)."""
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def away_from_zero(shape, seed=0, lo=0.5, hi=2.0):
    """Float64 data with |v| in [lo, hi) and random signs (safe for division, relu, ...)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(lo, hi, size=shape) * rng.choice([-1.0, 1.0], size=shape)


def positive(shape, seed=0, lo=0.5, hi=2.0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def const(a):
    """A float64 constant tensor (no grad)."""
    return tg.tensor(np.asarray(a, dtype=np.float64))


# -- binary ops, tensor (op) tensor, with broadcasting ---------------------------------------------

BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a ** b,
}

SHAPE_PAIRS = [
    ((3,), (3,)),
    ((3,), (2, 3)),
    ((2, 3), (3,)),
    ((2, 1), (1, 3)),
    ((1, 3), (2, 1)),
    ((4, 1, 3), (2, 1)),
    ((2, 1), (4, 1, 3)),
    ((), (3,)),
    ((3,), ()),
    ((), ()),
    ((1,), (2, 3)),
    ((2, 1, 1), (1, 1, 4)),
    ((1, 1), (1,)),
    ((2, 3), (1, 1)),
    ((1, 1, 1), (3,)),
    ((2, 3, 1), (2, 1, 1)),
]


def binary_inputs(name, sa, sb):
    if name == "div":
        return values(sa, 1), away_from_zero(sb, 2)
    if name == "pow":
        return positive(sa, 1), values(sb, 2, -1.5, 1.5)
    return values(sa, 1), values(sb, 2)


@pytest.mark.parametrize("sa,sb", SHAPE_PAIRS, ids=lambda s: str(s).replace(" ", ""))
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_tensor_tensor_broadcast(gradcheck, name, sa, sb):
    op = BINARY[name]
    gradcheck(lambda a, b: op(a, b) ** 2, *binary_inputs(name, sa, sb))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_as_functions(gradcheck, name):
    fn = {"add": tg.add, "sub": tg.sub, "mul": tg.mul, "div": tg.div, "pow": tg.pow}[name]
    gradcheck(lambda a, b: fn(a, b).exp(), *binary_inputs(name, (2, 3), (3,)))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_as_methods(gradcheck, name):
    gradcheck(lambda a, b: getattr(a, name)(b).tanh(), *binary_inputs(name, (2, 1), (2, 4)))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_one_side_constant(gradcheck, name):
    """Only one operand requires grad; the other is a constant tensor (broadcast)."""
    a, b = binary_inputs(name, (2, 3), (3,))
    op = BINARY[name]
    gradcheck(lambda x: op(x, const(b)) ** 2, a)
    gradcheck(lambda y: op(const(a), y) ** 2, b)


# -- tensor (op) Python scalar, scalar (op) tensor -------------------------------------------------

SCALAR_CASES = {
    "x+2.5": (lambda x: x + 2.5, values),
    "2.5+x": (lambda x: 2.5 + x, values),
    "x+3": (lambda x: x + 3, values),
    "x-1.5": (lambda x: x - 1.5, values),
    "1.5-x": (lambda x: 1.5 - x, values),
    "2-x": (lambda x: 2 - x, values),
    "x*-1.5": (lambda x: x * -1.5, values),
    "-1.5*x": (lambda x: -1.5 * x, values),
    "3*x": (lambda x: 3 * x, values),
    "x/4": (lambda x: x / 4, values),
    "x/-0.5": (lambda x: x / -0.5, values),
    "4/x": (lambda x: 4 / x, away_from_zero),
    "-2.5/x": (lambda x: -2.5 / x, away_from_zero),
    "x**3": (lambda x: x ** 3, values),
    "x**2": (lambda x: x ** 2, values),
    "x**2.5": (lambda x: x ** 2.5, positive),
    "x**0.5": (lambda x: x ** 0.5, positive),
    "x**-1": (lambda x: x ** -1, away_from_zero),
    "x**-2.5": (lambda x: x ** -2.5, positive),
    "x**1": (lambda x: x ** 1, values),
    "x**0": (lambda x: x ** 0, values),
    "2.0**x": (lambda x: 2.0 ** x, values),
    "2**x": (lambda x: 2 ** x, values),
    "0.5**x": (lambda x: 0.5 ** x, values),
    "1**x": (lambda x: 1 ** x, values),
    "-x": (lambda x: -x, values),
    "+x": (lambda x: +x, values),
}


@pytest.mark.parametrize("shape", [(), (4,), (2, 3)], ids=str)
@pytest.mark.parametrize("case", sorted(SCALAR_CASES))
def test_scalar_operand(gradcheck, case, shape):
    fn, data = SCALAR_CASES[case]
    gradcheck(lambda x: fn(x) * const(values(shape, 7)), data(shape, 3))


def test_pow_tensor_tensor_same_tensor(gradcheck):
    gradcheck(lambda x: x ** x, positive((5,), 4))


def test_pow_tensor_tensor_exponent_zero_has_zero_base_grad():
    """d/da a**e is defined as 0 where e == 0 (PyTorch's convention), even at a == 0."""
    a = tg.tensor([0.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    e = tg.tensor([0.0, 0.0, 2.0], dtype=F64, requires_grad=True)
    (a ** e).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [0.0, 0.0, 6.0])
    np.testing.assert_allclose(e.grad.numpy(), [0.0, np.log(2.0), 9.0 * np.log(3.0)])


def test_negative_scalar_base_pow_backward_gives_nan():
    x = tg.tensor([2.0, 0.5], dtype=F64, requires_grad=True)
    y = (-2.0) ** x                                   # forward: [4, nan]
    y.sum().backward()
    assert np.isnan(x.grad.numpy()).all()


# -- unary ops -----------------------------------------------------------------------------------

UNARY = {
    "neg": (lambda x: -x, values),
    "neg()": (lambda x: x.neg(), values),
    "exp": (lambda x: x.exp(), values),
    "log": (lambda x: x.log(), positive),
    "tanh": (lambda x: x.tanh(), values),
    "relu": (lambda x: x.relu(), away_from_zero),     # |x| >= 0.5: no kink inside the FD step
    "tg.exp": (lambda x: tg.exp(x), values),
    "tg.log": (lambda x: tg.log(x), positive),
    "tg.tanh": (lambda x: tg.tanh(x), values),
    "tg.relu": (lambda x: tg.relu(x), away_from_zero),
    "tg.neg": (lambda x: tg.neg(x), values),
}


@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (2, 1, 3)], ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(gradcheck, name, shape):
    fn, data = UNARY[name]
    gradcheck(lambda x: fn(x) * const(values(shape, 11)), data(shape, 5))


def test_unary_chain(gradcheck):
    gradcheck(lambda x: (x.tanh().exp() + 1.0).log().relu() * x, values((3, 4), 6))


def test_relu_gradient_is_zero_for_negative_inputs():
    x = tg.tensor([-1.0, 2.0, -0.5, 3.0], dtype=F64, requires_grad=True)
    x.relu().sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 0.0, 1.0])


# -- reductions ----------------------------------------------------------------------------------

REDUCE_DIMS = [
    (None, False),
    (0, False),
    (1, False),
    (-1, False),
    (-3, False),
    (0, True),
    (-1, True),
    ((0, 2), False),
    ((0, 2), True),
    ((-1, 0), False),
    ((2, -2), True),
    ((0, 1, 2), False),
    ([1], False),
]


@pytest.mark.parametrize("dim,keepdim", REDUCE_DIMS, ids=str)
@pytest.mark.parametrize("red", ["sum", "mean"])
def test_reduction_dims(gradcheck, red, dim, keepdim):
    def fn(x):
        r = getattr(x, red)() if dim is None else getattr(x, red)(dim, keepdim=keepdim)
        return r ** 2
    gradcheck(fn, values((2, 3, 4), 8))


@pytest.mark.parametrize("red", ["sum", "mean"])
def test_reduction_plain_and_functional(gradcheck, red):
    x = values((3, 4), 9)
    gradcheck(lambda t: getattr(t, red)(), x)
    gradcheck(lambda t: getattr(tg, red)(t, 1, True) * t, x)
    gradcheck(lambda t: getattr(tg, red)(t, dim=(0, 1)).exp(), x)


@pytest.mark.parametrize("dim", [0, -1, (0,)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("red", ["sum", "mean"])
def test_reduction_of_0d(gradcheck, red, dim, keepdim):
    gradcheck(lambda t: getattr(t, red)(dim, keepdim=keepdim) ** 3, values((), 10))


@pytest.mark.parametrize("red", ["sum", "mean"])
def test_reduction_over_size_1_dims(gradcheck, red):
    gradcheck(lambda t: getattr(t, red)((0, 2), keepdim=False) ** 2, values((1, 3, 1), 12))


def test_mean_gradient_is_one_over_count():
    x = tg.tensor(np.ones((2, 5)), requires_grad=True)
    x.mean(1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 5), 0.2))


# -- indexing ------------------------------------------------------------------------------------

def _mask(a):
    return tg.tensor(np.asarray(a, dtype=bool))


def _long(a):
    return tg.tensor(np.asarray(a, dtype=np.int64))


INDEX_KEYS = {
    "int": lambda: 1,
    "neg int": lambda: -1,
    "int,int": lambda: (2, 1),
    "slice 1:3": lambda: slice(1, 3),
    "slice ::2": lambda: slice(None, None, 2),
    "slice 1:": lambda: slice(1, None),
    "slice :": lambda: slice(None),
    "slice past end": lambda: slice(2, 100),
    ":, int": lambda: (slice(None), 2),
    "int, slice": lambda: (0, slice(1, None)),
    "..., None": lambda: (Ellipsis, None),
    "None": lambda: None,
    "None, int": lambda: (None, 1),
    "...": lambda: Ellipsis,
    "..., int": lambda: (Ellipsis, 0),
    "list repeated": lambda: [0, 0, 1],
    "list negative": lambda: [-1, 0, -1],
    "long tensor": lambda: _long([3, 1, 3, 3]),
    "int32 tensor": lambda: tg.tensor([2, 2], dtype=tg.int32),
    "2-D long tensor": lambda: _long([[0, 1], [1, 1]]),
    ":, list": lambda: (slice(None), [2, 0, 2]),
    "two lists": lambda: ([0, 0, 1], [1, 1, 2]),
    "two tensors": lambda: (_long([3, 3, 0]), _long([2, 2, 2])),
    "broadcast index tensors": lambda: (_long([[0], [3]]), _long([1, 1, 2])),
    "slice, list": lambda: (slice(1, None), [0, 0]),
    "list, slice": lambda: ([1, 1, 3], slice(None, 2)),
    "list, None": lambda: ([0, 0], None),
    "None, list": lambda: (None, [2, 2]),
    "row mask": lambda: _mask([True, False, True, True]),
    "bool list": lambda: [True, False, False, True],
    "full mask": lambda: _mask(np.arange(12).reshape(4, 3) % 3 != 1),
    "mask, slice": lambda: (_mask([False, True, True, False]), slice(1, None)),
    "slice, mask": lambda: (slice(None), _mask([True, False, True])),
    "empty list": lambda: [],
    "True": lambda: True,
}


@pytest.mark.parametrize("name", list(INDEX_KEYS))
def test_index_read(gradcheck, name):
    key = INDEX_KEYS[name]()
    gradcheck(lambda x: x[key] ** 2, values((4, 3), 13))


@pytest.mark.parametrize("key", [1, -1, slice(1, 3), slice(None, None, 2), (Ellipsis, None),
                                 [0, 0, 1], [True, False, True, False, True]], ids=str)
def test_index_read_1d(gradcheck, key):
    gradcheck(lambda x: x[key].exp(), values((5,), 14))


@pytest.mark.parametrize("key", [(0, 1, 2), (slice(None), 1), (Ellipsis, [0, 0]),
                                 (slice(None), [1, 0], [2, 2]), ([0, 1], slice(None), [1, 3]),
                                 (1, Ellipsis, None, 0)], ids=str)
def test_index_read_3d(gradcheck, key):
    gradcheck(lambda x: x[key] ** 2, values((2, 3, 4), 15))


def test_index_chain(gradcheck):
    gradcheck(lambda x: x[1:][::2][..., None][0] * x[-1], values((4, 3), 16))


def test_repeated_indices_accumulate():
    x = tg.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    x[[0, 0, 1, 0]].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 1.0, 0.0])


def test_repeated_index_pairs_accumulate():
    x = tg.tensor(np.zeros((2, 3)), requires_grad=True)
    y = x[_long([0, 0, 1, 0]), _long([2, 2, 0, 2])]
    (y * const([1.0, 10.0, 100.0, 1000.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 0.0, 1011.0], [100.0, 0.0, 0.0]])


def test_mask_gradient_scatters_to_selected_elements():
    x = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    mask = _mask([[True, False, True], [False, False, True]])
    (x[mask] * const([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]])


# -- non-contiguous inputs -------------------------------------------------------------------------

def _noncontig_leaf(arr):
    assert not arr.flags.c_contiguous
    return tg.from_numpy(arr).requires_grad_()


NONCONTIG_FNS = {
    "mul": lambda x, c: x * c,
    "add bcast": lambda x, c: x + c[0],
    "div": lambda x, c: c / (x * x + 1.0),
    "pow": lambda x, c: (x * x + 1.0) ** c,
    "exp": lambda x, c: x.exp() * c,
    "log": lambda x, c: (x * x + 1.0).log() * c,
    "tanh": lambda x, c: x.tanh() * c,
    "relu": lambda x, c: x.relu() * c,
    "neg": lambda x, c: -x * c,
    "sum dim": lambda x, c: x.sum(0) * c[0],
    "mean dim": lambda x, c: x.mean(1, keepdim=True) * c,
    "index": lambda x, c: x[[1, 1, 0]] * c[0],
}


@pytest.mark.parametrize("layout", ["strided", "transposed"])
@pytest.mark.parametrize("name", list(NONCONTIG_FNS))
def test_noncontiguous_leaf_matches_contiguous_copy(name, layout):
    """A leaf wrapping a non-contiguous array gets the same gradient as a contiguous copy."""
    fn = NONCONTIG_FNS[name]
    base = away_from_zero((3, 6), 17)
    arr = base[:, ::2] if layout == "strided" else base[:3, :3].T
    c = const(values(arr.shape, 18))
    x = _noncontig_leaf(arr)
    y = tg.tensor(np.ascontiguousarray(arr), requires_grad=True)
    out_x, out_y = fn(x, c), fn(y, c)
    np.testing.assert_allclose(out_x.detach().numpy(), out_y.detach().numpy(), rtol=1e-12)
    out_x.sum().backward()
    out_y.sum().backward()
    assert x.grad.shape == x.shape
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", list(NONCONTIG_FNS))
def test_noncontiguous_intermediate(gradcheck, name):
    """Ops applied to a strided view produced by slicing (x[:, ::2]) inside the graph."""
    fn = NONCONTIG_FNS[name]
    c = const(values((3, 3), 19))
    gradcheck(lambda x: fn(x[:, ::2], c) ** 2, away_from_zero((3, 6), 20))


def test_noncontiguous_binary_both_sides(gradcheck):
    gradcheck(lambda a, b: a[::2] * b[:, 1::2] + a[1::2] / (b[:, ::2] ** 2 + 1.0),
              values((4, 3), 21), values((2, 6), 22))


# -- autograd semantics ----------------------------------------------------------------------------

def test_gradients_accumulate_across_backward_calls():
    x = tg.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 7.0, 9.0])
    x.exp().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 7.0, 9.0] + np.exp([1.0, 2.0, 3.0]))


def test_grad_reset_to_none_restarts_accumulation():
    x = tg.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    (x * 2.0).sum().backward()
    x.grad = None
    (x * 5.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])


def test_tensor_used_several_times_receives_the_sum():
    xs = np.array([0.5, -1.0, 2.0])
    x = tg.tensor(xs, requires_grad=True)
    y = x * x + x * 3.0 + x.exp() - x / 2.0 + x[[0, 0, 1]].sum() + x.sum()
    y.sum().backward()
    expected = 2 * xs + 3.0 + np.exp(xs) - 0.5 + np.array([2.0, 1.0, 0.0]) * 3 + 3.0
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_intermediate_used_several_times(gradcheck):
    def fn(x):
        y = x.tanh() * 2.0
        return y * y + y.exp() - y[1] / (y + 3.0)
    gradcheck(fn, values((4,), 23))


def test_retain_graph_allows_second_backward_and_doubles_grad():
    xs = np.array([0.5, 1.5])
    x = tg.tensor(xs, requires_grad=True)
    y = (x.exp() * x + x.log()).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    np.testing.assert_allclose(first, np.exp(xs) * (1 + xs) + 1 / xs)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)


SAVING_OPS = {
    "mul": lambda x: x * x,
    "mul scalar": lambda x: x * 2.0,
    "div": lambda x: x / 2.0,
    "rdiv": lambda x: 2.0 / x,
    "pow": lambda x: x ** 2,
    "rpow": lambda x: 2.0 ** x,
    "pow tensor": lambda x: x ** x,
    "exp": lambda x: x.exp(),
    "log": lambda x: x.log(),
    "tanh": lambda x: x.tanh(),
    "relu": lambda x: x.relu(),
}


@pytest.mark.parametrize("name", list(SAVING_OPS))
def test_second_backward_without_retain_graph_raises(name):
    x = tg.tensor([0.5, 1.5], dtype=F64, requires_grad=True)
    y = SAVING_OPS[name](x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


@pytest.mark.parametrize("name", list(SAVING_OPS))
def test_second_backward_with_retain_graph_doubles(name):
    x = tg.tensor([0.5, 1.5], dtype=F64, requires_grad=True)
    y = SAVING_OPS[name](x).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)


def test_backward_with_gradient_on_non_scalar():
    xs = np.array([[1.0, 2.0], [3.0, 4.0]])
    x = tg.tensor(xs, requires_grad=True)
    y = x * x
    g = np.array([[1.0, 0.5], [-2.0, 0.0]])
    y.backward(gradient=tg.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), 2 * xs * g)


def test_backward_with_gradient_broadcast_op():
    a = tg.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    b = tg.tensor([[2.0], [5.0]], dtype=F64, requires_grad=True)
    y = a * b                                          # (2, 3)
    g = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    y.backward(tg.tensor(g))
    np.testing.assert_allclose(a.grad.numpy(), (g * [[2.0], [5.0]]).sum(0))
    np.testing.assert_allclose(b.grad.numpy(), (g * [1.0, 2.0, 3.0]).sum(1, keepdims=True))


def test_backward_gradient_argument_is_not_aliased_by_grads():
    """The seed gradient flows straight to the leaves through add; .grad must be a copy of it."""
    g = tg.tensor([1.0, 2.0], dtype=F64)
    x = tg.tensor([0.0, 0.0], dtype=F64, requires_grad=True)
    y = tg.tensor([0.0, 0.0], dtype=F64, requires_grad=True)
    (x + y).backward(g)
    (x + y).backward(g)
    np.testing.assert_array_equal(g.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(y.grad.numpy(), [2.0, 4.0])
    assert not np.shares_memory(x.grad.numpy(), y.grad.numpy())


def test_backward_without_gradient_on_non_scalar_raises():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        (x * 2.0).backward()


GRAD_DTYPE_CASES = {
    "f32 * f64": (lambda a, b: a * b, (3,), (3,)),
    "f32 + f64 broadcast": (lambda a, b: a + b, (2, 1), (3,)),
    "f32 / f64": (lambda a, b: a / b, (3,), (3,)),
    "f32 ** f64": (lambda a, b: a ** b, (3,), (3,)),
    "f64 - f32": (lambda a, b: b - a, (3,), (2, 3)),
    "f32 * 0-d f64": (lambda a, b: a * b, (3,), ()),
    "0-d f32 * f64": (lambda a, b: a * b, (), (2, 2)),
    "f32 mixed then reduce": (lambda a, b: (a * b).exp().mean(0), (2, 3), (3,)),
}


@pytest.mark.parametrize("b_requires_grad", [True, False])
@pytest.mark.parametrize("name", list(GRAD_DTYPE_CASES))
def test_grad_dtype_matches_leaf_dtype(name, b_requires_grad):
    fn, sa, sb = GRAD_DTYPE_CASES[name]
    a = tg.tensor(positive(sa, 24), dtype=tg.float32, requires_grad=True)
    b = tg.tensor(positive(sb, 25), dtype=tg.float64, requires_grad=b_requires_grad)
    out = fn(a, b)
    out.sum().backward()
    assert a.grad.dtype == tg.float32 and a.grad.shape == a.shape
    if b_requires_grad:
        assert b.grad.dtype == tg.float64 and b.grad.shape == b.shape
    # the float32 gradient equals the float64 computation, rounded
    a64 = tg.tensor(a.detach().numpy().astype(np.float64), requires_grad=True)
    fn(a64, b.detach()).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), a64.grad.numpy(), rtol=1e-5)


@pytest.mark.parametrize("dt", [tg.float32, tg.float64])
def test_grad_dtype_float_scalar_ops(dt):
    x = tg.tensor([0.5, 1.5], dtype=dt, requires_grad=True)
    (2.5 * x / 3 + 2 ** x - x ** 2.5 + x.exp().log().tanh().relu()).mean().backward()
    assert x.grad.dtype == dt


@pytest.mark.parametrize("dt", [tg.float32, tg.float64])
def test_large_tensors_match_analytic_gradients(dt):
    """Tensors above the kernels' no-GIL threshold (32768 elements): values and gradients."""
    n = 40_000
    xs = np.linspace(-3.0, 3.0, n)
    ys = np.linspace(0.5, 2.0, n)[::-1].copy()
    x = tg.tensor(xs, dtype=dt, requires_grad=True)
    y = tg.tensor(ys, dtype=dt, requires_grad=True)
    out = (x * y + x.tanh() - x / y + (y ** 2.5).log() + (-x).exp() * 0.5 + x.relu()).sum()
    out.backward()
    rtol = 1e-5 if dt == tg.float32 else 1e-10
    x64, y64 = x.detach().numpy().astype(np.float64), y.detach().numpy().astype(np.float64)
    gx = y64 + (1 - np.tanh(x64) ** 2) - 1 / y64 - 0.5 * np.exp(-x64) + (x64 > 0)
    gy = x64 + x64 / y64 ** 2 + 2.5 / y64
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(y.grad.numpy(), gy, rtol=rtol, atol=rtol)
    assert x.grad.dtype == dt and y.grad.dtype == dt


def test_float64_leaf_from_python_list_keeps_full_precision():
    """Regression: tensor(floats, dtype=float64) once rounded the data through float32 first."""
    x = tg.tensor([0.1, 1.1], dtype=F64, requires_grad=True)
    (x * x).sum().backward()
    assert x.detach().numpy().tolist() == [0.1, 1.1]
    np.testing.assert_array_equal(x.grad.numpy(), [0.2, 2.2])


# -- property tests --------------------------------------------------------------------------------

@PROPERTY_SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
       name=st.sampled_from(["add", "sub", "mul", "div"]),
       seed=st.integers(0, 2 ** 16))
def test_property_broadcast_binary(gradcheck, shapes, name, seed):
    sa, sb = shapes.input_shapes
    a = values(sa, seed)
    b = away_from_zero(sb, seed + 1) if name == "div" else values(sb, seed + 1)
    op = BINARY[name]
    gradcheck(lambda x, y: op(x, y) ** 2, a, b)


@st.composite
def shape_and_dims(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=3))
    nd = len(shape)
    axes = draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
    dims = [a - nd if draw(st.booleans()) else a for a in axes]   # mix negative spellings in
    dim = dims[0] if len(dims) == 1 and draw(st.booleans()) else tuple(dims)
    return shape, dim


@PROPERTY_SETTINGS
@given(sd=shape_and_dims(), keepdim=st.booleans(), red=st.sampled_from(["sum", "mean"]),
       seed=st.integers(0, 2 ** 16))
def test_property_reduction_dims(gradcheck, sd, keepdim, red, seed):
    shape, dim = sd
    x = values(shape, seed)
    out = getattr(tg.tensor(x), red)(dim, keepdim=keepdim)
    expected = getattr(np, red)(x, axis=dim, keepdims=keepdim)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)
    gradcheck(lambda t: getattr(t, red)(dim, keepdim=keepdim) ** 2, x)
