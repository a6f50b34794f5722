"""Regressions of the session-27 fuzz run of fuzz10 (programs 62660858-, 60660773-; surface
60780293-).

Each test compares with PyTorch (the `torch` fixture skips cleanly without it).
"""
import numpy as np
import pytest

import tapegrad as tg


def _assert_same(got, expected, rtol=1e-12):
    for a, b in zip(got, expected):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol, atol=0, equal_nan=True)


# -- prelu's second derivatives beside an infinite weight or input (62661981; SILENT: NaN where
# PyTorch's are finite) ---------------------------------------------------------------------------
# The first derivatives were where(x > 0, grad, weight * grad) and where(x > 0, 0, grad * x) of
# recorded ops: their derivatives reach each factor of a masked-out product as 0 * (the other
# factor), NaN for an infinite weight at x > 0 or an infinite x or grad.  PyTorch's
# PreluKernelBackwardBackward0 is where()s of its derivatives, masked with x >= 0.

def _prelu_derivatives(lib, weight, x_values, w_values):
    inf = float("inf")
    x = lib.tensor(x_values, dtype=lib.float64, requires_grad=True)
    w = lib.tensor(w_values, dtype=lib.float64, requires_grad=True)
    c = lib.tensor(np.linspace(-1.5, 2.0, x.numel()).reshape(x.shape), dtype=lib.float64,
                   requires_grad=True)
    if weight == "inf-grad":
        c = c.detach().clone()
        c[..., 0] = inf
        c.requires_grad_(True)
    y = lib.nn.functional.prelu(x, w)
    grads = lib.autograd.grad((y * c).sum(), [x, w, c], create_graph=True)
    h = [lib.full_like(g, 0.75) for g in grads]
    s = sum((g * k).sum() for g, k in zip(grads, h))
    second = lib.autograd.grad(s, [x, w, c], allow_unused=True)
    out = [y, *grads, *second]
    return ([t.detach().numpy() for t in out],
            [type(g.grad_fn).__name__ for g in grads[:1]])


_INF = float("inf")
_CASES = {
    "inf-weight": ([[0.889, -0.5], [0.0, 2.0], [-0.0, -3.0]], [_INF]),
    "inf-x": ([[_INF, -0.5], [0.0, -_INF], [1.0, -3.0]], [0.25, -2.0]),
    "inf-grad": ([[0.5, -0.5], [0.0, 2.0], [-1.0, 3.0]], [0.25, -2.0]),
    "finite": ([[0.5, -0.5], [0.0, 2.0], [-1.0, 3.0]], [0.25]),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_prelu_second_derivatives_match_torch(torch, case):
    x_values, w_values = _CASES[case]
    got, got_names = _prelu_derivatives(tg, case, x_values, w_values)
    expected, expected_names = _prelu_derivatives(torch, case, x_values, w_values)
    _assert_same(got, expected)
    assert got_names == expected_names == ["PreluKernelBackwardBackward0"]


def test_prelu_second_derivatives_match_finite_differences():
    x = tg.tensor([[0.7, -0.4, 1.3], [-2.0, 0.2, -0.9]], dtype=tg.float64, requires_grad=True)
    w = tg.tensor([0.3, -1.1, 2.5], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda a, b: tg.nn.functional.prelu(a, b), (x, w))


# -- vector_norm of a 0-d tensor along dim 0 / -1 for a general ord (62662294: AxisError; a
# regression of session 26's _PNorm for 0-d inputs) ---------------------------------------------

@pytest.mark.parametrize("ord", [3.0, 0.5, -1.0, -2.5])
@pytest.mark.parametrize("dim", [0, (0,), (-1,), None])
@pytest.mark.parametrize("keepdim", [False, True])
def test_vector_norm_of_0d_along_its_dim_matches_torch(torch, ord, dim, keepdim):
    def run(lib):
        x = lib.tensor(-1.5, dtype=lib.float64, requires_grad=True)
        y = lib.linalg.vector_norm(x, ord, dim=dim, keepdim=keepdim)
        g, = lib.autograd.grad(y, x, create_graph=True)
        g2, = lib.autograd.grad(g, x)
        return [t.detach().numpy() for t in (y, g, g2)]
    _assert_same(run(tg), run(torch))


# -- pow's exponent gradient at a zero base: grad times the masked a**e log(a), as PyTorch's
# pow_backward_exponent (60661280: the second derivative at a == 0 is NaN in PyTorch, was 0
# here; and an infinite or NaN upstream gradient there gives NaN, was 0) -------------------------

def _pow_exponent_derivatives(lib, dtype, scalar_base):
    inf, nan = float("inf"), float("nan")
    e = lib.tensor([1.0, 2.0, 0.0, -1.5, 2.5, 1.0], dtype=dtype, requires_grad=True)
    if scalar_base:
        y = 0.0 ** e
        leaves = [e]
    else:
        b = lib.tensor([0.0, -0.0, 0.0, 0.0, 2.0, 3.0], dtype=dtype, requires_grad=True)
        y = b ** e
        leaves = [b, e]
    upstream = lib.tensor([inf, nan, 2.0, 0.5, inf, -1.0], dtype=dtype)
    first = lib.autograd.grad(y, leaves, upstream, retain_graph=True)
    grads = lib.autograd.grad((y * 0.7).sum(), leaves, create_graph=True)
    s = sum((g * 1.3).sum() for g in grads)
    second = lib.autograd.grad(s, leaves, allow_unused=True)
    return [t.detach().numpy() for t in (*first, *grads, *second)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("scalar_base", [False, True])
def test_pow_exponent_gradient_at_zero_base_matches_torch(torch, dtype, scalar_base):
    _assert_same(_pow_exponent_derivatives(tg, getattr(tg, dtype), scalar_base),
                 _pow_exponent_derivatives(torch, getattr(torch, dtype), scalar_base), 1e-6)


# -- an in-place op computed as a Function (exp2_, tan_) under saved-tensor hooks that hand back
# the saved tensor (identity, save_on_cpu): its saved output had left the graph when self adopted
# the Function's record, so a second derivative missed the terms through it (60661550; SILENT)

_HOOKS = {
    "identity": lambda lib: lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t),
    "save_on_cpu": lambda lib: lib.autograd.graph.save_on_cpu(),
    "clone": lambda lib: lib.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t),
}


