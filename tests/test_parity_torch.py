"""Parity with PyTorch (the oracle): forward values, gradients, grad_fn names, reprs, dtypes.

Every test takes the `torch` fixture, so the whole module skips cleanly when torch is absent.
Expressions are written once as `fn(L, *tensors)` and run with L = tapegrad and L = torch on
tensors built from the same numpy data.  Known differences are strict xfails that name the
difference, so fixing one turns its test into an XPASS failure (then drop the mark).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg


def values(shape, seed=0, lo=-2.0, hi=2.0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def away_from_zero(shape, seed=0, lo=0.5, hi=2.0):
    rng = np.random.default_rng(seed)
    return rng.uniform(lo, hi, size=shape) * rng.choice([-1.0, 1.0], size=shape)


def positive(shape, seed=0, lo=0.5, hi=2.0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def to_numpy(t):
    """A tapegrad or torch tensor's value as a numpy array."""
    return np.asarray(t.detach().numpy())


def run_parity(torch, fn, arrays, dtype="float64", rtol=None, atol=None):
    """Run fn(L, *leaves) in both libraries; compare value, dtype, shape and every leaf gradient.

    The backward pass seeds a non-uniform upstream gradient (same numbers in both libraries).
    """
    rtol = rtol if rtol is not None else (1e-6 if dtype == "float64" else 1e-5)
    atol = atol if atol is not None else (1e-12 if dtype == "float64" else 1e-6)
    results = {}
    for name, L in (("tapegrad", tg), ("torch", torch)):
        leaves = [L.tensor(np.asarray(a, dtype=np.float64), dtype=getattr(L, dtype),
                           requires_grad=True) for a in arrays]
        out = fn(L, *leaves)
        results[name] = (leaves, out)
    (tg_leaves, tg_out), (th_leaves, th_out) = results["tapegrad"], results["torch"]
    assert repr(tg_out.dtype) == repr(th_out.dtype)
    assert tuple(tg_out.shape) == tuple(th_out.shape)
    np.testing.assert_allclose(to_numpy(tg_out), to_numpy(th_out), rtol=rtol, atol=atol)
    assert tg_out.requires_grad == th_out.requires_grad
    if not th_out.requires_grad:
        return
    seed = np.random.default_rng(99).uniform(0.5, 1.5, size=tuple(th_out.shape))
    tg_out.backward(tg.tensor(seed, dtype=tg_out.dtype))
    th_out.backward(torch.tensor(seed, dtype=th_out.dtype))
    for i, (a, b) in enumerate(zip(tg_leaves, th_leaves)):
        if b.grad is None:
            assert a.grad is None, f"input {i}: torch gives no gradient, tapegrad does"
            continue
        assert a.grad is not None, f"input {i}: no gradient reached it"
        assert repr(a.grad.dtype) == repr(b.grad.dtype)
        assert tuple(a.grad.shape) == tuple(b.grad.shape)
        np.testing.assert_allclose(to_numpy(a.grad), to_numpy(b.grad), rtol=rtol, atol=atol,
                                   err_msg=f"gradient of input {i}")


def xfail(reason):
    return pytest.mark.xfail(strict=True, reason=reason)


# -- binary ops with broadcasting ------------------------------------------------------------------

BINARY = {
    "add": lambda L, a, b: a + b,
    "sub": lambda L, a, b: a - b,
    "mul": lambda L, a, b: a * b,
    "div": lambda L, a, b: a / b,
    "pow": lambda L, a, b: a ** b,
    "L.add": lambda L, a, b: L.add(a, b),
    "L.sub": lambda L, a, b: L.sub(a, b),
    "L.mul": lambda L, a, b: L.mul(a, b),
    "L.div": lambda L, a, b: L.div(a, b),
    "L.pow": lambda L, a, b: L.pow(a, b),
}

SHAPE_PAIRS = [
    ((3,), (3,)),
    ((3,), (2, 3)),
    ((2, 1), (1, 3)),
    ((4, 1, 3), (2, 1)),
    ((), (3,)),
    ((3,), ()),
    ((), ()),
    ((1,), (2, 3)),
    ((2, 3), (1, 1)),
    ((1, 1, 1), (3,)),
    ((2, 1, 1), (1, 1, 4)),
]


def binary_inputs(name, sa, sb, seed=0):
    if name.endswith("div"):
        return values(sa, seed), away_from_zero(sb, seed + 1)
    if name.endswith("pow"):
        return positive(sa, seed), values(sb, seed + 1, -1.5, 1.5)
    return values(sa, seed), values(sb, seed + 1)


@pytest.mark.parametrize("sa,sb", SHAPE_PAIRS, ids=lambda s: str(s).replace(" ", ""))
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_parity(torch, name, sa, sb):
    run_parity(torch, BINARY[name], binary_inputs(name, sa, sb))


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow"])
def test_binary_parity_float32(torch, name):
    run_parity(torch, BINARY[name], binary_inputs(name, (2, 1, 3), (4, 1)), dtype="float32")


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow"])
def test_binary_parity_one_constant(torch, name):
    a, b = binary_inputs(name, (2, 3), (3,))
    op = BINARY[name]
    run_parity(torch, lambda L, x: op(L, x, L.tensor(b, dtype=L.float64)), [a])
    run_parity(torch, lambda L, y: op(L, L.tensor(a, dtype=L.float64), y), [b])


# -- Python scalar operands ------------------------------------------------------------------------

