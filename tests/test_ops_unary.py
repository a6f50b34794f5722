"""Math functions, activations, clamp, maximum/minimum, where, comparisons and dtype conversions.

Sections: finite-difference gradient checks (float64, several shapes, non-contiguous inputs), the
C-kernel vs numpy size paths, semantics PyTorch defines (kinks, ties, NaN, dtypes, hashing), bad
input, the no-Python-call sweep, and parity with PyTorch (values, gradients, grad_fn names, dtypes).
"""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.testing import count_python_calls as _python_calls_during
import tapegrad.nn.functional as F

RNG = np.random.default_rng(1234)
SHAPES = [(), (1,), (5,), (3, 1), (2, 3, 4)]


def _data(shape, low=-2.0, high=2.0, away_from=None, seed=0):
    rng = np.random.default_rng(seed + 17 * len(shape) + int(np.prod(shape, dtype=int)))
    a = rng.uniform(low, high, size=shape)
    if away_from is not None:                            # keep finite differences off the kinks
        for k in np.atleast_1d(away_from):
            a = np.where(np.abs(a - k) < 0.05, a + 0.1, a)
    return a


# (name, fn, domain kwargs for _data)
UNARY = [
    ("abs", tg.abs, dict(away_from=0.0)),
    ("abs_method", lambda t: t.abs(), dict(away_from=0.0)),
    ("sign", tg.sign, dict(away_from=0.0)),
    ("log1p", tg.log1p, dict(low=-0.9, high=2.0)),
    ("expm1", tg.expm1, {}),
    ("sqrt", tg.sqrt, dict(low=0.2, high=3.0)),
    ("rsqrt", tg.rsqrt, dict(low=0.2, high=3.0)),
    ("sin", tg.sin, {}),
    ("cos", tg.cos, {}),
    ("sigmoid", tg.sigmoid, dict(low=-6.0, high=6.0)),
    ("square", tg.square, {}),
    ("reciprocal", tg.reciprocal, dict(low=0.3, high=2.0)),
    ("erf", tg.erf, {}),
    ("F.sigmoid", F.sigmoid, {}),
    ("F.tanh", F.tanh, {}),
    ("F.relu", F.relu, dict(away_from=0.0)),
    ("leaky_relu", F.leaky_relu, dict(away_from=0.0)),
    ("leaky_relu_0.2", lambda t: F.leaky_relu(t, 0.2), dict(away_from=0.0)),
    ("leaky_relu_neg", lambda t: F.leaky_relu(t, negative_slope=-0.5), dict(away_from=0.0)),
    ("gelu", F.gelu, dict(low=-4.0, high=4.0)),
    ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh"), dict(low=-4.0, high=4.0)),
    ("softplus", F.softplus, dict(low=-4.0, high=4.0)),
    ("softplus_beta", lambda t: F.softplus(t, beta=2.0, threshold=1.0),
     dict(low=-2.0, high=2.0, away_from=0.5)),
    ("silu", F.silu, dict(low=-5.0, high=5.0)),
    ("elu", F.elu, dict(away_from=0.0)),
    ("elu_alpha", lambda t: F.elu(t, alpha=0.5), dict(away_from=0.0)),
    ("clamp", lambda t: t.clamp(-0.5, 0.5), dict(away_from=[-0.5, 0.5])),
    ("clamp_min_kw", lambda t: tg.clamp(t, min=-0.5), dict(away_from=-0.5)),
    ("clamp_max_kw", lambda t: t.clamp(max=0.5), dict(away_from=0.5)),
    ("clamp_min", lambda t: t.clamp_min(0.25), dict(away_from=0.25)),
    ("clamp_max", lambda t: tg.clamp_max(t, 0.25), dict(away_from=0.25)),
    ("clip", lambda t: tg.clip(t, -1, 1), dict(away_from=[-1.0, 1.0])),
    ("where_scalar", lambda t: tg.where(t > 0, t, 0.5), dict(away_from=0.0)),
    ("where_method", lambda t: (t * 2).where(t < 0, t * t), dict(away_from=0.0)),
    ("maximum_self", lambda t: tg.maximum(t, t * 0.5), dict(away_from=0.0)),
    ("minimum_self", lambda t: t.minimum(t * 0.5), dict(away_from=0.0)),
    ("to_copy_same", lambda t: t.to(tg.float64, copy=True) * 3, {}),
    ("double_noop", lambda t: t.double() * t, {}),
    ("log10", tg.log10, dict(low=0.2, high=3.0)),
    ("log2", lambda t: t.log2(), dict(low=0.2, high=3.0)),
    ("sinh", tg.sinh, {}),
    ("cosh", lambda t: t.cosh(), {}),
    ("asin", tg.asin, dict(low=-0.9, high=0.9)),
    ("acos", lambda t: t.acos(), dict(low=-0.9, high=0.9)),
    ("atan", tg.atan, {}),
    ("floor", lambda t: tg.floor(t) * t, dict(away_from=[-2.0, -1.0, 0.0, 1.0, 2.0])),
    ("ceil", lambda t: t.ceil() * t, dict(away_from=[-2.0, -1.0, 0.0, 1.0, 2.0])),
    ("round", lambda t: tg.round(t) * t, dict(away_from=[-1.5, -0.5, 0.5, 1.5])),
    ("round_decimals", lambda t: t.round(decimals=1) + t, {}),
    ("trunc", lambda t: t.trunc() * t, dict(away_from=[-2.0, -1.0, 0.0, 1.0, 2.0])),
    ("frac", tg.frac, dict(away_from=[-2.0, -1.0, 0.0, 1.0, 2.0])),
    ("fmod_scalar", lambda t: tg.fmod(t, 0.7), dict(away_from=[-1.4, -0.7, 0.0, 0.7, 1.4])),
    ("mod_scalar", lambda t: t % 0.7, dict(away_from=[-1.4, -0.7, 0.0, 0.7, 1.4])),
]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name,fn,domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_gradients_finite_differences(gradcheck, name, fn, domain, shape):
    gradcheck(fn, _data(shape, **domain))


@pytest.mark.parametrize("name,fn,domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_gradients_non_contiguous(gradcheck, name, fn, domain):
    a = _data((6, 5), **domain)
    gradcheck(lambda t: fn(t[::2].t()), a)             # strided and transposed views
    gradcheck(lambda t: fn(t[1:, 2]), a)


@pytest.mark.parametrize("name,fn,domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_gradients_transposed_leaf(name, fn, domain):
    """A leaf whose storage is Fortran-ordered (a transpose): kernels decline, numpy computes."""
    base = _data((4, 3), **domain)
    leaf = tg.from_numpy(base.T).requires_grad_()
    fn(leaf).sum().backward()
    ref = tg.tensor(np.ascontiguousarray(base.T), requires_grad=True)
    fn(ref).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), ref.grad.numpy(), rtol=1e-12, atol=1e-12)