def _in_place_second_derivative(lib, op, hooks):
    x = lib.tensor([[0.3], [-1.2], [0.45]], dtype=lib.float64, requires_grad=True)
    y = (x * 1.5).sin()
    with _HOOKS[hooks](lib):
        z = getattr(y, op)()
    g, = lib.autograd.grad((z * lib.tensor([[0.7], [-0.4], [1.1]], dtype=lib.float64)).sum(),
                           [x], create_graph=True)
    g2, = lib.autograd.grad((g * lib.tensor([[1.3], [0.6], [-0.2]], dtype=lib.float64)).sum(),
                            [x])
    return [t.detach().numpy() for t in (z, g, g2)]


@pytest.mark.parametrize("hooks", sorted(_HOOKS))
@pytest.mark.parametrize("op", ["exp2_", "tan_", "sinc_", "erfinv_"])
def test_in_place_function_second_derivative_under_saved_hooks_matches_torch(torch, op, hooks):
    _assert_same(_in_place_second_derivative(tg, op, hooks),
                 _in_place_second_derivative(torch, op, hooks))


# -- histogram / histogramdd with given edges: PyTorch checks the edges (1-d, at least one bin)
# before the input's dtype has a kernel, with its own messages (surface 60782133: an integer
# input with one edge raised NotImplementedError where PyTorch's bin count error is a
# RuntimeError) -----------------------------------------------------------------------------------

def _raised(fn):
    try:
        fn()
    except Exception as error:      # noqa: BLE001 - the type and message are compared
        return type(error).__name__, str(error)
    return None


@pytest.mark.parametrize("case", ["int-one-edge", "int-no-edge", "int-2d-edges", "float-one-edge",
                                  "float-no-edge", "float-0d-edges", "float-2d-edges",
                                  "dd-one-edge", "dd-no-edge-second"])
def test_histogram_edges_checked_before_dtype_as_torch(torch, case):
    def call(lib):
        x_int, x_float = lib.tensor([1, 2]), lib.tensor([1.0, 2.0])
        edges = {
            "int-one-edge": (x_int, lib.tensor([1])),
            "int-no-edge": (x_int, lib.tensor([], dtype=lib.int64)),
            "int-2d-edges": (x_int, lib.tensor([[1, 2]])),
            "float-one-edge": (x_float, lib.tensor([1.0])),
            "float-no-edge": (x_float, lib.tensor([], dtype=lib.float32)),
            "float-0d-edges": (x_float, lib.tensor(1.0)),
            "float-2d-edges": (x_float, lib.tensor([[1.0, 2.0]])),
        }
        if case.startswith("dd"):
            points = lib.tensor([[1.0, 2.0]])
            second = lib.tensor([1.0, 3.0]) if case == "dd-one-edge" else lib.tensor([])
            first = lib.tensor([1.0]) if case == "dd-one-edge" else lib.tensor([0.0, 2.0])
            return _raised(lambda: lib.histogramdd(points, [first, second]))
        return _raised(lambda: lib.histogram(*edges[case]))
    got, expected = call(tg), call(torch)
    assert expected is not None and got == expected