SCALAR = {
    "x+2.5": (lambda L, x: x + 2.5, values),
    "2.5+x": (lambda L, x: 2.5 + x, values),
    "x+3": (lambda L, x: x + 3, values),
    "x-1.5": (lambda L, x: x - 1.5, values),
    "1.5-x": (lambda L, x: 1.5 - x, values),
    "2-x": (lambda L, x: 2 - x, values),
    "x*-1.5": (lambda L, x: x * -1.5, values),
    "-1.5*x": (lambda L, x: -1.5 * x, values),
    "3*x": (lambda L, x: 3 * x, values),
    "x/4": (lambda L, x: x / 4, values),
    "x*0.1": (lambda L, x: x * 0.1, values),
    "x/0.3": (lambda L, x: x / 0.3, values),
    "4/x": (lambda L, x: 4 / x, away_from_zero),
    "-2.5/x": (lambda L, x: -2.5 / x, away_from_zero),
    "x**3": (lambda L, x: x ** 3, values),
    "x**2.5": (lambda L, x: x ** 2.5, positive),
    "x**-1": (lambda L, x: x ** -1, away_from_zero),
    "x**0": (lambda L, x: x ** 0, values),
    "x**0.5 (negative base: nan)": (lambda L, x: x ** 0.5, values),
    "2.0**x": (lambda L, x: 2.0 ** x, values),
    "2**x": (lambda L, x: 2 ** x, values),
    "0.5**x": (lambda L, x: 0.5 ** x, values),
    "0.0**x (x >= 0)": (lambda L, x: 0.0 ** x, positive),
    "x**x": (lambda L, x: x ** x, positive),
    "-x": (lambda L, x: -x, values),
    "x.neg()": (lambda L, x: x.neg(), values),
}


@pytest.mark.parametrize("shape", [(), (5,), (2, 3)], ids=str)
@pytest.mark.parametrize("case", list(SCALAR))
def test_scalar_operand_parity(torch, case, shape):
    fn, data = SCALAR[case]
    run_parity(torch, fn, [data(shape, 3)])


@pytest.mark.parametrize("case", ["x+2.5", "4/x", "x**2.5", "2.0**x", "1.5-x", "x*0.1", "x/0.3"])
def test_scalar_operand_parity_float32(torch, case):
    fn, data = SCALAR[case]
    run_parity(torch, fn, [data((2, 3), 4)], dtype="float32")


def test_negative_scalar_base_pow_parity(torch):
    run_parity(torch, lambda L, x: (-2.0) ** x, [np.array([2.0, 0.5, 3.0])])


def test_zero_scalar_base_negative_exponent_parity(torch):
    run_parity(torch, lambda L, x: 0.0 ** x, [np.array([-1.0, 2.0, 0.0])])


def test_pow_special_values_parity(torch):
    """Base 0 / exponent 0 conventions of the tensor ** tensor VJPs."""
    run_parity(torch, lambda L, a, b: a ** b,
               [np.array([0.0, 0.0, 2.0, -1.0, 0.0]), np.array([0.0, 2.0, 0.0, 2.0, 0.5])])


# -- unary ops -------------------------------------------------------------------------------------

UNARY = {
    "neg": (lambda L, x: -x, values),
    "exp": (lambda L, x: x.exp(), values),
    "log": (lambda L, x: x.log(), positive),
    "tanh": (lambda L, x: x.tanh(), values),
    "relu": (lambda L, x: x.relu(), away_from_zero),
    "L.exp": (lambda L, x: L.exp(x), values),
    "L.log": (lambda L, x: L.log(x), positive),
    "L.tanh": (lambda L, x: L.tanh(x), values),
    "L.relu": (lambda L, x: L.relu(x), away_from_zero),
    "L.neg": (lambda L, x: L.neg(x), values),
    "chain": (lambda L, x: (x.tanh().exp() + 1.0).log().relu() * x, values),
}


@pytest.mark.parametrize("shape", [(), (5,), (2, 1, 3)], ids=str)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_parity(torch, name, shape):
    fn, data = UNARY[name]
    run_parity(torch, fn, [data(shape, 5)])