BINARY_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3, 1), (1, 4)), ((), (2, 2)), ((2, 1, 3), (4, 1))]


@pytest.mark.parametrize("sa,sb", BINARY_SHAPES, ids=str)
@pytest.mark.parametrize("op", [tg.maximum, tg.minimum])
def test_maximum_minimum_gradients(gradcheck, op, sa, sb):
    a = _data(sa, seed=1)
    b = _data(sb, seed=2)
    gradcheck(op, a, b)


@pytest.mark.parametrize("sc,sa,sb", [((3,), (3,), (3,)), ((2, 3), (3,), (2, 1)),
                                      ((4, 1), (1, 3), ()), ((2, 1, 3), (3,), (4, 1))], ids=str)
def test_where_gradients(gradcheck, sc, sa, sb):
    cond = tg.tensor(_data(sc, seed=3) > 0)
    gradcheck(lambda a, b: tg.where(cond, a, b), _data(sa, seed=4), _data(sb, seed=5))
    gradcheck(lambda a: tg.where(cond, 2.0, a), _data(sb, seed=6))


@pytest.mark.parametrize("sx,slo,shi", [((5,), (5,), (5,)), ((2, 3), (3,), (2, 1)),
                                        ((3,), (2, 3), ()), ((4, 1), (1, 3), (4, 3))], ids=str)
def test_clamp_tensor_bounds_gradients(gradcheck, sx, slo, shi):
    x, lo, hi = _data(sx, seed=7), _data(slo, seed=8) - 0.5, _data(shi, seed=9) + 0.5
    gradcheck(lambda x, lo, hi: x.clamp(lo, hi), x, lo, hi)       # includes some min > max
    gradcheck(lambda x, lo: tg.clamp(x, min=lo), x, lo)
    gradcheck(lambda x, hi: x.clamp(max=hi), x, hi)
    gradcheck(lambda x, lo: x.clamp_min(lo), x, lo)
    gradcheck(lambda x, hi: tg.clamp_max(x, hi), x, hi)


def test_conversion_gradients_cast_back():
    x = tg.tensor([1.5, -2.0, 3.0], dtype=tg.float64, requires_grad=True)
    y = x.float()
    assert y.dtype == tg.float32 and type(y.grad_fn).__name__ == "ToCopyBackward0"
    (y * tg.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.dtype == tg.float64
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 3.0])
    for conv in (lambda t: t.half(), lambda t: t.to(tg.float16), lambda t: t.to("cpu", tg.float32),
                 lambda t: t.to(dtype=tg.float32), lambda t: t.type(tg.float32),
                 lambda t: t.type_as(tg.zeros(1)), lambda t: t.to(tg.zeros(1)),
                 lambda t: t.type("torch.HalfTensor")):
        x.grad = None
        conv(x).sum().backward()
        assert x.grad.dtype == tg.float64
        np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 1.0])


# -- C kernels and numpy paths agree ---------------------------------------------------------------

