"""Elementwise results take their operands' memory layout, as PyTorch's TensorIterator gives it
(session 33, task layout).  numpy lays a result out row-major when the operands' layouts
differ, or when an op computes through np.where / a float64 detour, and the Python-level ops
wrapped it row-major: a transposed, permuted or column-major (linalg) input then gave a
row-major result, so stride() differed and flatten() / reshape(-1) was a view (aliasing the
result) where PyTorch's is a copy.  Each case compares stride() and is_contiguous() with
PyTorch's; values are compared too, so a re-layout that moved an element would show."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _base(lib, seed, shape=(4, 5, 6), lo=0.2, hi=0.9):
    values = np.random.default_rng(seed).uniform(lo, hi, size=shape)
    return lib.tensor(values, dtype=lib.float64)


def _input(lib, kind, seed=0):
    """A float64 tensor of a given layout, values in (0.2, 0.9) (every op below is defined)."""
    if kind == "transposed":
        return _base(lib, seed)[0].t()                      # (6, 5), strides (1, 6)
    if kind == "permuted":
        return _base(lib, seed).permute(2, 0, 1)            # (6, 4, 5)
    if kind == "column_major":                              # linalg's layout
        m = lib.tensor(np.random.default_rng(seed).uniform(-0.5, 0.5, (5, 5)) + 3 * np.eye(5),
                       dtype=lib.float64)
        return lib.linalg.inv(m).abs() * 0.2 + 0.3
    raise ValueError(kind)


def _get(lib, path):
    obj = lib
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


UNARY = ["lgamma", "digamma", "erfinv", "erfc", "exp2", "i0", "logit", "angle", "tan", "asinh",
         "acosh", "atanh", "signbit", "isreal", "special.erfcx", "special.ndtr", "special.ndtri",
         "special.log_ndtr", "special.i0e", "special.i1", "special.i1e", "special.entr",
         "special.bessel_j0", "special.gammaln", "special.spherical_bessel_j0"]


def _unary_cases():
    for name in UNARY:
        for kind in ("transposed", "permuted", "column_major"):
            yield pytest.param(name, kind, id=f"{name}-{kind}")


def _same_layout(a, b):
    assert tuple(a.shape) == tuple(b.shape)
    assert a.stride() == b.stride(), (a.stride(), b.stride())
    assert a.is_contiguous() == b.is_contiguous()
    np.testing.assert_allclose(np.asarray(a.detach().numpy(), dtype=np.float64),
                               np.asarray(b.detach().numpy(), dtype=np.float64),
                               rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("name,kind", list(_unary_cases()))
def test_unary_result_takes_input_layout(name, kind):
    expected = _get(torch, name)(_input(torch, kind))
    got = _get(tapegrad, name)(_input(tapegrad, kind))
    _same_layout(got, expected)


def _polygamma(lib, x):
    return lib.polygamma(1, x)


def _mvlgamma(lib, x):
    return lib.mvlgamma(x + 1, 2)           # a reduction in PyTorch: contiguous


def _logsigmoid(lib, x):
    return lib.nn.functional.logsigmoid(x)  # allocated contiguous in PyTorch


def _rrelu_eval(lib, x):
    return lib.nn.functional.rrelu(x, training=False)   # contiguous in PyTorch


def _rrelu_train(lib, x):
    return lib.nn.functional.rrelu(x, training=True)


@pytest.mark.parametrize("fn", [_polygamma, _mvlgamma, _logsigmoid, _rrelu_eval, _rrelu_train])
@pytest.mark.parametrize("kind", ["transposed", "column_major"])
def test_composite_unary_layout(fn, kind):
    expected = fn(torch, _input(torch, kind))
    got = fn(tapegrad, _input(tapegrad, kind))
    assert got.stride() == expected.stride()
    assert got.is_contiguous() == expected.is_contiguous()
    if fn is not _rrelu_train:
        np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-8)


def _pair(lib, kind):
    """Two operands whose layouts conflict (PyTorch: the first operand's order decides)."""
    if kind == "transposed_row_major":
        return _input(lib, "transposed"), _base(lib, 1, (6, 5))
    if kind == "permuted_other_order":
        b = _base(lib, 3).permute(2, 0, 1).contiguous().transpose(1, 2).contiguous().transpose(1, 2)
        return _input(lib, "permuted"), b
    if kind == "column_major_row_major":
        return _input(lib, "column_major"), _base(lib, 5, (5, 5))
    if kind == "column_major_transposed":
        return _input(lib, "column_major"), _input(lib, "column_major", 4).t()
    raise ValueError(kind)


BINARY = {
    "atan2": lambda lib, a, b: lib.atan2(a, b),
    "fmod": lambda lib, a, b: lib.fmod(a, b),
    "remainder": lambda lib, a, b: lib.remainder(a, b),
    "floor_divide": lambda lib, a, b: lib.floor_divide(a, b),
    "maximum": lambda lib, a, b: lib.maximum(a, b),
    "minimum": lambda lib, a, b: lib.minimum(a, b),
    "fmax": lambda lib, a, b: lib.fmax(a, b),
    "hypot": lambda lib, a, b: lib.hypot(a, b),
    "xlogy": lambda lib, a, b: lib.xlogy(a, b),
    "special.xlog1py": lambda lib, a, b: lib.special.xlog1py(a, b),
    "special.zeta": lambda lib, a, b: lib.special.zeta(a + 1.5, b),
    "copysign": lambda lib, a, b: lib.copysign(a, b),
    "logaddexp": lambda lib, a, b: lib.logaddexp(a, b),
    "logaddexp2": lambda lib, a, b: lib.logaddexp2(a, b),
    "nextafter": lambda lib, a, b: lib.nextafter(a, b),
    "igamma": lambda lib, a, b: lib.igamma(a, b),
    "eq": lambda lib, a, b: lib.eq(a, b),
    "lt": lambda lib, a, b: a < b,
    "logical_and": lambda lib, a, b: lib.logical_and(a, b),
    "where": lambda lib, a, b: lib.where(a > 0.5, a, b),
    "clamp_tensor": lambda lib, a, b: lib.clamp(a, min=b),
    "mse_none": lambda lib, a, b: lib.nn.functional.mse_loss(a, b, reduction="none"),
    "l1_none": lambda lib, a, b: lib.nn.functional.l1_loss(a, b, reduction="none"),
    "huber_none": lambda lib, a, b: lib.nn.functional.huber_loss(a, b, reduction="none"),
    "bce_none": lambda lib, a, b: lib.nn.functional.binary_cross_entropy(a, b, reduction="none"),
}


@pytest.mark.parametrize("kind", ["transposed_row_major", "permuted_other_order",
                                  "column_major_row_major", "column_major_transposed"])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_result_takes_iterator_layout(name, kind):
    expected = BINARY[name](torch, *_pair(torch, kind))
    got = BINARY[name](tapegrad, *_pair(tapegrad, kind))
    _same_layout(got, expected)


def test_flatten_of_lgamma_of_inverse_is_a_copy():
    # the reported case: flatten() of a column-major result is a copy in PyTorch; a row-major
    # result here made it a view, and zero_() on it wiped y (SILENT)
    m = np.array([[2.0, 0.5, 0.1], [0.3, 1.5, 0.2], [0.1, 0.4, 3.0]])
    results = []
    for lib in (torch, tapegrad):
        y = lib.lgamma(lib.linalg.inv(lib.tensor(m)))
        before = y.clone()
        y.flatten().zero_()
        results.append((y.numpy().copy(), before.numpy()))
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            y.view(-1)
    (t_after, t_before), (g_after, g_before) = results
    np.testing.assert_array_equal(t_after, t_before)       # PyTorch: y unchanged
    np.testing.assert_array_equal(g_after, g_before)
    np.testing.assert_allclose(g_after, t_after, rtol=1e-12)


def test_binary_result_aliasing_follows_layout():
    m = np.array([[2.0, 0.5], [0.3, 1.5]])
    n = np.array([[0.7, 0.2], [0.9, 0.4]])
    for lib in (torch, tapegrad):
        y = lib.atan2(lib.linalg.inv(lib.tensor(m)), lib.tensor(n))
        saved = y.clone()
        y.reshape(-1).add_(1.0)
        np.testing.assert_array_equal(y.numpy(), saved.numpy())


def test_layout_kept_result_is_not_an_alias_and_gradients_match():
    # the re-laid result owns its memory (an in-place write leaves the input alone) and the
    # gradient through it is the same as through a row-major input's (float64 check)
    x = _input(tapegrad, "column_major").detach().requires_grad_()
    y = tapegrad.special.erfcx(x)
    y.add_(0.0)
    np.testing.assert_array_equal(x.detach().numpy(), _input(tapegrad, "column_major").numpy())
    assert tapegrad.autograd.gradcheck(lambda t: tapegrad.lgamma(t.t()).t(),
                                       (x.detach().clone().requires_grad_(),))
    assert tapegrad.autograd.gradcheck(
        lambda t: tapegrad.atan2(t, tapegrad.ones(5, 5, dtype=tapegrad.float64) + t.t()),
        (x.detach().clone().requires_grad_(),))


def test_row_major_operands_stay_row_major():
    for name in ("lgamma", "special.erfcx", "tan"):
        assert _get(tapegrad, name)(_base(tapegrad, 0)).stride() == (30, 6, 1)
    a, b = _base(tapegrad, 0), _base(tapegrad, 1)
    assert tapegrad.atan2(a, b).stride() == (30, 6, 1)
    assert tapegrad.hypot(a, b).stride() == (30, 6, 1)


@pytest.mark.parametrize("kind", ["transposed_row_major", "permuted_other_order",
                                  "column_major_row_major", "column_major_transposed"])
@pytest.mark.parametrize("swap", [False, True])
def test_lerp_tensor_weight_takes_input_layout(kind, swap):
    # PyTorch's lerp kernel orders by input; the composition's where followed the weight
    results = []
    for lib in (torch, tapegrad):
        a, b = _pair(lib, kind)
        if swap:
            a, b = b, a
        a.requires_grad_()
        y = lib.lerp(a, b, b)
        y.backward(lib.ones_like(y))
        results.append((y, a.grad))
    (expected, t_grad), (got, g_grad) = results
    _same_layout(got, expected)
    assert type(got.grad_fn).__name__ == "LerpBackward1"
    np.testing.assert_allclose(g_grad.numpy(), t_grad.numpy(), rtol=1e-12)


def _ints(lib, shape, lo, seed):
    return lib.tensor(np.random.default_rng(seed).integers(lo, 9, shape))


INTEGER_AND_BOOL = {
    "isclose": lambda lib, a, b: lib.isclose(a.t().double(), b.double()),
    "div_trunc": lambda lib, a, b: lib.div(a.t(), b, rounding_mode="trunc"),
    "gcd": lambda lib, a, b: lib.gcd(a.t(), b),
    "lcm": lambda lib, a, b: lib.lcm(a.t(), b),
    "bitwise_left_shift": lambda lib, a, b: lib.bitwise_left_shift(a.t().abs(), b),
}


@pytest.mark.parametrize("name", sorted(INTEGER_AND_BOOL))
def test_integer_and_bool_results_take_iterator_layout(name):
    expected = INTEGER_AND_BOOL[name](torch, _ints(torch, (5, 6), -9, 0), _ints(torch, (6, 5), 1, 1))
    got = INTEGER_AND_BOOL[name](tapegrad, _ints(tapegrad, (5, 6), -9, 0),
                                 _ints(tapegrad, (6, 5), 1, 1))
    assert got.stride() == expected.stride()
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