@pytest.mark.parametrize("name", ["neg", "exp", "log", "tanh", "relu"])
def test_unary_parity_float32(torch, name):
    fn, data = UNARY[name]
    run_parity(torch, fn, [data((3, 4), 6)], dtype="float32")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_special_values_parity(torch, dtype):
    x = np.array([-0.0, 1e-30, 70.0, -70.0, np.inf, -np.inf, np.nan])
    for fn in (lambda L, t: t.exp(), lambda L, t: t.tanh(), lambda L, t: -t,
               lambda L, t: t * 0.0, lambda L, t: t ** 2):
        run_parity(torch, fn, [x], dtype=dtype)
    run_parity(torch, lambda L, t: t.log(), [np.array([0.0, 1e-30, 2.0, np.inf, np.nan])],
               dtype=dtype)
    run_parity(torch, lambda L, t: t.relu(), [np.array([-1.0, 2.0, np.inf, -np.inf])],
               dtype=dtype)


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_nan_gradient_parity(torch, dtype, layout):
    key = slice(None) if layout == "contiguous" else slice(None, None, 2)
    run_parity(torch, lambda L, t: t[key].relu(), [np.array([np.nan, 0.0, 1.0, 0.0, -1.0])],
               dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_large_tensor_parity(torch, dtype):
    """40000 elements: above the kernels' no-GIL threshold."""
    a, b = values((200, 200), 30), positive((200, 200), 31)
    run_parity(torch, lambda L, x, y: (x * y - x / y + y ** 1.5 + (x.tanh() - 2 * x).exp()
                                       + x.relu() + (y.log() - x) * 0.1).mean(1),
               [a, b], dtype=dtype)


# -- reductions ------------------------------------------------------------------------------------

REDUCE_DIMS = [
    (None, False), (0, False), (1, False), (-1, False), (-3, False), (0, True), (-1, True),
    ((0, 2), False), ((0, 2), True), ((-1, 0), False), ((2, -2), True), ((0, 1, 2), False),
    ([1], False),
]


@pytest.mark.parametrize("dim,keepdim", REDUCE_DIMS, ids=str)
@pytest.mark.parametrize("red", ["sum", "mean"])
def test_reduction_parity(torch, red, dim, keepdim):
    def fn(L, x):
        r = getattr(x, red)() if dim is None else getattr(x, red)(dim, keepdim=keepdim)
        return r * r
    run_parity(torch, fn, [values((2, 3, 4), 8)])


@pytest.mark.parametrize("red", ["sum", "mean"])
def test_reduction_functional_parity(torch, red):
    run_parity(torch, lambda L, x: getattr(L, red)(x, 1, True) * x, [values((3, 4), 9)])
    run_parity(torch, lambda L, x: getattr(L, red)(x), [values((3, 4), 9)])


@pytest.mark.parametrize("dim", [0, -1, (0,)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("red", ["sum", "mean"])
def test_reduction_of_0d_parity(torch, red, dim, keepdim):
    run_parity(torch, lambda L, x: getattr(x, red)(dim, keepdim=keepdim) ** 3, [values((), 10)])


@pytest.mark.parametrize("red", ["sum", "mean"])
def test_reduction_parity_float32(torch, red):
    run_parity(torch, lambda L, x: getattr(x, red)((0, 2)).exp(), [values((3, 4, 5), 11)],
               dtype="float32")


@pytest.mark.parametrize("dim", [(), []], ids=["()", "[]"])
@pytest.mark.parametrize("red", ["sum", "mean"])
def test_reduction_empty_dim_list_parity(torch, red, dim):
    run_parity(torch, lambda L, x: getattr(x, red)(dim), [values((3, 4), 12)])


# -- indexing --------------------------------------------------------------------------------------

def _long(L, a):
    return L.tensor(np.asarray(a, dtype=np.int64))


def _mask(L, a):
    return L.tensor(np.asarray(a, dtype=bool))


INDEX = {
    "x[1]": lambda L: 1,
    "x[-1]": lambda L: -1,
    "x[2, 1]": lambda L: (2, 1),
    "x[1:3]": lambda L: slice(1, 3),
    "x[::2]": lambda L: slice(None, None, 2),
    "x[1:]": lambda L: slice(1, None),
    "x[:]": lambda L: slice(None),
    "x[2:100]": lambda L: slice(2, 100),
    "x[:, 2]": lambda L: (slice(None), 2),
    "x[0, 1:]": lambda L: (0, slice(1, None)),
    "x[..., None]": lambda L: (Ellipsis, None),
    "x[None]": lambda L: None,
    "x[None, 1]": lambda L: (None, 1),
    "x[...]": lambda L: Ellipsis,
    "x[..., 0]": lambda L: (Ellipsis, 0),
    "x[[0, 0, 1]]": lambda L: [0, 0, 1],
    "x[[-1, 0, -1]]": lambda L: [-1, 0, -1],
    "x[long tensor]": lambda L: _long(L, [3, 1, 3, 3]),
    "x[int32 tensor]": lambda L: L.tensor([2, 2], dtype=L.int32),
    "x[2-D long tensor]": lambda L: _long(L, [[0, 1], [1, 1]]),
    "x[0-d long tensor]": lambda L: _long(L, 2),
    "x[:, [2, 0, 2]]": lambda L: (slice(None), [2, 0, 2]),
    "x[[0, 0, 1], [1, 1, 2]]": lambda L: ([0, 0, 1], [1, 1, 2]),
    "x[t, t]": lambda L: (_long(L, [3, 3, 0]), _long(L, [2, 2, 2])),
    "x[t[:, None], t] (broadcast)": lambda L: (_long(L, [[0], [3]]), _long(L, [1, 1, 2])),
    "x[1:, [0, 0]]": lambda L: (slice(1, None), [0, 0]),
    "x[[1, 1, 3], :2]": lambda L: ([1, 1, 3], slice(None, 2)),
    "x[[0, 0], None]": lambda L: ([0, 0], None),
    "x[None, [2, 2]]": lambda L: (None, [2, 2]),
    "x[row mask]": lambda L: _mask(L, [True, False, True, True]),
    "x[bool list]": lambda L: [True, False, False, True],
    "x[full mask]": lambda L: _mask(L, np.arange(12).reshape(4, 3) % 3 != 1),
    "x[mask, 1:]": lambda L: (_mask(L, [False, True, True, False]), slice(1, None)),
    "x[:, mask]": lambda L: (slice(None), _mask(L, [True, False, True])),
    "x[[]]": lambda L: [],
    "x[True]": lambda L: True,
}


@pytest.mark.parametrize("name", list(INDEX))
def test_index_parity(torch, name):
    key = INDEX[name]
    run_parity(torch, lambda L, x: x[key(L)] * x[key(L)], [values((4, 3), 13)])


@pytest.mark.parametrize("key", [(0, 1, 2), (slice(None), 1), (Ellipsis, [0, 0]),
                                 (slice(None), [1, 0], [2, 2]), ([0, 1], slice(None), [1, 3]),
                                 (1, Ellipsis, None, 0)], ids=str)
def test_index_parity_3d(torch, key):
    run_parity(torch, lambda L, x: x[key].exp(), [values((2, 3, 4), 14)])


def test_index_parity_float32(torch):
    run_parity(torch, lambda L, x: x[[0, 0, 2]][:, ::2] * x[-1, ::2].tanh(), [values((3, 4), 15)],
               dtype="float32")


def test_negative_step_slice_raises_as_torch(torch):
    for L in (torch, tg):
        with pytest.raises(ValueError, match="step must be greater than zero"):
            L.tensor([1.0, 2.0, 3.0])[::-1]


@pytest.mark.parametrize("data", [[0.1, 1.1, 2.3], 0.1, [[1e-3, 7.7]]], ids=str)
def test_tensor_from_python_floats_as_float64_parity(torch, data):
    """Regression: tensor(floats, dtype=float64) once rounded the data through float32 first."""
    a = tg.tensor(data, dtype=tg.float64)
    b = torch.tensor(data, dtype=torch.float64)
    assert a.tolist() == b.tolist()


# -- non-contiguous leaves -------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["strided", "transposed"])
def test_noncontiguous_leaf_parity(torch, layout):
    base = away_from_zero((3, 6), 16)
    arr = base[:, ::2] if layout == "strided" else base[:3, :3].T
    c = values((3, 3), 17)
    grads, outs = [], []
    for L in (tg, torch):
        x = L.from_numpy(arr).requires_grad_()
        out = (x * L.tensor(c)).exp() + x.tanh() / x + x[[0, 0]].sum(0) + x.mean(1, keepdim=True)
        out.sum().backward()
        outs.append(to_numpy(out))
        grads.append(to_numpy(x.grad))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12)
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


# -- grad_fn names ---------------------------------------------------------------------------------

GRAD_FN = [
    ("x + y", lambda L, x, y: x + y),
    ("x + 2", lambda L, x, y: x + 2),
    ("2 + x", lambda L, x, y: 2 + x),
    ("x - y", lambda L, x, y: x - y),
    ("x - 2", lambda L, x, y: x - 2),
    ("2 - x", lambda L, x, y: 2 - x),
    ("x * y", lambda L, x, y: x * y),
    ("x * 2", lambda L, x, y: x * 2),
    ("2 * x", lambda L, x, y: 2 * x),
    ("x / y", lambda L, x, y: x / y),
    ("x / 2", lambda L, x, y: x / 2),
    ("2 / x", lambda L, x, y: 2 / x),
    ("x ** 2", lambda L, x, y: x ** 2),
    ("x ** 2.5", lambda L, x, y: x ** 2.5),
    ("x ** y", lambda L, x, y: x ** y),
    ("2.0 ** x", lambda L, x, y: 2.0 ** x),
    ("2 ** x", lambda L, x, y: 2 ** x),
    ("-x", lambda L, x, y: -x),
    ("x.exp()", lambda L, x, y: x.exp()),
    ("x.log()", lambda L, x, y: x.log()),
    ("x.tanh()", lambda L, x, y: x.tanh()),
    ("x.relu()", lambda L, x, y: x.relu()),
    ("x.sum()", lambda L, x, y: x.sum()),
    ("x.sum(0)", lambda L, x, y: x.sum(0)),
    ("x.sum((0, 1), keepdim=True)", lambda L, x, y: x.sum((0, 1), keepdim=True)),
    ("x.mean()", lambda L, x, y: x.mean()),
    ("x.mean(-1)", lambda L, x, y: x.mean(-1)),
    ("x[0]", lambda L, x, y: x[0]),
    ("x[-1]", lambda L, x, y: x[-1]),
    ("x[1:3]", lambda L, x, y: x[1:3]),
    ("x[::2]", lambda L, x, y: x[::2]),
    ("x[:]", lambda L, x, y: x[:]),
    ("x[1:, :]", lambda L, x, y: x[1:, :]),
    ("x[0, 1:]", lambda L, x, y: x[0, 1:]),
    ("x[[0, 0, 1]]", lambda L, x, y: x[[0, 0, 1]]),
    ("x[:, [0, 2]]", lambda L, x, y: x[:, [0, 2]]),
    ("x[mask]", lambda L, x, y: x[L.tensor([True, False, True])]),
    ("x[long tensor]", lambda L, x, y: x[L.tensor([2, 0])]),
    ("x[..., None]", lambda L, x, y: x[..., None]),
    ("x[None]", lambda L, x, y: x[None]),
    ("x[0, None]", lambda L, x, y: x[0, None]),
    ("x[:, 0]", lambda L, x, y: x[:, 0]),
    ("x[0, 1]", lambda L, x, y: x[0, 1]),
    ("x[None, 1]", lambda L, x, y: x[None, 1]),
    ("x[...]", lambda L, x, y: x[...]),
    ("x[:, :]", lambda L, x, y: x[:, :]),
    ("x[0-d long tensor]", lambda L, x, y: x[L.tensor(1)]),
]


@pytest.mark.parametrize("name,fn", [pytest.param(c[0], c[1], marks=c[2:], id=c[0])
                                     for c in GRAD_FN])
def test_grad_fn_name_parity(torch, name, fn):
    names = []
    for L in (tg, torch):
        x = L.tensor(positive((3, 3), 18), requires_grad=True)
        y = L.tensor(positive((3, 3), 19), requires_grad=True)
        out = fn(L, x, y)
        names.append(type(out.grad_fn).__name__)
    assert names[0] == names[1]


# -- second backward without retain_graph ----------------------------------------------------------

TWICE = [
    ("add", lambda L, x: x + 1.0),
    ("sub", lambda L, x: 1 - x),
    ("neg", lambda L, x: -x),
    ("sum", lambda L, x: x.sum(0)),
    ("mean", lambda L, x: x.mean(0)),
    ("select", lambda L, x: x[0]),
    ("slice", lambda L, x: x[1:]),
    ("mul", lambda L, x: x * x),
    ("mul scalar", lambda L, x: x * 2.0),
    ("div scalar", lambda L, x: x / 2),
    ("rdiv", lambda L, x: 2 / x),
    ("pow", lambda L, x: x ** 2),
    ("rpow", lambda L, x: 2 ** x),
    ("pow tensor", lambda L, x: x ** x),
    ("exp", lambda L, x: x.exp()),
    ("log", lambda L, x: x.log()),
    ("tanh", lambda L, x: x.tanh()),
    ("relu", lambda L, x: x.relu()),
    ("index list", lambda L, x: x[[0, 0, 1]]),
    ("index mask", lambda L, x: x[L.tensor([True, False, True])]),
]


def _second_backward(L, fn):
    x = L.tensor([0.5, 1.5, 2.0], dtype=L.float64, requires_grad=True)
    y = fn(L, x).sum()
    y.backward()
    try:
        y.backward()
    except RuntimeError as e:
        assert "Trying to backward through the graph a second time" in str(e)
        return "raises", None
    return "ok", to_numpy(x.grad)


@pytest.mark.parametrize("name,fn", [pytest.param(c[0], c[1], marks=c[2:], id=c[0])
                                     for c in TWICE])
def test_second_backward_parity(torch, name, fn):
    (tg_kind, tg_grad), (th_kind, th_grad) = _second_backward(tg, fn), _second_backward(torch, fn)
    assert tg_kind == th_kind
    if th_grad is not None:
        np.testing.assert_allclose(tg_grad, th_grad, rtol=1e-12)


def test_retain_graph_and_accumulation_parity(torch):
    out = []
    for L in (tg, torch):
        x = L.tensor([0.5, 1.5], dtype=L.float64, requires_grad=True)
        y = (x.exp() * x + x.log()).sum()
        y.backward(retain_graph=True)
        first = to_numpy(x.grad).copy()
        y.backward()
        (x * x).sum().backward()
        out.append((first, to_numpy(x.grad), str(x.grad)))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-12)
    assert out[0][2] == out[1][2]


def test_grad_dtype_parity_mixed_precision(torch):
    run_parity(torch, lambda L, a: a * L.tensor([1.5, 2.5, 3.5], dtype=L.float64),
               [values((3,), 20)], dtype="float32")
    run_parity(torch, lambda L, a: a / L.tensor(2.5, dtype=L.float64), [values((3,), 21)],
               dtype="float32")
    out = []
    for L in (tg, torch):
        a = L.tensor([1.0, 2.0], dtype=L.float32, requires_grad=True)
        b = L.tensor([[3.0], [4.0]], dtype=L.float64, requires_grad=True)
        z = L.tensor(0.5, dtype=L.float64, requires_grad=True)
        ((a * b + z) ** 2).sum().backward()
        out.append([repr(t.grad.dtype) + str(t.grad) for t in (a, b, z)])
    assert out[0] == out[1]


# -- repr ------------------------------------------------------------------------------------------

def _arange(L, n, dtype=None):
    return L.tensor(np.arange(n), dtype=getattr(L, dtype) if dtype else None)


REPRS = {
    "ints": lambda L: L.tensor([1, 2, 3]),
    "negative ints, widths": lambda L: L.tensor([-1, 20, 300]),
    "int 2-D wraps": lambda L: L.tensor(np.arange(30).reshape(2, 15) * 1000),
    "int32": lambda L: L.tensor([1, 2], dtype=L.int32),
    "int16": lambda L: L.tensor([-1, 2], dtype=L.int16),
    "int8": lambda L: L.tensor([-1, 2], dtype=L.int8),
    "uint8": lambda L: L.tensor([1, 255], dtype=L.uint8),
    "bools": lambda L: L.tensor([True, False, True]),
    "bool 2-D": lambda L: L.tensor(np.eye(2, dtype=bool)),
    "float int mode": lambda L: L.tensor([1.0, 2.0, 3.0]),
    "float int mode negative": lambda L: L.tensor([-1.0, 2.0, 30.0]),
    "float int mode -0.": lambda L: L.tensor([-0.0, 1.0]),
    "zeros": lambda L: L.zeros(2, 3),
    "decimal": lambda L: L.tensor([1.5, 2.25, -3.125]),
    "decimal float32 rounding": lambda L: L.tensor([0.1, 0.2, 0.3]),
    "decimal round up": lambda L: L.tensor([0.99995, 1.0]),
    "sci 1e10": lambda L: L.tensor([1e10, 1.0]),
    "sci 1e-5": lambda L: L.tensor([1e-5, 1.0]),
    "sci 1e-5 alone": lambda L: L.tensor([1e-5, 2e-5]),
    "sci ratio > 1000": lambda L: L.tensor([1.5, 2000.0]),
    "sci with zero": lambda L: L.tensor([0.0, 1e-5]),
    "sci negative": lambda L: L.tensor([-1e-7, 3e5]),
    "sci int mode > 1e8": lambda L: L.tensor([1e9, 1.0]),
    "int mode exactly 1e8": lambda L: L.tensor([1e8]),
    "sci 1.2346e+08": lambda L: L.tensor([123456789.0, 1.0]),
    "nan inf int mode": lambda L: L.tensor([float("nan"), float("inf"), -float("inf"), 1.0]),
    "nan decimal": lambda L: L.tensor([float("nan"), 1.5]),
    "nan sci": lambda L: L.tensor([1e-5, float("nan"), float("inf")]),
    "all nan": lambda L: L.tensor([float("nan")]),
    "nan in 2-D int mode": lambda L: L.tensor([[1e3, float("nan")], [1.0, 2.0]]),
    "0-d float": lambda L: L.tensor(3.5),
    "0-d int mode": lambda L: L.tensor(3.0),
    "0-d negative": lambda L: L.tensor(-2.5),
    "0-d sci": lambda L: L.tensor(1e-5),
    "0-d nan": lambda L: L.tensor(float("nan")),
    "0-d int": lambda L: L.tensor(3),
    "0-d bool": lambda L: L.tensor(True),
    "0-d float64": lambda L: L.tensor(2.5, dtype=L.float64),
    "0-d -inf float64": lambda L: L.tensor(float("-inf"), dtype=L.float64),
    "empty": lambda L: L.zeros(0),
    "empty 2-D": lambda L: L.zeros(2, 0),
    "empty int64": lambda L: L.zeros(0, dtype=L.int64),
    "empty float64 3-D": lambda L: L.zeros(0, 0, 3, dtype=L.float64),
    "empty bool": lambda L: L.zeros(0, dtype=L.bool),
    "2-D": lambda L: L.tensor([[1.5, 2.0], [3.0, 4.0]]),
    "2-D wraps": lambda L: L.tensor(np.arange(60.0).reshape(3, 20) * 1.5, dtype=L.float32),
    "3-D": lambda L: L.tensor(np.arange(24.0).reshape(2, 3, 4) / 7, dtype=L.float32),
    "3-D int": lambda L: L.tensor(np.arange(24).reshape(2, 3, 4)),
    "float64": lambda L: L.tensor([1.5, 2.0], dtype=L.float64),
    "float64 int mode": lambda L: L.tensor([1.0, 2.0], dtype=L.float64),
    "float16": lambda L: L.tensor([1.5, 2.0], dtype=L.float16),
    "float16 sci": lambda L: L.tensor([1e-5, 1.0], dtype=L.float16),
    "1000 elements (not summarized)": lambda L: L.tensor(np.arange(1000.0), dtype=L.float32),
    "1001 elements (summarized)": lambda L: L.tensor(np.arange(1001.0), dtype=L.float32),
    "summarized ints": lambda L: _arange(L, 2000),
    "summarized float sci": lambda L: L.tensor(np.arange(2000) / 3, dtype=L.float32),
    "summarized bools": lambda L: L.tensor(np.arange(1001) % 2 == 0),
    "summarized 2-D": lambda L: L.tensor(np.arange(2500.0).reshape(50, 50) / 7),
    "summarized 2-D narrow": lambda L: L.tensor(np.arange(2000.0).reshape(1000, 2)),
    "summarized 2-D wide float64": lambda L: L.tensor(np.arange(2000.0).reshape(2, 1000),
                                                      dtype=L.float64),
    "summarized 3-D int": lambda L: L.tensor(np.arange(2 * 30 * 40).reshape(2, 30, 40)),
    "summarized 3-D short dim 0": lambda L: L.tensor(np.arange(10 * 10 * 11.0).reshape(10, 10, 11),
                                                     dtype=L.float32),
    "long row float wraps": lambda L: L.tensor(np.arange(40.0) / 3, dtype=L.float32),
    "long row int wraps": lambda L: _arange(L, 100),
    "requires_grad": lambda L: L.tensor([1.0, 2.0], requires_grad=True),
    "requires_grad float64": lambda L: L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True),
    "requires_grad 0-d": lambda L: L.tensor(1.5, requires_grad=True),
    "requires_grad empty": lambda L: L.zeros(0, requires_grad=True),
    "requires_grad empty float64": lambda L: L.zeros(2, 0, dtype=L.float64, requires_grad=True),
    "requires_grad long row": lambda L: L.tensor(np.arange(30.0) / 3, dtype=L.float32,
                                                 requires_grad=True),
    "grad_fn Mul": lambda L: L.tensor([1.0], requires_grad=True) * 3,
    "grad_fn Sum 0-d": lambda L: (L.tensor([1.0, 2.0], requires_grad=True) * 3).sum(),
    "grad_fn suffix wraps": lambda L: L.tensor(np.arange(8.0) / 3, dtype=L.float64,
                                               requires_grad=True) * 2,
    "grad_fn suffix wraps 2": lambda L: L.tensor(np.arange(9.0) / 3, dtype=L.float64,
                                                 requires_grad=True) + 2,
    "grad_fn long row float64": lambda L: L.tensor(np.arange(30.0) / 3, dtype=L.float64,
                                                   requires_grad=True) * 2,
    "grad_fn Pow": lambda L: L.tensor([1.0, 2.0], requires_grad=True) ** 2,
    "grad_fn Rsub": lambda L: 1 - L.tensor([[1.5, 2.0]], requires_grad=True),
    "grad_fn Index": lambda L: L.tensor([1.0, 2.0], requires_grad=True)[[0, 0]],
    "grad_fn Select 0-d": lambda L: L.tensor([1.0, 2.0], requires_grad=True)[1],
    "grad_fn Mean float64": lambda L: L.tensor([[1.0, 2.0]], dtype=L.float64,
                                               requires_grad=True).mean(0),
    "grad_fn Exp sci": lambda L: L.tensor([30.0, 0.0], requires_grad=True).exp(),
    "grad_fn empty": lambda L: L.zeros(0, requires_grad=True) * 2,
    "grad_fn empty float64 2-D": lambda L: L.zeros(0, 2, dtype=L.float64, requires_grad=True) + 1,
    "detached": lambda L: (L.tensor([1.0, 2.0], requires_grad=True) * 2).detach(),
}


