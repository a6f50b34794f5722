"""Regressions of the session-26 fuzz run of fuzz8 (programs 62654099-, 60655176-; surface
60770209-) and of the open seeds of session 25 it triaged.

Each test compares with PyTorch (the `torch` fixture skips cleanly without it).
"""
import numpy as np
import pytest

import tapegrad as tg


def _assert_same(got, expected):
    # (absolute tolerance on the array's scale: second derivatives cancel to zeros up to rounding)
    for a, b in zip(got, expected):
        scale = np.max(np.abs(b[np.isfinite(b)]), initial=1.0)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15 * scale, equal_nan=True)


# -- cosine_similarity below eps (62648734; SILENT: gradients differed from PyTorch's) -----------
# PyTorch clamps a clone of each norm to eps in place under no_grad, so a row whose norm is below
# eps keeps the derivative of its norm; tapegrad's differentiable clamp cut that path.

def _cosine_similarity_grads(lib, fn, rows1, rows2, eps):
    x1 = lib.tensor(rows1, dtype=lib.float64, requires_grad=True)
    x2 = lib.tensor(rows2, dtype=lib.float64, requires_grad=True)
    y = fn(lib)(x1, x2, eps=eps)
    w = lib.arange(1.0, y.numel() + 1, dtype=lib.float64).reshape(y.shape)
    g1, g2 = lib.autograd.grad((y * w).sum(), (x1, x2), create_graph=True)
    h1, h2 = lib.autograd.grad((g1 * g1).sum() + (g2 ** 3).sum(), (x1, x2))
    return [t.detach().numpy() for t in (y, g1, g2, h1, h2)]


@pytest.mark.parametrize("fn", [lambda lib: lib.nn.functional.cosine_similarity,
                                lambda lib: lib.cosine_similarity])
@pytest.mark.parametrize("eps", [0.1, 1e-8])
def test_cosine_similarity_gradient_below_eps_matches_torch(torch, fn, eps):
    rows1 = [[0.03, 0.04], [1.0, 2.0], [0.0, 0.0], [0.5, -0.2]]
    rows2 = [[1.0, 3.0], [0.01, 0.02], [1.0, 1.0], [0.001, 0.0]]
    _assert_same(_cosine_similarity_grads(tg, fn, rows1, rows2, eps),
                 _cosine_similarity_grads(torch, fn, rows1, rows2, eps))


# -- copysign's second derivative at x = 0 (62654947; SILENT: 0 where PyTorch's is NaN) ---------
# PyTorch's gradient is grad * (result / x) masked to 0 where x is 0; the quotient's own
# derivative there is 0 / 0, so second derivatives are NaN at zeros of x (atan2's class).

def _copysign_derivatives(lib, in_place):
    x = lib.tensor([-0.0, 0.0, 1.5, float("inf"), -2.0], dtype=lib.float64, requires_grad=True)
    other = lib.tensor([0.5, -1.0, -0.0, 1.0, float("nan")], dtype=lib.float64)
    y = x * 1.0
    z = y.copysign_(other) if in_place else lib.copysign(y, other)
    g, = lib.autograd.grad((z * lib.tensor([1.0, -2.0, 3.0, 0.5, 2.0], dtype=lib.float64)).sum(),
                           [x], create_graph=True)
    g2, = lib.autograd.grad((g * lib.tensor([0.3, 0.7, -1.1, 2.0, 1.0],
                                             dtype=lib.float64)).sum(), [x])
    return g.detach().numpy(), g2.numpy()


@pytest.mark.parametrize("in_place", [False, True])
def test_copysign_second_derivative_at_zero_matches_torch(torch, in_place):
    _assert_same(_copysign_derivatives(tg, in_place), _copysign_derivatives(torch, in_place))