PATH_OPS = [
    ("abs", tg.abs), ("sign", tg.sign), ("log1p", tg.log1p), ("expm1", tg.expm1),
    ("sqrt", tg.sqrt), ("rsqrt", tg.rsqrt), ("sin", tg.sin), ("cos", tg.cos),
    ("sigmoid", tg.sigmoid), ("reciprocal", tg.reciprocal), ("erf", tg.erf), ("silu", F.silu),
    ("gelu", F.gelu), ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh")),
    ("clamp", lambda t: t.clamp(0.5, 1.5)), ("clamp_min", lambda t: t.clamp_min(-0.5)),
    ("leaky_relu", lambda t: F.leaky_relu(t, 0.2)), ("elu", lambda t: F.elu(t, 0.7)),
    ("softplus", lambda t: F.softplus(t, 2.0, 1.0)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn", PATH_OPS, ids=[p[0] for p in PATH_OPS])
def test_large_arrays_match_small_kernel_chunks(name, fn, dtype):
    """Big arrays go to numpy's SIMD loops, small ones to the C kernels: same values and grads."""
    a = (np.abs(RNG.standard_normal(5000)) + 0.05).astype(dtype)
    a[::2] *= -1 if name not in ("log1p", "sqrt", "rsqrt") else 1
    x = tg.tensor(a, requires_grad=True)
    y = fn(x)
    y.backward(tg.ones_like(y))
    vals, grads = [], []
    for chunk in np.split(a, 250):                      # 20 elements: the C kernels
        c = tg.tensor(chunk, requires_grad=True)
        yc = fn(c)
        yc.backward(tg.ones_like(yc))
        vals.append(yc.detach().numpy())
        grads.append(c.grad.numpy())
    tol = dict(rtol=3e-6, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-14)
    assert y.dtype == x.dtype and x.grad.dtype == x.dtype
    np.testing.assert_allclose(y.detach().numpy(), np.concatenate(vals), **tol)
    np.testing.assert_allclose(x.grad.numpy(), np.concatenate(grads), **tol)


def test_float16_inputs_keep_their_dtype():
    x = tg.tensor([-1.0, 0.5, 2.0], dtype=tg.float16, requires_grad=True)
    for fn in (tg.sigmoid, tg.erf, F.gelu, F.silu, F.elu, F.softplus, F.leaky_relu, tg.sqrt,
               lambda t: t.clamp(0, 1), lambda t: F.gelu(t, approximate="tanh")):
        x.grad = None
        y = fn(x)
        assert y.dtype == tg.float16
        y.sum().backward()
        assert x.grad.dtype == tg.float16


# -- semantics PyTorch defines ---------------------------------------------------------------------

def _grad(fn, values, dtype=tg.float64):
    x = tg.tensor(values, dtype=dtype, requires_grad=True)
    fn(x).sum().backward()
    return x.grad.tolist()


def test_gradients_at_kinks_follow_pytorch():
    z = [-1.0, 0.0, 1.0, 2.0]
    assert _grad(tg.abs, z) == [-1.0, 0.0, 1.0, 1.0]
    assert _grad(tg.sign, z) == [0.0, 0.0, 0.0, 0.0]
    assert _grad(lambda t: t.clamp(0, 1), z) == [0.0, 1.0, 1.0, 0.0]
    assert _grad(lambda t: t.clamp(2, 1), [0.0, 1.0, 1.5, 2.0, 3.0]) == [0.0] * 5
    assert _grad(lambda t: t.clamp_min(0), z) == [0.0, 1.0, 1.0, 1.0]
    assert _grad(lambda t: t.clamp_max(1), z) == [1.0, 1.0, 1.0, 0.0]
    assert _grad(lambda t: t.clamp(0, 1), [float("nan")]) == [0.0]
    assert _grad(F.leaky_relu, z) == [0.01, 0.01, 1.0, 1.0]
    nan = float("nan")
    assert _grad(F.relu, [nan, -1.0, 0.0, 2.0]) == [1.0, 0.0, 0.0, 1.0]     # threshold_backward
    assert _grad(F.relu, [nan, -1.0, 0.0, 2.0], dtype=tg.float16) == [1.0, 0.0, 0.0, 1.0]
    assert _grad(F.leaky_relu, [nan]) == [0.01]
    # PyTorch's elu gives NaN in its vectorized loop, 1.0 in its scalar tail (size-dependent);
    # tapegrad gives NaN at every size
    assert np.isnan(_grad(F.elu, [nan])[0])
    assert _grad(lambda t: F.elu(t, 2.0), [0.0]) == [2.0]
    assert _grad(tg.sqrt, [0.0]) == [float("inf")]
    assert _grad(tg.reciprocal, [0.0]) == [float("-inf")]
    sp = _grad(lambda t: F.softplus(t, beta=2, threshold=5), [2.0, 2.5, 3.0])
    np.testing.assert_allclose(sp, [0.9820137900379085, 0.9933071490757152, 1.0])


def test_maximum_minimum_ties_split_and_nan_propagates():
    a = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = tg.tensor([1.0, 1.0, 4.0], requires_grad=True)
    tg.maximum(a, b).sum().backward()
    assert a.grad.tolist() == [0.5, 1.0, 0.0] and b.grad.tolist() == [0.5, 0.0, 1.0]
    a.grad = b.grad = None
    tg.minimum(a, b).sum().backward()
    assert a.grad.tolist() == [0.5, 0.0, 1.0] and b.grad.tolist() == [0.5, 1.0, 0.0]
    n = tg.tensor([float("nan"), 2.0])
    m = tg.tensor([1.0, float("nan")])
    assert np.isnan(tg.maximum(n, m).numpy()).all() and np.isnan(tg.minimum(n, m).numpy()).all()
    c = tg.tensor([[1.0], [2.0]], requires_grad=True)
    d = tg.tensor([1.0, 2.0], requires_grad=True)
    tg.maximum(c, d).sum().backward()
    assert c.grad.tolist() == [[0.5], [1.5]] and d.grad.tolist() == [0.5, 1.5]


def test_sign_and_clamp_values_at_nan_and_zero():
    x = tg.tensor([float("nan"), -0.0, 0.0, -3.0, float("inf")])
    assert tg.sign(x).tolist() == [0.0, 0.0, 0.0, -1.0, 1.0]
    assert not np.signbit(tg.sign(x).numpy()[1])
    big = tg.tensor(np.tile(x.numpy(), 2000))
    np.testing.assert_array_equal(tg.sign(big).numpy(), np.tile([0.0, 0.0, 0.0, -1.0, 1.0], 2000))
    c = tg.tensor([float("nan"), 1.0]).clamp(0, 0.5)
    assert np.isnan(c.numpy()[0]) and c.numpy()[1] == 0.5
    assert np.isnan(tg.tensor([2.0, 1.0]).clamp(float("nan"), 0.5).numpy()).all()
    assert np.isnan(tg.tensor([2.0, -1.0]).clamp(0, float("nan")).numpy()).all()
    assert np.isnan(tg.tensor([[2.0], [-1.0]]).t()[0].clamp(0, float("nan")).numpy()).all()
    assert _grad(lambda t: t.clamp(0, float("nan")), [2.0, -1.0]) == [0.0, 0.0]
    assert tg.tensor([1.0, 2.0, 3.0]).clamp(3, 1).tolist() == [1.0, 1.0, 1.0]


def test_dtype_rules():
    i = tg.tensor([-2, 0, 3])
    b = tg.tensor([True, False, True])
    for fn in (tg.log1p, tg.expm1, tg.sqrt, tg.rsqrt, tg.sin, tg.cos, tg.sigmoid, tg.reciprocal,
               tg.erf, F.sigmoid, F.tanh):
        assert fn(i).dtype == tg.float32 and fn(b).dtype == tg.float32
    assert tg.abs(i).dtype == tg.int64 and tg.abs(i).tolist() == [2, 0, 3]
    assert tg.sign(i).tolist() == [-1, 0, 1] and tg.sign(b).dtype == tg.bool
    assert tg.square(i).dtype == tg.int64 and tg.square(b).dtype == tg.int64
    assert i.clamp(0.5).dtype == tg.float32 and i.clamp(0, 1).dtype == tg.int64
    assert b.clamp(0, 1).dtype == tg.int64
    assert tg.tensor([1.0, 2.0]).clamp(tg.tensor([1.5], dtype=tg.float64)).dtype == tg.float64
    assert tg.maximum(i, tg.tensor([1.0, 2.0, 3.0])).dtype == tg.float32
    assert tg.maximum(tg.ones(2), tg.tensor(2.0, dtype=tg.float64)).dtype == tg.float32
    assert tg.where(b, 1.0, 0.0).dtype == tg.float32 and tg.where(b, 1, 0).dtype == tg.int64
    assert tg.where(b, True, False).dtype == tg.bool
    assert tg.where(b, i, 0.5).dtype == tg.float32
    assert tg.where(b, tg.ones(3, dtype=tg.float64), 0.5).dtype == tg.float64
    i32 = tg.tensor([1, 2], dtype=tg.int32)
    assert tg.where(tg.tensor([True, False]), i32, 5).dtype == tg.int32
    assert tg.any(tg.tensor([1, 2], dtype=tg.uint8)).dtype == tg.uint8
    assert (b & 1).dtype == tg.int64 and (b & True).dtype == tg.bool and (True | b).dtype == tg.bool
    assert (~i).tolist() == [1, -1, -4] and (~b).tolist() == [False, True, False]


def test_comparisons_and_logical_ops():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for r, expected in [(x == 2, [False, True, False]), (x != 2, [True, False, True]),
                        (x < 2, [True, False, False]), (x <= 2, [True, True, False]),
                        (x > 2, [False, False, True]), (x >= 2, [False, True, True]),
                        (2 < x, [False, False, True]), (x.eq(tg.tensor([1.0, 0.0, 3.0])),
                                                        [True, False, True]),
                        (tg.ge(x, 3), [False, False, True]),
                        (tg.greater(x, 1), [False, True, True]),
                        (x == np.float64(2.0), [False, True, False])]:
        assert r.dtype == tg.bool and not r.requires_grad and r.grad_fn is None
        assert r.tolist() == expected
    assert (tg.tensor([0.1]) == 0.1).tolist() == [True]         # compared in float32, as PyTorch
    assert (tg.tensor([1, 2]) == 1.5).tolist() == [False, False]
    assert (x == None) is False and (x != None) is True  # noqa: E711
    assert (x == "a") is False and (x == [1.0, 2.0, 3.0]) is False
    assert tg.isnan(tg.tensor([float("nan"), 1.0])).tolist() == [True, False]
    assert tg.isinf(tg.tensor([float("inf"), 1.0])).tolist() == [True, False]
    inf, nan = float("inf"), float("nan")
    assert tg.isfinite(tg.tensor([inf, nan, 1.0])).tolist() == [False, False, True]
    assert tg.isnan(tg.tensor([1, 2])).tolist() == [False, False]
    assert tg.isfinite(tg.tensor([True])).tolist() == [True]
    m = tg.tensor([[0.0, 1.0], [0.0, 0.0]])
    assert m.any().item() is True and m.all().item() is False
    assert m.any(dim=1).tolist() == [True, False] and m.any(-1, keepdim=True).shape == (2, 1)
    assert tg.all(tg.ones(2, 3), dim=(0, 1)).item() is True
    assert tg.ones(2, 2).any(keepdim=True).shape == (1, 1)
    assert tg.zeros(0).any().item() is False and tg.zeros(0).all().item() is True
    assert tg.tensor(1.0).all(0).item() is True
    assert tg.logical_not(tg.tensor([0.0, 1.5])).tolist() == [True, False]
    assert tg.logical_and(tg.tensor([1.0, 0.0]), tg.tensor([2, 2])).tolist() == [True, False]
    assert tg.logical_or(tg.tensor([1.0, 0.0]), tg.tensor([0, 0])).tolist() == [True, False]
    tf, tt = tg.tensor([True, False]), tg.tensor([True, True])
    assert tg.logical_xor(tf, tt).tolist() == [False, True]
    mask = (x > 1) & (x < 3) | (x == 1)
    assert mask.tolist() == [True, True, False] and (mask ^ True).tolist() == [False, False, True]
    assert tg.bitwise_not(tg.tensor([True])).tolist() == [False]
    assert tg.bitwise_and(tg.tensor([6, 3]), 5).tolist() == [4, 1]


def test_hash_and_containment_stay_identity_based():
    t = tg.tensor([1.0])
    t2 = tg.tensor([1.0])
    assert {t: 1}[t] == 1 and t not in {t2: 1}
    assert hash(t) == object.__hash__(t)
    assert t in [t] and t in [t2]                         # one element: == then bool(), as torch
    assert tg.tensor([2.0]) not in [t]
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        tg.tensor([1.0, 2.0]) in [tg.tensor([1.0, 2.0])]  # noqa: B015
    s = {t, t2}
    assert len(s) == 2


def test_conversions():
    x = tg.tensor([1.5, -2.0], dtype=tg.float64, requires_grad=True)
    assert x.double() is x and x.to(tg.float64) is x and x.to("cpu") is x and x.to(x) is x
    assert x.type(tg.float64) is x and x.type_as(x) is x and x.to() is x
    assert x.to("cpu:0") is not x and x.to(tg.float64, copy=True) is not x
    assert x.to(float).dtype == tg.float64 and x.to(int).dtype == tg.int64
    assert x.to(bool).dtype == tg.bool
    assert x.to(tg.float64, copy=True).grad_fn is not None
    for conv, dt in [("long", tg.int64), ("int", tg.int32), ("bool", tg.bool), ("short", tg.int16),
                     ("char", tg.int8), ("byte", tg.uint8)]:
        y = getattr(x, conv)()
        assert y.dtype == dt and not y.requires_grad and y.grad_fn is None
    assert x.long().tolist() == [1, -2] and x.bool().tolist() == [True, True]
    assert x.type() == "torch.DoubleTensor" and x.float().type() == "torch.FloatTensor"
    assert x.type("torch.LongTensor").dtype == tg.int64
    i = tg.tensor([1, 2])
    assert i.long() is i and i.float().dtype == tg.float32 and not i.float().requires_grad
    assert i.type() == "torch.LongTensor" and i.type_as(x).dtype == tg.float64
    with tg.no_grad():
        assert x.float().grad_fn is None
    big = tg.tensor([1e6, float("nan")], dtype=tg.float64)
    assert np.isinf(big.half().numpy()[0])               # overflow to inf, silently


def test_inplace_activations():
    a = tg.tensor([-1.0, 2.0])
    assert F.relu(a, inplace=True) is a and a.tolist() == [0.0, 2.0]
    b = tg.tensor([-1.0, 2.0])
    assert F.leaky_relu(b, 0.5, True) is b and b.tolist() == [-0.5, 2.0]
    c = tg.tensor([-1.0, 2.0])
    assert F.elu(c, inplace=True) is c and c.tolist()[1] == 2.0
    d = tg.tensor([0.0])
    assert F.silu(d, inplace=True) is d
    w = tg.tensor([-1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.relu(w, inplace=True)
    h = w * 2                            # in a graph: written in place and recorded, as PyTorch
    assert F.leaky_relu(h, inplace=True) is h and np.allclose(h.tolist(), [-0.02, 4.0])
    with tg.no_grad():
        assert F.relu(w, inplace=True) is w
    assert w.tolist() == [0.0, 2.0]


def test_numpy_scalars_and_zero_dim_bounds():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.clamp(np.float64(1.5), np.int64(2))
    assert y.tolist() == [1.5, 2.0, 2.0] and type(y.grad_fn).__name__ == "ClampBackward1"
    y = x.clamp(min=tg.tensor(2.0), max=3.0)                  # 0-d tensor used as a number
    assert type(y.grad_fn).__name__ == "ClampBackward1"
    y = x.clamp(min=tg.tensor(2.0))
    assert type(y.grad_fn).__name__ == "ClampBackward0"
    assert tg.where(tg.tensor([True, False]), np.float32(1.0), 0).tolist() == [1.0, 0.0]
    assert [t.tolist() for t in tg.where(tg.tensor([[True, False], [False, True]]))] == [[0, 1],
                                                                                         [0, 1]]


# -- bad input -------------------------------------------------------------------------------------

def test_bad_input_messages():
    x = tg.tensor([1.0, 2.0, 3.0])
    i = tg.tensor([1, 2])
    b = tg.tensor([True, False])
    cases = [
        (lambda: tg.abs(b), NotImplementedError, "\"abs_cpu\" not implemented for 'Bool'"),
        (lambda: F.relu(b), RuntimeError, "Boolean inputs not supported for relu"),
        (lambda: F.leaky_relu(i), NotImplementedError,
         "\"leaky_relu_cpu\" not implemented for 'Long'"),
        (lambda: F.gelu(b), NotImplementedError, "\"GeluKernelImpl\" not implemented for 'Bool'"),
        (lambda: F.softplus(i), NotImplementedError, "softplus_cpu"),
        (lambda: F.silu(i), NotImplementedError, "silu_cpu"),
        (lambda: F.elu(tg.tensor([1], dtype=tg.int32)), NotImplementedError, "for 'Int'"),
        (lambda: F.gelu(x, approximate="foo"), RuntimeError, "approximate argument must be either"),
        (lambda: F.gelu(x, "tanh"), TypeError, "positional"),
        (lambda: x.clamp(), RuntimeError, "At least one of 'min' or 'max' must not be None"),
        (lambda: tg.clip(x), RuntimeError, "At least one of 'min' or 'max'"),
        (lambda: x.clamp(min="a"), TypeError, "received an invalid combination of arguments"),
        (lambda: x.clamp(min=[1.0]), TypeError, "min=list"),
        (lambda: x.clamp(min=tg.ones(3), max=2.5), TypeError, "invalid combination"),
        (lambda: x.clamp_min(None), TypeError, "clamp_min\\(\\) received an invalid combination"),
        (lambda: x.clamp(min=tg.zeros(2)), RuntimeError,
         r"size of tensor a \(3\) must match the size of tensor b \(2\) at non-singleton "
         r"dimension 0"),
        (lambda: tg.maximum(x, 1.0), TypeError,
         r"maximum\(\): argument 'other' \(position 2\) must be Tensor, not float"),
        (lambda: tg.minimum(x, tg.ones(2)), RuntimeError, "must match the size"),
        (lambda: tg.where(i, 1.0, 0.0), RuntimeError,
         "where expected condition to be a boolean tensor, but got a tensor with dtype Long"),
        (lambda: tg.where(x, 1.0, 0.0), RuntimeError, "dtype Float"),
        (lambda: tg.where(True, x, 1.0), TypeError, "where\\(\\) received an invalid combination"),
        (lambda: tg.where(b, x, None), TypeError, "invalid combination"),
        (lambda: tg.where(b, x), TypeError, "invalid combination"),
        (lambda: tg.where(b, tg.ones(3), 0.0), RuntimeError,
         r"size of tensor a \(2\) must match the size of tensor b \(3\)"),
        (lambda: x < None, TypeError,
         "'<' not supported between instances of 'Tensor' and 'NoneType'"),
        (lambda: x < "a", TypeError, "not supported"),
        (lambda: tg.eq(x, None), TypeError, "eq\\(\\) received an invalid combination"),
        (lambda: tg.ones(2) < tg.ones(3), RuntimeError, "must match the size"),
        (lambda: ~x, TypeError, "only implemented on integer and Boolean-type tensors"),
        (lambda: tg.bitwise_not(x), NotImplementedError,
         "\"bitwise_not_cpu\" not implemented for 'Float'"),
        (lambda: x & x, NotImplementedError, "\"bitwise_and_cpu\" not implemented for 'Float'"),
        (lambda: b | 1.0, NotImplementedError, "\"bitwise_or_cpu\" not implemented for 'Float'"),
        (lambda: tg.logical_and(b, True), TypeError,
         r"logical_and\(\): argument 'other' \(position 2\) must be Tensor, not bool"),
        (lambda: tg.ones(2, 3).any(dim=2), IndexError,
         r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
        (lambda: x.to("cuda"), AssertionError, "not compiled with CUDA enabled"),
        (lambda: x.to("mps"), RuntimeError, "CPU only"),
        (lambda: x.to("foo"), RuntimeError, "device type at start of device string: foo"),
        (lambda: x.to(0), RuntimeError, "Cannot access accelerator device"),
        (lambda: x.to([1]), TypeError, "to\\(\\) received an invalid combination"),
        (lambda: x.to(tg.float64, bogus=1), TypeError,
         r"to\(\) received an invalid combination of arguments - got \(torch.dtype, bogus=int\)"),
        (lambda: x.type("torch.FooTensor"), ValueError, "invalid type: 'torch.FooTensor'"),
        (lambda: x.type(float), ValueError, "invalid type: 'float'"),
        (lambda: x.type_as(1.0), TypeError,
         r"type_as\(\): argument 'other' \(position 1\) must be Tensor, not float"),
        (lambda: tg.sqrt([1.0]), TypeError, r"sqrt\(\): argument .input. \(position 1\) must be Tensor, not list"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()


def test_integer_overflowing_scalars_raise():
    u = tg.tensor([1, 200], dtype=tg.uint8)
    for fn in (lambda: u.clamp(max=300), lambda: tg.where(tg.tensor([True, False]), u, 300)):
        with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without "
                                               "overflow"):
            fn()
    # PyTorch's: an unsigned type takes ints down to -max (uint8's -1 is 255), and an operator's
    # int is cast unchecked (its low bits: 256 is 0, 300 is 44)
    assert u.clamp(-1, 1).tolist() == [1, 1]
    assert (u & 256).tolist() == [0, 0]
    assert (u < 300).tolist() == [True, False]


def test_uint8_where_condition_warns_and_works():
    with pytest.warns(UserWarning, match="where received a uint8 condition tensor"):
        out = tg.where(tg.tensor([1, 0], dtype=tg.uint8), 1.0, 0.0)
    assert out.tolist() == [1.0, 0.0]


def test_failed_ops_record_nothing():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    for fn in (lambda: x.clamp(min=tg.zeros(3)), lambda: tg.maximum(x, tg.ones(3)),
               lambda: tg.where(tg.tensor([True, False, True]), x, 0.0)):
        with pytest.raises(RuntimeError):
            fn()
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_no_grad_records_nothing():
    x = tg.tensor([1.0, -2.0], requires_grad=True)
    with tg.no_grad():
        for fn in (tg.sigmoid, F.gelu, lambda t: t.clamp(0, 1), lambda t: tg.where(t > 0, t, 0.0),
                   lambda t: tg.maximum(t, t), lambda t: t.float().double()):
            y = fn(x)
            assert not y.requires_grad and y.grad_fn is None


# -- the sweep makes no Python-level call per node -------------------------------------------------

def _family_chain(x, n):
    lo = tg.tensor([-3.0], dtype=tg.float64, requires_grad=True)
    cond = tg.tensor(np.arange(x.shape[0]) % 3 == 0)
    y = x
    for _ in range(n):
        y = tg.abs(y) + tg.sign(y) + tg.log1p(tg.sigmoid(y)) + tg.expm1(tg.sin(y) * 0.1)
        y = tg.sqrt(tg.square(y) + 1) + tg.rsqrt(tg.cos(y) + 2) + tg.reciprocal(y * y + 1)
        y = tg.erf(y) + F.leaky_relu(y) + F.gelu(y) + F.gelu(y, approximate="tanh")
        y = F.softplus(y) + F.silu(y) + F.elu(y) + y.clamp(-2, 2) + y.clamp(lo, 5.0 + y)
        y = y.clamp_min(lo) + y.clamp_max(3.0) + tg.maximum(y, y * 0.5) + tg.minimum(y, lo)
        y = tg.where(cond, y, y * 0.5) + y.float().double() * 0.01
        y = y * 0.1
    return y.sum()


@pytest.mark.parametrize("size", [8, 40])             # C kernels and numpy paths
def test_backward_makes_no_python_call_per_node(size):
    x = tg.tensor(np.linspace(-1, 1, size), dtype=tg.float64, requires_grad=True)
    small, big = _family_chain(x, 2), _family_chain(x, 12)
    assert _python_calls_during(big.backward) == _python_calls_during(small.backward)


# -- parity with PyTorch ---------------------------------------------------------------------------

def _torch_fns(torch):
    TF = torch.nn.functional
    return {
        "abs": (tg.abs, torch.abs), "sign": (tg.sign, torch.sign), "log1p": (tg.log1p, torch.log1p),
        "expm1": (tg.expm1, torch.expm1), "sqrt": (tg.sqrt, torch.sqrt),
        "rsqrt": (tg.rsqrt, torch.rsqrt), "sin": (tg.sin, torch.sin), "cos": (tg.cos, torch.cos),
        "sigmoid": (tg.sigmoid, torch.sigmoid), "square": (tg.square, torch.square),
        "reciprocal": (tg.reciprocal, torch.reciprocal), "erf": (tg.erf, torch.erf),
        "F.sigmoid": (F.sigmoid, TF.sigmoid), "F.tanh": (F.tanh, TF.tanh),
        "F.relu": (F.relu, TF.relu),
        "leaky_relu": (lambda t: F.leaky_relu(t, 0.2), lambda t: TF.leaky_relu(t, 0.2)),
        "gelu": (F.gelu, TF.gelu),
        "gelu_tanh": (lambda t: F.gelu(t, approximate="tanh"),
                      lambda t: TF.gelu(t, approximate="tanh")),
        "softplus": (lambda t: F.softplus(t, 2.0, 1.0), lambda t: TF.softplus(t, 2.0, 1.0)),
        "silu": (F.silu, TF.silu), "elu": (lambda t: F.elu(t, 0.7), lambda t: TF.elu(t, 0.7)),
        "clamp": (lambda t: t.clamp(-0.5, 0.7), lambda t: t.clamp(-0.5, 0.7)),
        "clamp_min": (lambda t: t.clamp(min=0.1), lambda t: t.clamp(min=0.1)),
        "clamp_min_fn": (lambda t: t.clamp_min(0.1), lambda t: t.clamp_min(0.1)),
        "clamp_max_fn": (lambda t: tg.clamp_max(t, 0.1), lambda t: torch.clamp_max(t, 0.1)),
        "clip": (lambda t: tg.clip(t, -1, 1), lambda t: torch.clip(t, -1, 1)),
        "float": (lambda t: t.float(), lambda t: t.float()),
        "half": (lambda t: t.half(), lambda t: t.half()),
        "to64": (lambda t: t.to(tg.float64), lambda t: t.to(torch.float64)),
        "where": (lambda t: tg.where(t > 0, t, 0.25), lambda t: torch.where(t > 0, t, 0.25)),
        "log10": (tg.log10, torch.log10), "log2": (tg.log2, torch.log2),
        "sinh": (tg.sinh, torch.sinh), "cosh": (tg.cosh, torch.cosh),
        "asin": (tg.asin, torch.asin), "acos": (tg.acos, torch.acos),
        "atan": (tg.atan, torch.atan), "floor": (tg.floor, torch.floor),
        "ceil": (tg.ceil, torch.ceil), "round": (tg.round, torch.round),
        "round_decimals": (lambda t: t.round(decimals=2), lambda t: t.round(decimals=2)),
        "trunc": (tg.trunc, torch.trunc), "frac": (tg.frac, torch.frac),
        "fmod": (lambda t: tg.fmod(t, 1.5), lambda t: torch.fmod(t, 1.5)),
        "remainder": (lambda t: t % -1.5, lambda t: t % -1.5),
    }


def _torch_dtype(torch, tg_dtype):
    return getattr(torch, tg_dtype.name)


def _values_close(ours, theirs, dtype, loose=False):
    ours = np.asarray(ours, dtype=np.float64)
    theirs = np.asarray(theirs, dtype=np.float64)
    if dtype == tg.float16 or loose:
        tol = dict(rtol=2e-3, atol=1e-3)
    elif dtype == tg.float32:
        tol = dict(rtol=3e-5, atol=2e-6)
    else:
        tol = dict(rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours, theirs, equal_nan=True, **tol)


@pytest.mark.parametrize("n", [7, 300])               # C kernels / numpy SIMD paths
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64], ids=str)
def test_parity_values_grads_names(torch, dtype, n):
    rng = np.random.default_rng(n)
    a = rng.uniform(-3, 3, size=n)
    a[:3] = [0.0, 1.0, -1.0]                          # kinks and ties as PyTorch defines them
    for name, (ours, theirs) in _torch_fns(torch).items():
        data = np.abs(a) + 0.01 if name in ("sqrt", "rsqrt", "log1p") else a
        x = tg.tensor(data, dtype=dtype, requires_grad=True)
        tx = torch.tensor(data, dtype=_torch_dtype(torch, dtype), requires_grad=True)
        y, ty = ours(x), theirs(tx)
        assert y.dtype.name == str(ty.dtype).replace("torch.", ""), name
        assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__, name
        _values_close(y.detach().numpy(), ty.detach().numpy(), y.dtype)
        gy = rng.standard_normal(n)
        y.backward(tg.tensor(gy, dtype=y.dtype))
        ty.backward(torch.tensor(gy, dtype=ty.dtype))
        assert x.grad.dtype == x.dtype
        _values_close(x.grad.numpy(), tx.grad.numpy(), dtype, loose=y.dtype == tg.float16)


def test_parity_edge_values(torch):
    vals = [float("nan"), float("-inf"), 0.0, -0.0, 1e-30, -50.0, 50.0, 100.0, -100.0, 3.0, -3.0]
    # (+inf is left out: torch's float32 gelu(inf) is nan, its elu grad at NaN depends on size)
    for dtype in (tg.float32, tg.float64):
        for name, (ours, theirs) in _torch_fns(torch).items():
            x = tg.tensor(vals, dtype=dtype, requires_grad=True)
            tx = torch.tensor(vals, dtype=_torch_dtype(torch, dtype), requires_grad=True)
            y, ty = ours(x), theirs(tx)
            y.backward(tg.ones_like(y))
            ty.backward(torch.ones_like(ty))
            _values_close(y.detach().numpy(), ty.detach().numpy(), y.dtype)
            ours_grad, torch_grad = x.grad.numpy(), tx.grad.numpy()
            if name == "elu":
                # PyTorch's elu gradient at NaN is NaN in its vectorized loop but 1.0 in its scalar
                # tail (float32 here: 11 < 16 lanes); tapegrad gives NaN at every size
                assert np.isnan(ours_grad[0])
                ours_grad, torch_grad = ours_grad[1:], torch_grad[1:]
            _values_close(ours_grad, torch_grad, dtype, loose=y.dtype == tg.float16)


def test_parity_int_and_bool_dtypes(torch):
    for data, dt in [([-2, 0, 3], "int64"), ([True, False, True], "bool"), ([1, 2], "int32"),
                     ([1, 200], "uint8")]:
        x = tg.tensor(data, dtype=getattr(tg, dt))
        tx = torch.tensor(data, dtype=getattr(torch, dt))
        for name in ("abs", "sign", "log1p", "sqrt", "sin", "sigmoid", "square", "reciprocal",
                     "erf", "F.sigmoid", "F.tanh", "F.relu", "clamp", "clip"):
            ours, theirs = _torch_fns(torch)[name]
            if dt == "uint8" and name in ("clamp", "clip"):
                continue                                 # torch wraps -1 to 255; we raise (below)
            try:
                expected = theirs(tx)
            except (RuntimeError, NotImplementedError) as e:
                with pytest.raises(type(e)):
                    ours(x)
                continue
            got = ours(x)
            assert got.dtype.name == str(expected.dtype).replace("torch.", ""), (name, dt)
            _values_close(got.numpy(), expected.numpy(), tg.float32)


def test_parity_clamp_where_maximum_with_tensors(torch):
    rng = np.random.default_rng(5)
    x, lo = rng.standard_normal((2, 3)), rng.standard_normal(3) - 0.3
    hi = rng.standard_normal((2, 1))
    hi[0, 0] = -5.0                                         # a row with min > max
    cond = rng.standard_normal((2, 1, 3)) > 0
    cases = [
        (lambda a, b, c: a.clamp(b, c), lambda a, b, c: a.clamp(b, c)),
        (lambda a, b, c: a.clamp(min=b) * c, lambda a, b, c: a.clamp(min=b) * c),
        (lambda a, b, c: a.clamp_max(c) + b, lambda a, b, c: a.clamp_max(c) + b),
        (lambda a, b, c: tg.maximum(a, b) * c, lambda a, b, c: torch.maximum(a, b) * c),
        (lambda a, b, c: tg.minimum(a, c.clamp(-1, 1)) + b,
         lambda a, b, c: torch.minimum(a, c.clamp(-1, 1)) + b),
        (lambda a, b, c: tg.where(tg.tensor(cond), a, c) * b,
         lambda a, b, c: torch.where(torch.tensor(cond), a, c) * b),
        (lambda a, b, c: a.where(a > 0, b) + c, lambda a, b, c: a.where(a > 0, b) + c),
    ]
    for dtype in ("float32", "float64"):
        for ours, theirs in cases:
            ts = [tg.tensor(v, dtype=getattr(tg, dtype), requires_grad=True) for v in (x, lo, hi)]
            tts = [torch.tensor(v, dtype=getattr(torch, dtype), requires_grad=True)
                   for v in (x, lo, hi)]
            y, ty = ours(*ts), theirs(*tts)
            assert y.shape == tuple(ty.shape)
            _values_close(y.detach().numpy(), ty.detach().numpy(), y.dtype)
            y.sum().backward()
            ty.sum().backward()
            for t, tt in zip(ts, tts):
                _values_close(t.grad.numpy(), tt.grad.numpy(), y.dtype)
    # grad_fn names
    a, ta = tg.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0], requires_grad=True)
    for ours, theirs in [
            (lambda: a.clamp(tg.zeros(2)), lambda: ta.clamp(torch.zeros(2))),
            (lambda: a.clamp_min(tg.zeros(2)), lambda: ta.clamp_min(torch.zeros(2))),
            (lambda: a.clamp_max(tg.zeros(2)), lambda: ta.clamp_max(torch.zeros(2))),
            (lambda: a.clamp_min(0), lambda: ta.clamp_min(0)),
            (lambda: a.clamp_max(0), lambda: ta.clamp_max(0)),
            (lambda: tg.maximum(a, a), lambda: torch.maximum(ta, ta)),
            (lambda: tg.minimum(a, a), lambda: torch.minimum(ta, ta)),
            (lambda: tg.where(a > 1, a, a), lambda: torch.where(ta > 1, ta, ta)),
            (lambda: a.type(tg.float64), lambda: ta.type(torch.float64))]:
        assert type(ours().grad_fn).__name__ == type(theirs().grad_fn).__name__


def test_parity_comparisons_and_bool_ops(torch):
    operands = [
        (np.array([1, 2, 3]), "int64"), (np.array([1.0, 2.5, 3.0]), "float32"),
        (np.array([1.0, 2.0, 3.0]), "float64"), (np.array([True, False, True]), "bool"),
        (np.array(2), "int32"), (np.array(2.5), "float64")]
    scalars = [2, 2.5, True, -1]
    ops = ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]
    for (a, da) in operands:
        x, tx = tg.tensor(a, dtype=getattr(tg, da)), torch.tensor(a, dtype=getattr(torch, da))
        others = [(tg.tensor(b, dtype=getattr(tg, db)), torch.tensor(b, dtype=getattr(torch, db)))
                  for b, db in operands] + [(s, s) for s in scalars]
        for o, to in others:
            for op in ops:
                got, exp = getattr(x, op)(o), getattr(tx, op)(to)
                assert got.dtype == tg.bool and got.tolist() == exp.tolist(), (da, o, op)
            for op in ("__and__", "__or__", "__xor__"):
                try:
                    exp = getattr(tx, op)(to)
                except (RuntimeError, NotImplementedError, TypeError) as e:
                    with pytest.raises(type(e)):
                        getattr(x, op)(o)
                    continue
                got = getattr(x, op)(o)
                assert got.dtype.name == str(exp.dtype).replace("torch.", "")
                assert got.tolist() == exp.tolist()
        for fn in ("isnan", "isinf", "isfinite", "logical_not", "any", "all"):
            got, exp = getattr(tg, fn)(x), getattr(torch, fn)(tx)
            assert got.dtype.name == str(exp.dtype).replace("torch.", "")
            assert got.tolist() == exp.tolist()


def test_parity_conversions(torch):
    for src in ("float32", "float64", "float16", "int64", "int32", "bool", "uint8"):
        x = tg.tensor([1.0, 0.0, 2.0], dtype=getattr(tg, src))
        tx = torch.tensor([1.0, 0.0, 2.0], dtype=getattr(torch, src))
        if x.dtype.is_floating_point:
            x.requires_grad_()
            tx.requires_grad_()
        for m in ("float", "double", "half", "long", "int", "bool", "short", "char", "byte"):
            y, ty = getattr(x, m)(), getattr(tx, m)()
            assert y.dtype.name == str(ty.dtype).replace("torch.", "")
            assert (y is x) == (ty is tx) and y.requires_grad == ty.requires_grad
            assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__
            assert y.tolist() == ty.tolist()
        assert x.type() == tx.type()


# -- a NaN input gives the gradient PyTorch gives (piecewise activations and their siblings) ----

def _nan_grads(fn, n, dtype, create_graph):
    v = np.linspace(-2.0, 2.0, n)
    v[0] = np.nan
    x = tg.tensor(v, dtype=dtype, requires_grad=True)
    y = fn(x)
    g, = tg.autograd.grad(y, x, tg.ones_like(y), create_graph=create_graph)
    return g.detach().numpy()


@pytest.mark.parametrize("create_graph", [False, True], ids=["eager", "graph"])
@pytest.mark.parametrize("n", [3, 300])                 # C kernels / numpy paths
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64], ids=str)
def test_nan_input_gradients(dtype, n, create_graph):
    zeros = lambda t: t.detach() * 0                    # noqa: E731
    # elu: x > 0 ? g : g alpha e^x (NaN takes the exponential); relu passes g at a NaN output;
    # l1 and the 1- and inf-norms use PyTorch's sign, 0 at NaN
    expect = {
        "elu": (lambda t: F.elu(t, 0.7), np.nan),
        "relu": (F.relu, 1.0),
        "leaky_relu": (lambda t: F.leaky_relu(t, 0.2), 0.2),
        "l1_none": (lambda t: F.l1_loss(t, zeros(t), reduction="none"), 0.0),
        "l1_sum": (lambda t: F.l1_loss(t, zeros(t), reduction="sum"), 0.0),
        "norm1": (lambda t: t.norm(1), 0.0),
        "norm_inf": (lambda t: t.norm(float("inf")), 0.0),
    }
    for name, (fn, want) in expect.items():
        got = _nan_grads(fn, n, dtype, create_graph)[0]
        assert (np.isnan(got) and np.isnan(want)) or got == want, (name, got, want)


