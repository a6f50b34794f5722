"""Elementwise math names added in tapegrad/_extra_ops.py (tan, the inverse hyperbolic functions
and their arc* aliases) and the in-place method forms (exp_, clamp_, ...): torch parity of values,
dtypes and gradients, finite differences, plain values, and PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(5)

# (name, values inside the function's domain)
UNARY = [("tan", RNG.uniform(-1.4, 1.4, (3, 4))), ("asinh", RNG.standard_normal((3, 4)) * 3),
         ("acosh", RNG.uniform(1.1, 5.0, (3, 4))), ("atanh", RNG.uniform(-0.9, 0.9, (3, 4)))]
ALIASES = {"arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh"}


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("name,x", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_values_and_gradients_match_torch(torch, name, x, dtype):
    ours = tg.tensor(x, dtype=getattr(tg, dtype), requires_grad=True)
    theirs = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
    y1, y2 = getattr(tg, name)(ours), getattr(torch, name)(theirs)
    assert str(y1.dtype) == str(y2.dtype)
    assert type(y1.grad_fn).__name__ == type(y2.grad_fn).__name__
    np.testing.assert_allclose(_np(y1), _np(y2), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(_np(getattr(ours, name)()), _np(y2), rtol=2e-6, atol=1e-7)
    (y1 * y1).sum().backward()
    (y2 * y2).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,x", UNARY, ids=[u[0] for u in UNARY])
def test_unary_gradient_matches_finite_differences(gradcheck, name, x):
    gradcheck(lambda t: getattr(tg, name)(t), x)


def test_unary_out_of_domain_integer_input_and_aliases(torch):
    x = [-2.0, -1.0, 0.0, 0.5, 1.0, 3.0]
    for name in ("tan", "asinh", "acosh", "atanh"):
        # float32 values within an ulp (ours are float64 results rounded once)
        np.testing.assert_allclose(_np(getattr(tg, name)(tg.tensor(x))),
                                   getattr(torch, name)(torch.tensor(x)).numpy(), rtol=2e-7)
        ints = getattr(tg, name)(tg.tensor([0, 1, 2]))
        assert ints.dtype == tg.float32
        np.testing.assert_allclose(_np(ints), getattr(torch, name)(torch.tensor([0, 1, 2])).numpy())
    for alias, name in ALIASES.items():
        np.testing.assert_array_equal(_np(getattr(tg, alias)(tg.tensor(x))),
                                      _np(getattr(tg, name)(tg.tensor(x))))
        assert hasattr(torch.Tensor, alias) and hasattr(tg.Tensor, alias)


def test_unary_plain_values_and_errors():
    np.testing.assert_allclose(_np(tg.tan(tg.tensor([0.0, np.pi / 4]))), [0.0, 1.0], atol=1e-7)
    np.testing.assert_allclose(_np(tg.asinh(tg.tensor([0.0, 1.0]))), [0.0, np.log(1 + 2 ** 0.5)])
    assert np.isnan(tg.acosh(tg.tensor(0.5)).item())
    assert tg.atanh(tg.tensor(1.0)).item() == np.inf
    with pytest.raises(TypeError, match=r"tan\(\): argument 'input' \(position 1\) must be Tensor"):
        tg.tan([1.0])


# -- in-place forms --------------------------------------------------------------------------------

# (method, args, input values)
IN_PLACE = [("exp_", (), RNG.standard_normal(4)), ("log_", (), RNG.uniform(0.5, 2, 4)),
            ("sigmoid_", (), RNG.standard_normal(4)), ("tanh_", (), RNG.standard_normal(4)),
            ("sqrt_", (), RNG.uniform(0.5, 2, 4)), ("neg_", (), RNG.standard_normal(4)),
            ("abs_", (), RNG.standard_normal(4)), ("relu_", (), RNG.standard_normal(4)),
            ("clamp_", (-0.5, 0.5), RNG.standard_normal(4)), ("pow_", (3,), RNG.standard_normal(4)),
            ("tan_", (), RNG.uniform(-1, 1, 4)), ("cosh_", (), RNG.standard_normal(4)),
            ("reciprocal_", (), RNG.uniform(0.5, 2, 4)),
            ("clamp_min_", (0.1,), RNG.standard_normal(4))]


@pytest.mark.parametrize("method,args,x", IN_PLACE, ids=[c[0] for c in IN_PLACE])
def test_in_place_matches_torch(torch, method, args, x):
    results = []
    for lib in (tg, torch):
        leaf = lib.tensor(x, requires_grad=True)
        y = leaf * 2
        out = getattr(y, method)(*args)
        assert out is y
        if lib is tg:
            assert y._version_value == 1
        (y * y).sum().backward()
        plain = lib.tensor(x)
        getattr(plain, method)(*args)
        results.append((y.detach().numpy(), leaf.grad.numpy(), plain.numpy(),
                        type(y.grad_fn).__name__))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[0][2], results[1][2], rtol=1e-6)
    if hasattr(torch, method):
        t = tg.tensor(x)
        assert getattr(tg, method)(t, *args) is t
        np.testing.assert_allclose(t.numpy(), results[1][2], rtol=1e-6)


def test_in_place_errors_match_torch(torch):
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                               "output type Long"):
            lib.tensor([1, 2]).exp_()
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            lib.tensor([1.0], requires_grad=True).exp_()
        with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the "
                                               r"broadcast shape \[2, 2\]"):
            lib.ones(2).pow_(lib.ones(2, 2))


def test_in_place_plain_values():
    t = tg.tensor([-1.0, 4.0])
    t.abs_().sqrt_()
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    ints = tg.tensor([-3, 2])
    assert ints.neg_() is ints and ints.tolist() == [3, -2] and ints.dtype == tg.int64
    assert tg.clamp_(tg.tensor([-2.0, 0.3, 2.0]), -1, 1).tolist() == pytest.approx([-1.0, 0.3, 1.0])


def test_in_place_inverse_hyperbolic_values(torch):
    # PyTorch has no derivative for asinh_/acosh_/atanh_; compare values without recording
    x = RNG.uniform(1.1, 3.0, 5)
    for method in ("asinh_", "acosh_", "arctanh_"):
        ours, theirs = tg.tensor(x / 4), torch.tensor(x / 4)
        if method == "acosh_":
            ours, theirs = tg.tensor(x), torch.tensor(x)
        getattr(ours, method)()
        getattr(theirs, method)()
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-7)


# -- aliases, rounding division, broadcasting, stacking --------------------------------------------

A23 = RNG.standard_normal((2, 3)) * 4
B3 = RNG.standard_normal(3) * 2


def _same(ours, theirs):
    assert str(ours.dtype) == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(_np(ours), theirs.detach().numpy(), rtol=1e-6, atol=1e-7)


COMPOSITES = [
    ("divide", lambda m, x: m.divide(x, m.tensor(B3))),
    ("divide-trunc", lambda m, x: m.divide(x, 1.5, rounding_mode="trunc") + x),
    ("divide-floor", lambda m, x: x.divide(m.tensor(B3), rounding_mode="floor") + x),
    ("true_divide", lambda m, x: m.true_divide(x, 3)),
    ("multiply", lambda m, x: m.multiply(x, x)),
    ("subtract", lambda m, x: m.subtract(x, m.tensor(B3), alpha=2) * x),
    ("negative", lambda m, x: x.negative() * x),
    ("broadcast_to", lambda m, x: m.broadcast_to(x, (4, 2, 3)) * m.arange(4.0).reshape(4, 1, 1)),
    ("broadcast_tensors", lambda m, x: m.stack(m.broadcast_tensors(x, m.tensor(B3)))),
    ("hstack", lambda m, x: m.hstack([x, x * 2])),
    ("vstack", lambda m, x: m.vstack([x, x[0]])),
    ("dstack", lambda m, x: m.dstack([x, x * x])),
    ("column_stack", lambda m, x: m.column_stack([x, x[:, 0]])),
    ("row_stack", lambda m, x: m.row_stack([x[1], x])),
    ("ravel", lambda m, x: x.ravel() * m.arange(6.0)),
    ("fliplr", lambda m, x: m.fliplr(x) * m.arange(3.0)),
    ("flipud", lambda m, x: x.flipud() * m.arange(2.0).reshape(2, 1)),
]


@pytest.mark.parametrize("name,fn", COMPOSITES, ids=[c[0] for c in COMPOSITES])
def test_composites_match_torch(torch, name, fn):
    ours = tg.tensor(A23, dtype=tg.float64, requires_grad=True)
    theirs = torch.tensor(A23, dtype=torch.float64, requires_grad=True)
    y1, y2 = fn(tg, ours), fn(torch, theirs)
    _same(y1, y2)
    (y1 * y1).sum().backward()
    (y2 * y2).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6, atol=1e-9)


SMOOTH = [c for c in COMPOSITES if "trunc" not in c[0] and "floor" not in c[0]]


@pytest.mark.parametrize("name,fn", SMOOTH, ids=[c[0] for c in SMOOTH])
def test_composites_gradient_matches_finite_differences(gradcheck, name, fn):
    gradcheck(lambda t: fn(tg, t), A23)


def test_divide_rounding_modes_on_integers(torch):
    a = [7, -7, 7, -7, 0, 2 ** 62 + 1]
    b = [2, 2, -2, -2, 3, 3]
    for mode in ("trunc", "floor"):
        ours = tg.divide(tg.tensor(a), tg.tensor(b), rounding_mode=mode)
        theirs = torch.divide(torch.tensor(a), torch.tensor(b), rounding_mode=mode)
        assert ours.dtype == tg.int64 and ours.tolist() == theirs.tolist()
    assert tg.tensor([7, -7]).divide(2, rounding_mode="trunc").tolist() == [3, -3]
    assert tg.tensor([7.0, -7.0]).divide(2, rounding_mode="floor").tolist() == [3.0, -4.0]


def test_alias_in_place_forms():
    t = tg.tensor([6.0, -3.0])
    assert t.multiply_(2) is t and t.tolist() == [12.0, -6.0]
    t.subtract_(1, alpha=2).divide_(5).true_divide_(2)
    assert t.tolist() == pytest.approx([1.0, -0.8])
    assert tg.negative_(t) is t and t.tolist() == pytest.approx([-1.0, 0.8])


def test_broadcast_shapes_and_predicates():
    assert tg.broadcast_shapes((2, 1), (3,), 1) == tg.Size([2, 3])
    assert tg.broadcast_shapes() == tg.Size([])
    x = tg.ones(2, 3)
    assert tg.is_same_size(x, tg.zeros(2, 3)) and not x.is_same_size(tg.zeros(3, 2))
    assert x.is_signed() and tg.tensor([1]).is_signed()
    assert not tg.tensor([1], dtype=tg.uint8).is_signed() and not tg.tensor([True]).is_signed()
    assert tg.tensor([2.0]).is_nonzero() and not tg.is_nonzero(tg.tensor(0))
    assert tg.hstack([tg.tensor(1.0), tg.tensor([2.0, 3.0])]).tolist() == [1.0, 2.0, 3.0]
    assert tuple(tg.dstack([tg.tensor(1.0), tg.tensor(2.0)]).shape) == (1, 1, 2)
    assert tg.ravel(tg.arange(6).reshape(2, 3)).tolist() == list(range(6))
    assert tg.positive(tg.tensor([-1])).tolist() == [-1]


def test_errors_match_torch(torch):
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="div expected rounding_mode to be one of None, "
                                               "'trunc', or 'floor' but found 'x'"):
            lib.divide(lib.ones(2), 2, rounding_mode="x")
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            lib.divide(lib.tensor([1]), lib.tensor([0]), rounding_mode="trunc")
        with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension of length 2"):
            lib.broadcast_shapes((3,), (2,))
        with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                               r"tensor b \(2\) at non-singleton dimension 1"):
            lib.broadcast_tensors(lib.ones(4, 3), lib.ones(2))
        with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
            lib.broadcast_to(lib.ones(3), (2, 2))
        with pytest.raises(TypeError, match=r"hstack\(\): argument 'tensors' \(position 1\) must "
                                            r"be tuple of Tensors, not Tensor"):
            lib.hstack(lib.ones(2))
        with pytest.raises(RuntimeError, match="vstack expects a non-empty TensorList"):
            lib.vstack([])
        with pytest.raises(RuntimeError, match=r"Input must be >= 2-d."):
            lib.fliplr(lib.ones(2))
        with pytest.raises(RuntimeError, match=r"Input must be >= 1-d."):
            lib.flipud(lib.tensor(1.0))
        with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
            lib.ones(2).is_nonzero()
        with pytest.raises(RuntimeError, match="with no values is ambiguous"):
            lib.ones(0).is_nonzero()
        with pytest.raises(RuntimeError, match="on a bool tensor is not supported"):
            lib.positive(lib.tensor([True]))


# -- pointwise combinations and nan-aware reductions -----------------------------------------------

NAN = float("nan")
C23 = RNG.uniform(0.5, 2.0, (2, 3))
D23 = RNG.standard_normal((2, 3))
POINTWISE = [
    ("lerp", lambda m, x: m.lerp(x, m.tensor(D23), 0.3) + x.lerp(m.tensor(D23), 0.8)),
    ("lerp-tensor-weight", lambda m, x: m.lerp(m.tensor(D23), x, m.tensor(C23) - 0.5)),
    ("addcmul", lambda m, x: m.addcmul(x, x, m.tensor(C23), value=0.5)),
    ("addcdiv", lambda m, x: x.addcdiv(m.tensor(D23), x.abs() + 1, value=-2)),
    ("logaddexp", lambda m, x: m.logaddexp(x * 10, m.tensor(D23))),
    ("xlogy", lambda m, x: m.xlogy(x, m.tensor(C23)) + m.xlogy(m.tensor(D23), x.abs() + 0.5)),
    ("nan_to_num", lambda m, x: m.nan_to_num(x / m.tensor([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0]]),
                                             posinf=5.0)),
    ("nansum", lambda m, x: m.nansum(x.log(), 1)),
    # (PyTorch's gradient is nan for an all-nan slice, ours 0: no all-nan slice here)
    ("nanmean", lambda m, x: (x + m.tensor([[0.0, NAN, 0.0], [NAN, 0.0, 0.0]])).nanmean(
        0, keepdim=True) + m.nanmean(x.log())),
]


@pytest.mark.parametrize("name,fn", POINTWISE, ids=[c[0] for c in POINTWISE])
def test_pointwise_match_torch(torch, name, fn):
    ours = tg.tensor(D23, dtype=tg.float64, requires_grad=True)
    theirs = torch.tensor(D23, dtype=torch.float64, requires_grad=True)
    y1, y2 = fn(tg, ours), fn(torch, theirs)
    _same(y1, y2)
    y1.sum().backward()
    y2.sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name,fn", POINTWISE, ids=[c[0] for c in POINTWISE])
def test_pointwise_gradient_matches_finite_differences(gradcheck, name, fn):
    if name == "nan_to_num":    # finite differences need finite values: the identity part
        fn = lambda m, x: m.nan_to_num(x * x, posinf=5.0)    # noqa: E731
    x = C23 if name in ("nansum", "nanmean") else D23
    gradcheck(lambda t: fn(tg, t), x)


def test_xlogy_zero_cases_match_torch(torch):
    xs, ys = [0.0, 0.0, 2.0, 0.0, 1.5], [0.0, 0.5, 0.5, float("nan"), 3.0]
    grads = []
    for lib in (tg, torch):
        x = lib.tensor(xs, requires_grad=True)
        y = lib.tensor(ys, requires_grad=True)
        out = lib.xlogy(x, y)
        out.sum().backward()
        grads.append((out.detach().numpy(), x.grad.numpy(), y.grad.numpy(), str(out.dtype)))
        assert lib.xlogy(2, lib.tensor([3.0])).item() == pytest.approx(2 * np.log(3))
        assert lib.xlogy(lib.tensor([1, 0]), lib.tensor([3, 0])).dtype == lib.float32
    for ours, theirs in zip(grads[0][:3], grads[1][:3]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    assert grads[0][3] == grads[1][3]


def test_pointwise_values_dtypes_and_special_cases(torch):
    inf = float("inf")
    for lib in (tg, torch):
        assert lib.logaddexp(lib.tensor([-inf, inf, 0.0]), lib.tensor([-inf, inf, 0.0])).tolist() \
            == pytest.approx([-inf, inf, np.log(2.0)])
        assert lib.lerp(lib.tensor([1.0]), lib.tensor([3.0]), 1.0).tolist() == [3.0]
        assert lib.sgn(lib.tensor([-2, 0, 3])).tolist() == [-1, 0, 1]
        assert lib.signbit(lib.tensor([-0.0, 0.0, -1.0])).tolist() == [True, False, True]
        assert lib.nansum(lib.tensor([1, 2])).dtype == lib.int64
        assert lib.nanmean(lib.tensor([float("nan"), 1.0, 3.0])).item() == 2.0
        assert lib.addcmul(lib.tensor([1]), lib.tensor([2]), lib.tensor([3]), value=2).tolist() \
            == [13]
        big = lib.nan_to_num(lib.tensor([float("nan"), inf, -inf]))
        assert big.tolist() == [0.0, np.finfo(np.float32).max, np.finfo(np.float32).min]
        assert lib.nan_to_num(lib.tensor([1, 2])).tolist() == [1, 2]


def test_pointwise_errors_match_torch(torch):
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype "
                                               "double"):
            lib.lerp(lib.ones(2), lib.ones(2, dtype=lib.float64), 0.5)
        with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer "
                                               "supported"):
            lib.addcdiv(lib.ones(1), lib.tensor([1]), lib.tensor([2]))
        with pytest.raises(RuntimeError, match="nanmean\\(\\): expected input to have floating "
                                               "point or complex dtype but got Long"):
            lib.nanmean(lib.tensor([1]))
        with pytest.raises(NotImplementedError, match="\"logaddexp_cpu\" not implemented for "
                                                      "'Long'"):
            lib.logaddexp(lib.tensor([1]), lib.tensor([2]))


def test_pointwise_in_place_forms(torch):
    results = []
    for lib in (tg, torch):
        t = lib.tensor([1.0, float("nan"), 4.0])
        t.nan_to_num_(nan=2.0).lerp_(lib.tensor([3.0, 3.0, 3.0]), 0.5).addcmul_(t, t, value=0.5)
        t.addcdiv_(lib.ones(3), lib.tensor([2.0, 4.0, 8.0])).xlogy_(lib.tensor([1.0, 2.0, 1.0]))
        results.append(t.tolist())
    assert results[0] == pytest.approx(results[1])
    assert tg.xlogy_(tg.tensor([2.0]), tg.tensor([np.e])).tolist() == pytest.approx([2.0])


# -- dtype questions and index grids ---------------------------------------------------------------

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]


def test_can_cast_matches_torch(torch):
    for a in DTYPES:
        for b in DTYPES:
            assert tg.can_cast(getattr(tg, a), getattr(tg, b)) == \
                torch.can_cast(getattr(torch, a), getattr(torch, b)), (a, b)


def test_can_cast_values_and_errors():
    assert tg.can_cast(tg.int64, tg.float16) and not tg.can_cast(tg.float32, tg.int64)
    assert tg.can_cast(tg.int8, tg.uint8) and not tg.can_cast(tg.uint8, tg.bool)
    with pytest.raises(TypeError, match=r"can_cast\(\): argument 'from_' \(position 1\) must be "
                                        r"torch.dtype, not int"):
        tg.can_cast(1, tg.float32)


def test_triangle_indices_match_torch(torch):
    for row in range(5):
        for col in range(5):
            for offset in range(-5, 6):
                for fn in ("tril_indices", "triu_indices"):
                    ours = getattr(tg, fn)(row, col, offset)
                    theirs = getattr(torch, fn)(row, col, offset)
                    assert tuple(ours.shape) == tuple(theirs.shape)
                    assert ours.tolist() == theirs.tolist()
    assert tg.tril_indices(3, 3, dtype=tg.int32).dtype == tg.int32
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="row must be non-negative, got-1"):
            lib.tril_indices(-1, 2)


def test_triangle_indices_values():
    assert tg.tril_indices(3, 3).tolist() == [[0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2]]
    assert tg.triu_indices(2, 3, 1).tolist() == [[0, 0, 1], [1, 2, 2]]
    assert tg.tril_indices(3, 3).dtype == tg.int64


# -- rotation and differences ---------------------------------------------------------------------

X234 = RNG.standard_normal((2, 3, 4))
SHAPED = [
    ("rot90", lambda m, x: m.rot90(x) * m.arange(12.0).reshape(3, 2, 2)[:, :, :1]),
    ("rot90-k2", lambda m, x: x.rot90(2, [2, 0]) * m.arange(24.0).reshape(2, 3, 4)),
    ("rot90-k-1", lambda m, x: m.rot90(x, -1, (-1, 1)) * m.arange(24.0).reshape(2, 4, 3)),
    ("diff", lambda m, x: m.diff(x) * x[..., :3]),
    ("diff-n2-prepend", lambda m, x: x.diff(2, 1, prepend=x[:, :1] * 2, append=x[:, :2]) * 3),
]


@pytest.mark.parametrize("name,fn", SHAPED, ids=[c[0] for c in SHAPED])
def test_rotation_and_differences_match_torch(torch, name, fn):
    ours = tg.tensor(X234, dtype=tg.float64, requires_grad=True)
    theirs = torch.tensor(X234, dtype=torch.float64, requires_grad=True)
    y1, y2 = fn(tg, ours), fn(torch, theirs)
    _same(y1, y2)
    (y1 * y1).sum().backward()
    (y2 * y2).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name,fn", SHAPED, ids=[c[0] for c in SHAPED])
def test_rotation_and_differences_gradcheck(gradcheck, name, fn):
    gradcheck(lambda t: fn(tg, t), X234)


def test_rotation_and_differences_values_and_errors(torch):
    assert tg.rot90(tg.tensor([[1, 2], [3, 4]])).tolist() == [[2, 4], [1, 3]]
    assert tg.diff(tg.tensor([1, 4, 9, 16]), 2).tolist() == [2, 2]
    assert tg.diff(tg.tensor([True, False, False])).tolist() == [True, False]
    x = tg.ones(3)
    assert tg.diff(x, 0) is not x and tg.diff(x, 0, prepend=x).tolist() == [1.0] * 3
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="expected total dims >= 2, but got total dims = 1"):
            lib.rot90(lib.ones(2))
        with pytest.raises(RuntimeError, match="expected total rotation dims == 2, but got dims "
                                               "= 1"):
            lib.rot90(lib.ones(2, 2), 1, [0])
        with pytest.raises(RuntimeError, match="expected rotation dims to be different, but got "
                                               "dim0 = 0 and dim1 = 0"):
            lib.rot90(lib.ones(2, 2), 1, [0, 0])
        with pytest.raises(IndexError, match="Dimension out of range"):
            lib.rot90(lib.ones(2, 2), 1, [0, 2])
        with pytest.raises(RuntimeError, match="diff expects input to be at least one-dimensional"):
            lib.diff(lib.tensor(1.0))
        with pytest.raises(RuntimeError, match="order must be non-negative but got -1"):
            lib.diff(lib.ones(3), -1)


# -- extremes and scalars -----------------------------

@pytest.mark.parametrize("kwargs", [{}, {"keepdim": True}, {"dim": 1},
                                    {"dim": -1, "keepdim": True}, {"dim": 0}])
def test_aminmax_matches_torch(torch, kwargs):
    x = np.array([[1.0, 3.0, 3.0], [3.0, 0.0, -2.0]])     # ties share the gradient
    results = []
    for lib in (tg, torch):
        t = lib.tensor(x, requires_grad=True)
        out = lib.aminmax(t, **kwargs)
        assert type(out).__name__ == "aminmax" and out.min is out[0] and out.max is out[1]
        (out.min * 2 + out.max * 3).sum().backward()
        results.append((out.min.detach().numpy(), out.max.detach().numpy(), t.grad.numpy()))
        method = t.aminmax(**kwargs)
        np.testing.assert_array_equal(method.max.detach().numpy(), results[-1][1])
    for ours, theirs in zip(*results):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs)


def test_aminmax_gradcheck_and_errors(gradcheck, torch):
    gradcheck(lambda t: tg.aminmax(t, dim=1).max - tg.aminmax(t, dim=0).min[:2, None], X234[0, :2])
    assert tg.aminmax(tg.tensor([2, 7, 1])).max.item() == 7
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="cannot compute aminmax over an empty dimension"):
            lib.aminmax(lib.ones(0))


def test_scalar_tensor_matches_torch(torch):
    for args, kwargs in (((3,), {}), ((3,), {"dtype": "int64"}), ((True,), {}),
                         ((2.5,), {"dtype": "float64", "requires_grad": True})):
        kw = dict(kwargs)
        ours = tg.scalar_tensor(*args, **{k: getattr(tg, v) if k == "dtype" else v
                                           for k, v in kw.items()})
        theirs = torch.scalar_tensor(*args, **{k: getattr(torch, v) if k == "dtype" else v
                                               for k, v in kw.items()})
        assert repr(ours) == repr(theirs)