# -- the divisor's gradient of a / b (62655301; SILENT) ------------------------------------------
# PyTorch's is -grad * ((a / b) / b): two quotients.  tapegrad's -grad * a / (b * b) overflowed
# or underflowed in b * b (b = 1e-200: -inf where PyTorch's is -1e200; b = 1e200: -0 where it is
# -1e-200), and its second derivative at b = inf was NaN (inf * 0 in b * b's derivative) where
# PyTorch's is 0.  The eager VJP, the create_graph VJP and tapegrad.compile's replay (plain and
# fused steps) share the formula.

_DIVIDENDS = [0.95, 0.0, 2.0, 1e-200, 1e200, -3.0]
_DIVISORS = [float("inf"), 1e200, 3.0, 1e-200, 1e200, 1e-170]


def _div_derivatives(lib, dividends, divisors):
    a = lib.tensor(dividends, dtype=lib.float64, requires_grad=True)
    b = lib.tensor(divisors, dtype=lib.float64, requires_grad=True)
    y = a / b
    w = lib.arange(1.0, y.numel() + 1, dtype=lib.float64).reshape(y.shape)
    ga, gb = lib.autograd.grad((y * w).sum(), [a, b], create_graph=True)
    h = lib.autograd.grad((ga * ga).sum() + gb.sum(), [a, b])
    return [t.detach().numpy() for t in (ga, gb) + h]


def test_divisor_gradient_is_two_quotients_as_torch(torch):
    got = _div_derivatives(tg, _DIVIDENDS, _DIVISORS)
    expected = _div_derivatives(torch, _DIVIDENDS, _DIVISORS)
    for a, b in zip(got[:2], expected[:2]):      # first derivatives: bit for bit
        np.testing.assert_array_equal(a, b)
    _assert_same(got[2:], expected[2:])


@pytest.mark.parametrize("size", [6, 2048])     # 2048: the replay's fused loop over blocks
def test_divisor_gradient_under_compile_matches_torch(torch, size):
    rng = np.random.default_rng(size)
    dividends = rng.standard_normal(size)
    divisors = rng.standard_normal(size)
    dividends[:6], divisors[:6] = _DIVIDENDS, _DIVISORS

    def fn(a, b):
        return (a / b) * 0.5

    compiled = tg.compile(fn)
    for call in range(3):
        grads = []
        for lib, f in ((torch, fn), (tg, compiled)):
            a = lib.tensor(dividends + call, dtype=lib.float64, requires_grad=True)
            b = lib.tensor(divisors, dtype=lib.float64, requires_grad=True)
            f(a, b).sum().backward()
            grads.append([a.grad.numpy(), b.grad.numpy()])
        for got, expected in zip(grads[1], grads[0]):
            np.testing.assert_array_equal(got, expected)


# -- div with a rounding mode, recorded (sibling of 62655301; SILENT) ---------------------------
# PyTorch's DivBackward2 gives both operands zeros.  tapegrad recorded floor(a / b) / trunc(a / b):
# zero times the quotient's derivative, NaN where b is 0 or (a / b) / b overflows, -0 elsewhere;
# and floor mode's values were the floor of the rounded quotient (10 for 1 / 0.1) where
# PyTorch's, and tapegrad's unrecorded floor_divide, give 9.

def _rounded_div(lib, mode, in_place, dtype):
    a = lib.tensor([1.0, -1.0, 0.7, 3.0, 5.0], dtype=getattr(lib, dtype), requires_grad=True)
    b = lib.tensor([0.1, 0.1, 1e-30, -0.0, 2.0], dtype=getattr(lib, dtype), requires_grad=True)
    y = a.clone().div_(b, rounding_mode=mode) if in_place else lib.div(a, b, rounding_mode=mode)
    grads = lib.autograd.grad((y * 2.0).sum(), [a, b], create_graph=True)
    return type(y.grad_fn).__name__, [t.detach().numpy() for t in (y,) + grads]


@pytest.mark.parametrize("mode", ["floor", "trunc"])
@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_div_rounding_mode_recorded_matches_torch(torch, mode, in_place, dtype):
    got_name, got = _rounded_div(tg, mode, in_place, dtype)
    expected_name, expected = _rounded_div(torch, mode, in_place, dtype)
    assert got_name == expected_name
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype


# -- an in-place op whose source is the written view's own layout (62656185: spurious error) ----
# numpy's broadcast_to gives a size-1 dim stride 0 where PyTorch's expand keeps the dim's stride,
# so `x.view(-1, 1, 1).expand(-1, -1, -1).sub_(x.view(-1, 1, 1))` looked like a partial overlap of
# source and written memory (PyTorch: the same layout, written element by element).  The overlap
# check lets a 0 stride at a size-1 dim match any stride there.

def _write_onto_own_layout(lib):
    out = []
    v = lib.tensor(1.5, dtype=lib.float64)
    v3 = v.view((-1, 1, 1))
    v3.expand(-1, -1, -1).sub_(v3)
    out.append(v.item())
    x = lib.tensor([[1.0, 2.0]])
    x.expand(1, 2).add_(x)
    out.append(x.tolist())
    return out


def test_inplace_source_with_the_written_layout_runs_as_torch(torch):
    assert _write_onto_own_layout(tg) == _write_onto_own_layout(torch)


@pytest.mark.parametrize("write", [lambda lib: lib.ones(3, 1).expand(3, 4).add_(1),
                                   lambda lib: (lambda z: z[1:].add_(z[:-1]))(lib.arange(4.0))])
def test_overlapping_writes_are_still_refused(torch, write):
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="memory location"):
            write(lib)


# -- addcdiv in PyTorch's order (sibling of 62655301; values and gradients an ulp apart) ---------
# PyTorch's kernel is input + (value * tensor1) / tensor2, its derivatives grad * (value /
# tensor2) (a true division) and -grad * (value * tensor1 / (tensor2 * tensor2)).  tapegrad's
# composite input + value * (tensor1 / tensor2) rounded otherwise in about a quarter of the
# values (addcdiv_, Adam's update, too) and half of the gradients, and kept tensor2's gradient
# finite where tensor2 * tensor2 overflows in PyTorch's.

def _addcdiv_results(lib, dtype, value):
    rng = np.random.default_rng(7)
    values = [rng.standard_normal(64) for _ in range(3)]
    values[2][:3] = [1e-200, 1e200, 1e-170] if dtype == "float64" else [1e-30, 1e30, 1e-20]
    leaves = [lib.tensor(v, dtype=getattr(lib, dtype), requires_grad=True) for v in values]
    y = lib.addcdiv(*leaves, value=value)
    grads = lib.autograd.grad((y * 1.5).sum(), leaves)
    updated = lib.tensor(values[0], dtype=getattr(lib, dtype))
    updated.addcdiv_(*(lib.tensor(v, dtype=getattr(lib, dtype)) for v in values[1:]), value=value)
    return [t.detach().numpy() for t in (y,) + grads + (updated,)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("value", [1, 0.3, -0.001])
def test_addcdiv_values_and_gradients_bit_for_bit_as_torch(torch, dtype, value):
    for got, expected in zip(_addcdiv_results(tg, dtype, value),
                             _addcdiv_results(torch, dtype, value)):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("fn", [lambda i, a, b: tg.addcdiv(i, a, b, value=0.3).tanh(),
                                lambda i, a, b: tg.div(a, b, rounding_mode="floor") * i,
                                lambda i, a, b: tg.div(a, b, rounding_mode="trunc") * i])
def test_addcdiv_and_rounded_div_under_compile_match_eager(fn):
    # (their Functions compute the forward from ops on the operands' values only: tapegrad.compile
    # replays the call and differentiated records made inside it, floor_divide's among them)
    compiled = tg.compile(fn)
    for call in range(3):
        values = [np.random.default_rng([call, k]).standard_normal(50) for k in range(3)]
        results = []
        for f in (fn, compiled):
            leaves = [tg.tensor(v, requires_grad=True) for v in values]
            y = f(*leaves)
            y.sum().backward()
            results.append([y.detach().numpy()] + [t.grad.numpy() for t in leaves])
        for got, expected in zip(results[1], results[0]):
            np.testing.assert_array_equal(got, expected)