def test_nan_input_gradients_match_torch(torch):
    TF = torch.nn.functional
    cases = {
        "elu": (lambda t: F.elu(t, 0.7), lambda t: TF.elu(t, 0.7)),
        "relu": (F.relu, TF.relu),
        "l1": (lambda t: F.l1_loss(t, t.detach() * 0, reduction="none"),
               lambda t: TF.l1_loss(t, t.detach() * 0, reduction="none")),
        "norm1": (lambda t: t.norm(1), lambda t: t.norm(1)),
        "norm_inf": (lambda t: t.norm(float("inf")), lambda t: t.norm(float("inf"))),
    }
    v = np.linspace(-2.0, 2.0, 64)
    v[0] = np.nan                                       # inside PyTorch's vectorized loop
    for name, (ours, theirs) in cases.items():
        x = tg.tensor(v, dtype=tg.float64, requires_grad=True)
        tx = torch.tensor(v, dtype=torch.float64, requires_grad=True)
        ours(x).sum().backward()
        theirs(tx).sum().backward()
        _values_close(x.grad.numpy(), tx.grad.numpy(), tg.float64)


# -- two-input math: atan2, fmod, remainder, floor_divide ------------------------------------------

@pytest.mark.parametrize("sa,sb", BINARY_SHAPES, ids=str)
@pytest.mark.parametrize("op", [tg.atan2, tg.fmod, tg.remainder, lambda a, b: a % b],
                         ids=["atan2", "fmod", "remainder", "mod"])