@pytest.mark.parametrize("name", list(REPRS))
def test_repr_parity(torch, name):
    a, b = REPRS[name](tg), REPRS[name](torch)
    assert str(a) == str(b)
    assert repr(a) == repr(b)


def test_repr_parity_of_grads(torch):
    texts = []
    for L in (tg, torch):
        x = L.tensor([[0.5, 1.0, 2.0], [3.0, 1e-3, 4.0]], requires_grad=True)
        y = L.tensor([1.0, 2.0, 3.0], dtype=L.float64, requires_grad=True)
        ((x * y).exp().sum(0) / 7).sum().backward()
        texts.append((str(x.grad), str(y.grad)))
    assert texts[0] == texts[1]


def test_repr_parity_print_shapes_and_dtypes(torch):
    texts = []
    for L in (tg, torch):
        x = L.tensor(np.zeros((2, 3)), requires_grad=True)
        texts.append(f"{x.shape} {x.size()} {x.dtype} {x.sum(0).shape} {x[None].size()}")
    assert texts[0] == texts[1]


# -- dtype promotion -------------------------------------------------------------------------------

PROMOTION = {
    "int64 * 2.5": lambda L: L.tensor([1, 2]) * 2.5,
    "2.5 * int64": lambda L: 2.5 * L.tensor([1, 2]),
    "bool + 1": lambda L: L.tensor([True, False]) + 1,
    "bool * 2.5": lambda L: L.tensor([True, False]) * 2.5,
    "bool + bool": lambda L: L.tensor([True, False]) + L.tensor([True, True]),
    "bool / bool": lambda L: L.tensor([True, True]) / L.tensor([True, True]),
    "int64 / 2": lambda L: L.tensor([1, 2]) / 2,
    "int64 / int64": lambda L: L.tensor([1, 3]) / L.tensor([2, 2]),
    "int32 / int32": lambda L: L.tensor([1, 2], dtype=L.int32) / L.tensor([2, 2], dtype=L.int32),
    "int8 / 2": lambda L: L.tensor([3], dtype=L.int8) / 2,
    "2 / int64": lambda L: 2 / L.tensor([1, 4]),
    "float32 + 0-d float64": lambda L: L.tensor([1.5, 2.0]) + L.tensor(1.25, dtype=L.float64),
    "0-d float64 * float32": lambda L: L.tensor(1.25, dtype=L.float64) * L.tensor([2.0]),
    "int64 vector + 0-d float64": lambda L: L.tensor([1, 2]) + L.tensor(1.5, dtype=L.float64),
    "int64 vector / 0-d float64": lambda L: L.tensor([1, 2]) / L.tensor(2.0, dtype=L.float64),
    "0-d int64 + 0-d float64": lambda L: L.tensor(1) + L.tensor(1.5, dtype=L.float64),
    "float32 + float64 vectors": lambda L: L.tensor([1.5, 2.0]) + L.tensor([1.0, 2.0],
                                                                           dtype=L.float64),
    "float16 + 1.0": lambda L: L.tensor([1.0], dtype=L.float16) + 1.0,
    "float16 + 0-d float32": lambda L: L.tensor([1.0], dtype=L.float16) + L.tensor(1.0),
    "float16 * float32": lambda L: L.tensor([1.5], dtype=L.float16) * L.tensor([2.0]),
    "uint8 + int8": lambda L: L.tensor([1, 2], dtype=L.uint8) + L.tensor([1, 2], dtype=L.int8),
    "uint8 - 1 wraps": lambda L: L.tensor([0], dtype=L.uint8) - 1,
    "int8 + 100 wraps": lambda L: L.tensor([100], dtype=L.int8) + 100,
    "int32 vector + 0-d int64": lambda L: L.tensor([1], dtype=L.int32) + L.tensor(1),
    "int32 + 5": lambda L: L.tensor([1], dtype=L.int32) + 5,
    "int64 + True": lambda L: L.tensor([1]) + True,
    "int8 vector + 0-d bool": lambda L: L.tensor([1, 2], dtype=L.int8) + L.tensor(True),
    "bool vector + 0-d uint8": lambda L: L.tensor([True]) + L.tensor(3, dtype=L.uint8),
    "0-d float64 + 1.5": lambda L: L.tensor(1.0, dtype=L.float64) + 1.5,
    "int64 ** 2": lambda L: L.tensor([1, 2]) ** 2,
    "int64 ** 2.5": lambda L: L.tensor([1, 2]) ** 2.5,
    "2 ** int64": lambda L: 2 ** L.tensor([1, 2]),
    "2.5 ** int64": lambda L: 2.5 ** L.tensor([1, 2]),
    "int32 ** int64": lambda L: L.tensor([2], dtype=L.int32) ** L.tensor([3]),
    "-int64": lambda L: -L.tensor([1, -2]),
    "-uint8": lambda L: -L.tensor([1], dtype=L.uint8),
    "exp(int64)": lambda L: L.tensor([1, 2]).exp(),
    "log(int32)": lambda L: L.tensor([1, 2], dtype=L.int32).log(),
    "tanh(bool)": lambda L: L.tensor([True, False]).tanh(),
    "relu(int64)": lambda L: L.tensor([-1, 2]).relu(),
    "sum(bool)": lambda L: L.tensor([True, True]).sum(),
    "sum(int32)": lambda L: L.tensor([1, 2], dtype=L.int32).sum(),
    "sum(int8, dim)": lambda L: L.tensor([[1, 2]], dtype=L.int8).sum(1),
    "sum(float16)": lambda L: L.tensor([1.0, 2.0], dtype=L.float16).sum(),
    "mean(float64, dim)": lambda L: L.tensor([[1.0, 2.0]], dtype=L.float64).mean(0),
    "float32 leaf * float64 (requires grad)": lambda L: (L.tensor([1.0], requires_grad=True)
                                                        * L.tensor([2.0], dtype=L.float64)),
    "np.float32 scalar operand": lambda L: L.tensor([1.0]) + np.float32(2.5),
    "np.int64 scalar operand": lambda L: L.tensor([1], dtype=L.int32) + np.int64(2),
    "int8 + 1000 wraps": lambda L: L.tensor([1], dtype=L.int8) + 1000,
    "float32 + np.float64 scalar": lambda L: L.tensor([1.0, 2.0]) + np.float64(0.1),
    "strided float32 + np.float64 scalar": lambda L: L.tensor([1.0, 2.0, 3.0])[::2] + np.float64(0.1),
    "float16 + np.float64 scalar": lambda L: L.tensor([1.0, 2.0], dtype=L.float16) + np.float64(0.1),
    "np.float64 scalar * tensor": lambda L: np.float64(2.5) * L.tensor([1.0]),
}


