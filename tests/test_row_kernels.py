"""The C row kernels behind broadcast gradients and linear's bias give the reference's bits.

A gradient summed over leading dims (the bias of a linear layer, the b of `x + b`) is a column
sum in C, in PyTorch's order (src/tapegrad/cascade_sum.c): it must equal PyTorch's sum_to to the
bit, in float32 and float64, including the +0.0 that a column of -0.0 sums to.  Linear adds its
bias row by row in C, which must equal numpy's addition to the bit.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

F = tg.nn.functional


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _grad_sample(rng, shape, dtype):
    g = rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 1e3], size=shape)
    g = g.astype(dtype)
    g.reshape(-1)[::7] = -0.0
    return g


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape,b_shape", [
    ((64, 256), (256,)), ((10000, 3), (3,)), ((8193, 7), (7,)), ((5, 2, 9), (2, 9)),
    ((300, 40, 3), (3,)), ((1, 5), (5,)), ((10000, 1), (1,)), ((9, 1), (1,)),
    ((12, 4), (1, 4)), ((6, 5), (6, 1))])
def test_broadcast_gradient_is_pytorchs_sum_to_the_bit(x_shape, b_shape, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(len(x_shape) * 100 + x_shape[0])
    x = tg.tensor(rng.standard_normal(x_shape).astype(dtype), requires_grad=True)
    b = tg.tensor(rng.standard_normal(b_shape).astype(dtype), requires_grad=True)
    g = _grad_sample(rng, x_shape, dtype)
    (x + b).backward(tg.from_numpy(g))
    lead = len(x_shape) - len(b_shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(b_shape)
                                      if n == 1 and x_shape[lead + i] != 1)
    want = torch.from_numpy(g).sum(axes, keepdim=True).reshape(b_shape).numpy()
    assert b.grad.dtype == (tg.float32 if dtype == np.float32 else tg.float64)
    np.testing.assert_array_equal(_bits(b.grad.numpy()), _bits(want))


def test_a_column_of_negative_zeros_sums_to_positive_zero_as_pytorch():
    x = tg.zeros(3, 2, requires_grad=True)
    b = tg.zeros(2, requires_grad=True)
    (x + b).backward(tg.full((3, 2), -0.0))
    assert np.signbit(b.grad.numpy()).tolist() == [False, False]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,k,m,bias_shape", [(64, 784, 256, (256,)), (3, 4, 5, (5,)),
                                              (7, 3, 1, (1,)), (4, 6, 5, (1,)),
                                              (4, 6, 5, (4, 5)), (2, 3, 5, (1, 5))])
def test_linear_bias_is_numpys_addition_to_the_bit(n, k, m, bias_shape, dtype):
    rng = np.random.default_rng(n + k + m)
    x = rng.standard_normal((n, k)).astype(dtype)
    w = rng.standard_normal((m, k)).astype(dtype)
    bias = rng.standard_normal(bias_shape).astype(dtype)
    got = F.linear(tg.from_numpy(x), tg.from_numpy(w), tg.from_numpy(bias)).numpy()
    want = x @ w.T
    np.add(want, bias, out=want)
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_linear_on_a_batch_of_matrices_adds_the_bias_to_every_row():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    w = rng.standard_normal((5, 4)).astype(np.float32)
    bias = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)
    got = F.linear(tg.from_numpy(x), tg.from_numpy(w), tg.from_numpy(bias)).numpy()
    want = np.matmul(x, w.T) + bias
    np.testing.assert_array_equal(_bits(got), _bits(want))


# -- binary ops with a row or a per-row value broadcast (kernel_operands' row mode) -------------

_ROW_CASES = [((64, 10), (10,)), ((3, 4, 5), (5,)), ((3, 4, 5), (1, 1, 5)), ((2, 7), (1, 7)),
              ((1, 6), (6,)), ((6, 5), (6, 1)), ((2, 3, 4), (2, 3, 1)), ((0, 4), (4,)),
              ((4200, 8), (8,)), ((4200, 8), (4200, 1)),   # without the GIL
              ((3000, 2), (2,))]                    # narrow rows, many: numpy's loop


def _values(rng, shape, dtype):
    v = rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 1e3], size=shape)
    flat = v.reshape(-1)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan]
    flat[: min(len(flat), len(specials))] = specials[: len(flat)]
    return v.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("full_shape,part_shape", _ROW_CASES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "minimum"])
@pytest.mark.parametrize("part_first", [False, True])
def test_row_broadcast_binary_is_numpys_to_the_bit(full_shape, part_shape, op, part_first, dtype):
    rng = np.random.default_rng(len(full_shape) * 10 + part_shape[-1])
    full = _values(rng, full_shape, dtype)
    part = _values(rng, part_shape, dtype)
    a, b = (part, full) if part_first else (full, part)
    ta, tb = tg.from_numpy(a), tg.from_numpy(b)
    got = {"add": lambda: ta + tb, "sub": lambda: ta - tb, "mul": lambda: ta * tb,
           "div": lambda: ta / tb, "maximum": lambda: tg.maximum(ta, tb),
           "minimum": lambda: tg.minimum(ta, tb)}[op]().numpy()
    with np.errstate(all="ignore"):
        want = getattr(np, {"div": "true_divide", "sub": "subtract", "mul": "multiply"}.get(op, op))(a, b)
    if op in ("maximum", "minimum"):
        # PyTorch keeps a where a and b tie (max(-0.0, 0.0) is -0.0); numpy may return b
        a_, b_ = np.broadcast_arrays(a, b)
        want = np.where((a_ == b_) & ~np.isnan(a_), a_, want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_broadcast_gradients_match_numpys_formulas(dtype):
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((6, 4)).astype(dtype)
    rv = (rng.random(4) + 0.5).astype(dtype)
    cv = (rng.random((6, 1)) + 0.5).astype(dtype)
    gv = rng.standard_normal((6, 4)).astype(dtype)
    x, r, c = (tg.tensor(v, requires_grad=True) for v in (xv, rv, cv))
    ((x - r) / c * r).backward(tg.from_numpy(gv))
    np.testing.assert_allclose(x.grad.numpy(), gv * rv / cv, rtol=1e-6)
    np.testing.assert_allclose(r.grad.numpy(),
                               (gv * ((xv - rv) / cv - rv / cv)).sum(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.grad.numpy(),
                               (-gv * (xv - rv) * rv / cv ** 2).sum(1, keepdims=True),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_in_place_row_broadcast_under_no_grad_is_numpys(op):
    rng = np.random.default_rng(7)
    xv = rng.standard_normal((5, 3))
    rv = rng.standard_normal(3)
    cv = rng.standard_normal((5, 1))
    x = tg.from_numpy(xv.copy())
    with tg.no_grad():
        getattr(x, f"{op}_")(tg.from_numpy(rv))
        getattr(x, f"{op}_")(tg.from_numpy(cv))
    ufunc = getattr(np, {"div": "true_divide", "sub": "subtract", "mul": "multiply"}.get(op, op))
    np.testing.assert_array_equal(x.numpy(), ufunc(ufunc(xv, rv), cv))


@pytest.mark.parametrize("pick", [lambda t: t[0], lambda t: t[2], lambda t: t[1:2],
                                  lambda t: t[-1]])
def test_in_place_with_a_row_of_itself_is_refused_as_torch(pick):
    # x += x[0]: the source partly overlaps the memory written, so the result would depend on
    # the order of the writes; PyTorch refuses it (and a clone() makes it well defined).
    xv = np.arange(12.0).reshape(4, 3)
    x = tg.from_numpy(xv.copy())
    with tg.no_grad(), pytest.raises(RuntimeError, match="refer to a single memory location"):
        x += pick(x)
    np.testing.assert_array_equal(x.numpy(), xv)          # nothing written
    with tg.no_grad():
        x += pick(x).clone()
    want = xv.copy()
    want += pick(want).copy()
    np.testing.assert_array_equal(x.numpy(), want)


def test_a_compiled_function_with_a_bias_broadcast_replays_and_equals_eager():
    rng = np.random.default_rng(11)
    xv = rng.standard_normal((8, 5)).astype(np.float32)
    bv = rng.standard_normal(5).astype(np.float32)

    def f(x, b):
        return ((x + b) * b).tanh().sum()

    compiled = tg.compile(f)
    for _ in range(3):
        x = tg.tensor(xv, requires_grad=True)
        b = tg.tensor(bv, requires_grad=True)
        out = compiled(x, b)
        out.backward()
        xe = tg.tensor(xv, requires_grad=True)
        be = tg.tensor(bv, requires_grad=True)
        f(xe, be).backward()
        np.testing.assert_array_equal(out.detach().numpy(), f(tg.from_numpy(xv), tg.from_numpy(bv)).numpy())
        np.testing.assert_array_equal(x.grad.numpy(), xe.grad.numpy())
        np.testing.assert_array_equal(b.grad.numpy(), be.grad.numpy())
    # the broadcast add is a replayed C step
    assert compiled.stats["replays"] == 2 and compiled.explain().startswith("replayed")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_compiled_mlp_with_bias_rows_and_row_scaling_replays_bit_for_bit(dtype):
    rng = np.random.default_rng(12)
    xv = rng.standard_normal((16, 6)).astype(dtype)
    params = [rng.standard_normal(s).astype(dtype) for s in [(6, 5), (5,), (16, 1), (5, 3), (3,)]]

    def f(x, w1, b1, c, w2, b2):
        h = ((x @ w1 + b1) / c).tanh()
        return ((h @ w2 - b2) * b2).sum()

    compiled = tg.compile(f)
    for _ in range(3):
        ts = [tg.tensor(p, requires_grad=True) for p in params]
        te = [tg.tensor(p, requires_grad=True) for p in params]
        out = compiled(tg.from_numpy(xv), *ts)
        out.backward()
        ref = f(tg.from_numpy(xv), *te)
        ref.backward()
        np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
        for t, e in zip(ts, te):
            np.testing.assert_array_equal(_bits(t.grad.numpy()), _bits(e.grad.numpy()))
    assert compiled.stats["replays"] == 2


@pytest.mark.parametrize("x_shape,b_shape", [((1, 6), (6,)), ((6,), (1, 6)), ((1, 1, 4), (1, 4)),
                                             ((2, 1), (2, 1)), ((1, 1), (1,))])
def test_a_compiled_broadcast_between_operands_of_one_size_keeps_every_gradient(x_shape, b_shape):
    # (1, 6) + (6,): the same number of elements in other shapes.  The replay's one-element
    # broadcast step must not take b, or b's gradient is summed down to one element.
    rng = np.random.default_rng(13)
    xv = rng.standard_normal(x_shape)
    bv = rng.standard_normal(b_shape)

    def f(x, b):
        return ((x + b) * b).sum()

    compiled = tg.compile(f)
    for _ in range(3):
        x, b = tg.tensor(xv, requires_grad=True), tg.tensor(bv, requires_grad=True)
        xe, be = tg.tensor(xv, requires_grad=True), tg.tensor(bv, requires_grad=True)
        compiled(x, b).backward()
        f(xe, be).backward()
        np.testing.assert_array_equal(x.grad.numpy(), xe.grad.numpy())
        np.testing.assert_array_equal(b.grad.numpy(), be.grad.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("full_shape,part_shape", [((6, 4), (4,)), ((6, 4), (6, 1)),
                                                   ((2, 3, 5), (1, 5)), ((2, 3, 5), (2, 3, 1)),
                                                   ((1200, 8), (8,)), ((1200, 8), (1200, 1))])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("part_first", [False, True])
def test_replayed_row_broadcast_steps_equal_eager_bit_for_bit(full_shape, part_shape, op,
                                                              part_first, dtype):
    rng = np.random.default_rng(17)
    fv = (rng.standard_normal(full_shape) + 3).astype(dtype)
    pv = (rng.standard_normal(part_shape) + 3).astype(dtype)
    binary = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
              "mul": lambda a, b: a * b, "div": lambda a, b: a / b}[op]

    def f(full, part):
        y = binary(part, full) if part_first else binary(full, part)
        return (y * y).sum()

    compiled = tg.compile(f)
    for _ in range(3):
        ts = [tg.tensor(v, requires_grad=True) for v in (fv, pv)]
        te = [tg.tensor(v, requires_grad=True) for v in (fv, pv)]
        out = compiled(*ts)
        out.backward()
        ref = f(*te)
        ref.backward()
        np.testing.assert_array_equal(_bits(out.detach().numpy()), _bits(ref.detach().numpy()))
        for t, e in zip(ts, te):
            np.testing.assert_array_equal(_bits(t.grad.numpy()), _bits(e.grad.numpy()))
    assert compiled.stats["replays"] == 2 and compiled.explain().startswith("replayed")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape,e_shape", [((2, 3), (3,)), ((2, 3), (2, 1)), ((2, 3), (2, 3)),
                                             ((40, 3), (3,))])
def test_a_tensor_exponent_is_numpys_pow_at_every_size(x_shape, e_shape, dtype):
    # The C pow kernel's shortcuts (x*x*x, sqrt, ...) are PyTorch's for a number exponent only;
    # with a tensor exponent sqrt(-inf) would give nan where pow gives inf, and x*x*x is off by
    # an ulp.  Small and large tensors must agree with numpy alike.
    rng = np.random.default_rng(29)
    x = rng.standard_normal(x_shape).astype(dtype) * 3
    x.reshape(-1)[:2] = [-np.inf, -0.0]
    e = rng.choice([0.5, 3.0, -1.0, 2.0, 1.7], size=e_shape).astype(dtype)
    e.reshape(-1)[0] = 0.5
    got = (tg.from_numpy(x) ** tg.from_numpy(e)).numpy()
    with np.errstate(all="ignore"):
        want = np.power(x, e)
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("start", [0, 12])
def test_in_place_with_a_per_row_view_of_itself_is_refused_as_torch(start):
    # x (4, 4) += (4, 1) view of x's own first or last four elements: refused as in PyTorch
    xv = np.arange(16.0).reshape(4, 4)
    x = tg.from_numpy(xv.copy())
    with tg.no_grad(), pytest.raises(RuntimeError, match="refer to a single memory location"):
        x += x.view(-1)[start:start + 4].view(4, 1)
    with tg.no_grad():
        x += x.view(-1)[start:start + 4].view(4, 1).clone()
    want = xv + xv.reshape(-1)[start:start + 4].reshape(4, 1)
    np.testing.assert_array_equal(x.numpy(), want)