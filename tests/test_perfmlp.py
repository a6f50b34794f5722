"""Linear's bias added inside the transposed product's copy back (matmul_layout.pxi): the values
are the bits of the product plus the bias added afterwards, eager and tapegrad.compile'd alike,
and PyTorch's within its own BLAS's rounding."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _core


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


@pytest.fixture
def layouts():
    """settle(n, k, m, dtype, choice): that shape's product taken one way for the test, measured
    again after it (a plan left settled would decide for later tests)."""
    settled = []

    def settle(n, k, m, dtype, choice):
        settled.append((n, k, m, dtype))
        _core._set_matmul_layout(n, k, m, dtype, choice)

    yield settle
    for n, k, m, dtype in settled:
        _core._set_matmul_layout(n, k, m, dtype, None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,k,m", [(64, 784, 256), (5, 7, 3), (33, 17, 67), (1, 9, 70), (70, 9, 1)])
def test_transposing_copy_adds_the_bias_as_a_separate_addition(dtype, n, k, m):
    rng = np.random.default_rng(n * 1000 + m)
    a = rng.standard_normal((n, k)).astype(dtype)
    w = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal(m).astype(dtype)
    b[0] = np.nan
    if m > 2:
        b[1] = np.inf
        b[2] = -0.0
    plain = _core._matmul_transposed(a, w)
    got = _core._matmul_transposed(a, w, b)
    expected = plain + b                    # (the tiles' tails and SSE blocks alike)
    assert got.flags.c_contiguous and got.shape == (n, m) and got.dtype == dtype
    np.testing.assert_array_equal(bits(got), bits(expected))


def test_transposing_copy_refuses_a_bias_of_another_length_or_dtype():
    a = np.ones((4, 3), np.float32)
    w = np.ones((5, 3), np.float32)
    with pytest.raises(ValueError, match="bias"):
        _core._matmul_transposed(a, w, np.ones(4, np.float32))
    with pytest.raises(ValueError, match="bias"):
        _core._matmul_transposed(a, w, np.ones(5, np.float64))


def linear_case(dtype, shape_x, n_out, bias_shape, seed):
    rng = np.random.default_rng(seed)
    k = shape_x[-1]
    x = rng.standard_normal(shape_x).astype(dtype)
    w = rng.standard_normal((n_out, k)).astype(dtype)
    b = None if bias_shape is None else rng.standard_normal(bias_shape).astype(dtype)
    return x, w, b


@pytest.mark.parametrize("choice", ["transposed", "direct"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_with_settled_layout_equals_product_plus_bias(layouts, choice, dtype):
    """Eager linear (values and gradients) whichever way the product goes: the fused bias is the
    plain addition, and PyTorch's values within rounding."""
    torch = pytest.importorskip("torch")
    n, k, m = 48, 200, 90                       # n*k*m above the size that gets a plan
    layouts(n, k, m, dtype, choice)
    x, w, b = linear_case(dtype, (n, k), m, (m,), 3)
    X = tg.tensor(x, requires_grad=True)
    W = tg.tensor(w, requires_grad=True)
    Bb = tg.tensor(b, requires_grad=True)
    y = tg.nn.functional.linear(X, W, Bb)
    expected = (x @ w.T if choice == "direct" else _core._matmul_transposed(x, w)) + b
    np.testing.assert_array_equal(bits(y.detach().numpy()), bits(expected))
    g = np.random.default_rng(4).standard_normal((n, m)).astype(dtype)
    y.backward(tg.tensor(g))
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    ty = torch.nn.functional.linear(tx, tw, tb)
    ty.backward(torch.tensor(g))
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), **tol)
    for ours, theirs in ((X, tx), (W, tw), (Bb, tb)):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape_x,bias_shape", [
    ((48, 200), (90,)),           # a matrix input and a bias row: the bias in the product
    ((4, 12, 200), (90,)),        # a batch folded into one product: the bias in it too
    ((48, 200), (48, 90)),        # a full bias: added after the product, as before
    ((48, 200), None),            # no bias
])
def test_compiled_linear_relu_linear_equals_eager_bit_for_bit(layouts, dtype, shape_x,
                                                               bias_shape):
    """The MLP's layers (linear, relu, linear, cross-entropy) compiled against eager, over calls
    with changing inputs, with the first product settled transposed (where the bias rides
    along) and direct."""
    rows = int(np.prod(shape_x[:-1]))
    for choice in ("transposed", "direct"):
        layouts(rows, shape_x[-1], 90, dtype, choice)
        x0, w1, b1 = linear_case(dtype, shape_x, 90, bias_shape, 11)
        _, w2, b2 = linear_case(dtype, (rows, 90), 7, (7,), 12)

        def params():
            return [tg.tensor(p, requires_grad=True) for p in (w1, b1, w2, b2) if p is not None]

        def loss_of(ps, x, y):
            w1t, rest = ps[0], ps[1:]
            b1t = rest.pop(0) if b1 is not None else None
            h = tg.nn.functional.linear(x, w1t, b1t).relu().reshape(rows, 90)
            z = tg.nn.functional.linear(h, rest[0], rest[1])
            return tg.nn.functional.cross_entropy(z, y)

        eager_ps, compiled_ps = params(), params()
        compiled = tg.compile(lambda x, y: loss_of(compiled_ps, x, y))
        rng = np.random.default_rng(5)
        for call in range(4):
            x = tg.tensor(x0 + rng.standard_normal(shape_x).astype(dtype))
            y = tg.tensor(rng.integers(0, 7, rows))
            for ps in (eager_ps, compiled_ps):
                for p in ps:
                    p.grad = None
            le = loss_of(eager_ps, x, y)
            le.backward()
            lc = compiled(x, y)
            lc.backward()
            assert bits(le.detach().numpy()) == bits(lc.detach().numpy())
            for pe, pc in zip(eager_ps, compiled_ps):
                np.testing.assert_array_equal(bits(pe.grad.numpy()), bits(pc.grad.numpy()))
        assert compiled.stats["replays"] == 3, compiled.explain()


def test_linear_without_in_features_is_its_bias():
    """in_features 0 keeps PyTorch's result, the bias itself (-0.0 included): the bias is not
    added inside such a product."""
    torch = pytest.importorskip("torch")
    b = np.array([-0.0, 1.5, -2.0], np.float32)
    got = tg.nn.functional.linear(tg.zeros(4, 0), tg.zeros(3, 0), tg.tensor(b)).numpy()
    expected = torch.nn.functional.linear(torch.zeros(4, 0), torch.zeros(3, 0),
                                          torch.tensor(b)).numpy()
    np.testing.assert_array_equal(bits(got), bits(expected))