def test_binary_math_gradients(gradcheck, op, sa, sb):
    a = _data(sa, low=-3.0, high=3.0)
    b = _data(sb, low=0.5, high=2.0, seed=1) * np.where(_data(sb, seed=2) > 0, 1, -1)
    a = np.where(np.abs(np.remainder(a[...], 0.5)) < 0.05, a + 0.1, a)   # off the jumps
    gradcheck(op, a, b, atol=1e-5)


def test_binary_math_values_and_dtypes():
    i = tg.tensor([-3, 2, 5])
    assert tg.fmod(i, 2).tolist() == [-1, 0, 1] and tg.fmod(i, 2).dtype == tg.int64
    assert (i % 2).tolist() == [1, 0, 1]
    assert (5 % i).tolist() == [-1, 1, 0] and (7 // i).tolist() == [-3, 3, 1]
    assert (i // 2).tolist() == [-2, 1, 2]
    assert tg.atan2(i, i).dtype == tg.float32
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        i % 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        i // tg.tensor([1, 0, 1])
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        tg.atan2(i, 2)
    x = tg.tensor([-2.5, 3.5], requires_grad=True)
    y = x // 2
    assert y.tolist() == [-2.0, 1.0] and type(y.grad_fn).__name__ == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
        y.sum().backward()
    y = 2.5 % x                                         # number % tensor: no derivative either
    assert y.tolist() == [0.0, 2.5] and type(y.grad_fn).__name__ == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::remainder is not implemented"):
        y.sum().backward()
    with pytest.raises(NotImplementedError, match="frac_cpu"):
        tg.frac(i)
    with pytest.raises(NotImplementedError, match="round_cpu"):
        tg.round(i, decimals=1)
    assert tg.floor(i).dtype == tg.int64 and tg.round(i).tolist() == [-3, 2, 5]


def test_binary_math_match_torch(torch):
    rng = np.random.default_rng(5)
    for sa, sb in BINARY_SHAPES:
        a = rng.uniform(-4, 4, sa)
        b = rng.uniform(0.5, 2, sb) * rng.choice([-1, 1], sb)
        for name in ("atan2", "fmod", "remainder", "floor_divide"):
            for dt in ("float32", "float64"):
                x = tg.tensor(a, dtype=getattr(tg, dt), requires_grad=True)
                w = tg.tensor(b, dtype=getattr(tg, dt), requires_grad=True)
                tx = torch.tensor(a, dtype=getattr(torch, dt), requires_grad=True)
                tw = torch.tensor(b, dtype=getattr(torch, dt), requires_grad=True)
                y, ty = getattr(tg, name)(x, w), getattr(torch, name)(tx, tw)
                _values_close(y.detach().numpy(), ty.detach().numpy(), y.dtype)
                assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__
                if name == "floor_divide":
                    continue
                gy = rng.standard_normal(ty.shape)
                y.backward(tg.tensor(gy, dtype=y.dtype))
                ty.backward(torch.tensor(gy, dtype=ty.dtype))
                _values_close(x.grad.numpy(), tx.grad.numpy(), x.dtype)
                _values_close(w.grad.numpy(), tw.grad.numpy(), w.dtype)


@pytest.mark.parametrize("name", ["log10", "sinh", "asin", "atan", "frac", "atan2", "fmod",
                                  "remainder"])
def test_new_math_second_order_matches_torch(torch, name):
    a = np.array([0.3, -0.45, 0.7])
    b = np.array([1.3, -0.8, 0.6])
    grads = []
    for m in (tg, torch):
        x = m.tensor(np.abs(a) if name == "log10" else a, dtype=m.float64, requires_grad=True)
        w = m.tensor(b, dtype=m.float64, requires_grad=True)
        y = getattr(m, name)(x, w) if name in ("atan2", "fmod", "remainder") else getattr(m, name)(x)
        y = (y * y).sum()
        g, = m.autograd.grad(y, x, create_graph=True)
        g2, = m.autograd.grad(g.sum(), x)
        grads.append((g.detach().numpy(), g2.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-12)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-12)