def _promotion_params():
    for name, case in PROMOTION.items():
        if isinstance(case, tuple):                    # (fn, mark) for a known difference
            yield pytest.param(name, case[0], marks=case[1], id=name)
        else:
            yield pytest.param(name, case, id=name)


@pytest.mark.parametrize("name,fn", list(_promotion_params()))
def test_dtype_promotion_parity(torch, name, fn):
    a, b = fn(tg), fn(torch)
    assert type(a).__name__ == type(b).__name__ == "Tensor"
    assert repr(a.dtype) == repr(b.dtype)
    assert str(a) == str(b)


RESULT_TYPE = [
    ("int64 tensor, 2.5", lambda L: (L.tensor([1, 2]), 2.5)),
    ("bool tensor, 1", lambda L: (L.tensor([True]), 1)),
    ("int32 tensor, 0-d int64", lambda L: (L.tensor([1], dtype=L.int32), L.tensor(1))),
    ("float32 tensor, 0-d float64", lambda L: (L.tensor([1.0]), L.tensor(1.0, dtype=L.float64))),
    ("int64 tensor, 0-d float64", lambda L: (L.tensor([1]), L.tensor(1.0, dtype=L.float64))),
    ("float16 tensor, float64 tensor", lambda L: (L.tensor([1.0], dtype=L.float16),
                                                  L.tensor([1.0], dtype=L.float64))),
    ("uint8 tensor, int8 tensor", lambda L: (L.tensor([1], dtype=L.uint8),
                                             L.tensor([1], dtype=L.int8))),
    ("0-d bool, 0-d uint8", lambda L: (L.tensor(True), L.tensor(1, dtype=L.uint8))),
    ("float16 tensor, 1", lambda L: (L.tensor([1.0], dtype=L.float16), 1)),
]


@pytest.mark.parametrize("name,args", RESULT_TYPE, ids=[c[0] for c in RESULT_TYPE])
def test_result_type_parity(torch, name, args):
    assert repr(tg.result_type(*args(tg))) == repr(torch.result_type(*args(torch)))


def _error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and message are what we compare
        return type(e).__name__, str(e)
    return None


ERRORS = [
    ("int ** negative int", lambda L: L.tensor([1, 2]) ** -1),
    ("mean(int64)", lambda L: L.tensor([1, 2]).mean()),
    ("-bool", lambda L: -L.tensor([True])),
    ("broadcast mismatch", lambda L: L.tensor([1.0, 2.0]) + L.tensor([1.0, 2.0, 3.0])),
    ("float index", lambda L: L.tensor([1.0, 2.0])[L.tensor([1.0])]),
    ("index out of range", lambda L: L.tensor([1.0, 2.0, 3.0])[5]),
    ("requires_grad on int", lambda L: L.tensor([1, 2], requires_grad=True)),
    ("sum dim out of range", lambda L: L.tensor([[1.0]]).sum(2)),
    ("bool - bool", lambda L: L.tensor([True]) - L.tensor([True])),
    ("relu(bool)", lambda L: L.tensor([True, False]).relu()),
    ("too many indices", lambda L: L.tensor([1.0, 2.0])[0, 0]),
]


@pytest.mark.parametrize("name,fn", [pytest.param(c[0], c[1], marks=c[2:], id=c[0])
                                     for c in ERRORS])
def test_error_parity(torch, name, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = _error_of(lambda: fn(tg)), _error_of(lambda: fn(torch))
    assert b is not None, "torch did not raise"
    assert a is not None, f"tapegrad did not raise; torch raised {b}"
    assert a[0] == b[0]
    assert a[1].splitlines()[0] == b[1].splitlines()[0]
