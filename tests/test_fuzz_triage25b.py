"""Regressions of the session-25 fuzz run of fuzz7 (programs 62645001-; surface 60755001-).

Each test compares with PyTorch (the `torch` fixture skips cleanly without it).
"""
import warnings

import numpy as np
import pytest

import tapegrad as tg


def _first_and_second(lib, fn, values, weights=(1.0, 2.0, 3.0, 4.0)):
    """fn's first derivative (create_graph) and the second of its weighted sum, float64."""
    x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = fn(lib, x.reshape(2, -1))
        w = lib.tensor([1.0, -2.0], dtype=lib.float64)
        g, = lib.autograd.grad((y * w).sum(), [x], create_graph=True)
        g2, = lib.autograd.grad((g * lib.tensor(weights, dtype=lib.float64)).sum(), [x])
    return g.detach().numpy(), g2.numpy()


def _assert_same(got, expected):
    # (NaN where NaN; otherwise within rounding: PyTorch's own float64 rounding here depends on
    # the CPU, e.g. a second derivative of 0 on one machine is 1.8e-15 on another, AVX-512 Xeon)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13, equal_nan=True)


# -- atan2 at the origin (62645258; SILENT: second derivatives 0 where PyTorch's are NaN) ---------
# PyTorch's atan2_backward masks 1 / (a^2 + b^2) where it is infinite, and the reciprocal's own
# derivative there, 0 * inf, is NaN; tapegrad's create_graph formula took the reciprocal of a
# substituted 1, so its second derivatives were 0 (also where a^2 + b^2 underflows).

@pytest.mark.parametrize("values", [[0.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 2.0],
                                    [1e-170, 0.5, -1e-170, 2.0], [0.0, -0.0, 0.0, 3.0]])
def test_atan2_second_derivative_at_origin_matches_torch(torch, values):
    def fn(lib, x):
        return lib.atan2(x[0], x[1])
    _assert_same(_first_and_second(tg, fn, values), _first_and_second(torch, fn, values))


def test_atan2_of_a_tensor_with_itself_second_derivative_matches_torch(torch):
    # the fuzzer's program: atan2(v, v) of a masked_select with zeros among its elements
    def fn(lib, x):
        return lib.atan2(x, x)
    values = [0.0, 1.5, -0.0, -2.0]
    _assert_same(_first_and_second(tg, fn, values), _first_and_second(torch, fn, values))


# -- vector norms at zeros (sibling of 62645258; SILENT) ---------------------------------------
# PyTorch's norm_backward masks the quotient grad / norm^(p-1) (p = 2: x / norm) where the norm is
# 0, and for p < 1 the power |x|^(p-1) where x is 0: second derivatives are NaN at those points.
# tapegrad divided by a substituted 1 (linalg.vector_norm's Functions and the core's norm record):
# 0 there; and for p = 2 the gradient grad * (x / norm) had other signs of zero.

_NORM_VALUES = [[0.0, 0.0, 1.0, 2.0], [0.0, 1.0, 0.0, 0.0], [0.5, -1.0, 3.0, 0.0],
                [0.0, 0.0, 0.0, 0.0], [1.0, -2.0, 3.0, 0.5]]


@pytest.mark.parametrize("p", [0.5, 1.5, 2, 2.5, 3, -1, -2.5])
@pytest.mark.parametrize("values", _NORM_VALUES)
@pytest.mark.parametrize("api", ["linalg.vector_norm", "Tensor.norm", "torch.norm"])
def test_norm_second_derivative_at_zeros_matches_torch(torch, p, values, api):
    def fn(lib, x):
        if api == "linalg.vector_norm":
            return lib.linalg.vector_norm(x, p, dim=1)
        if api == "Tensor.norm":
            return x.norm(p, dim=1)
        return lib.norm(x, p, dim=1)
    got = _first_and_second(tg, fn, values)
    expected = _first_and_second(torch, fn, values)
    _assert_same(got, expected)
    if p == 2:      # the signs of zeros of the first derivative too
        assert np.array_equal(np.signbit(got[0]), np.signbit(expected[0]))


def test_norm_first_derivative_unchanged_without_create_graph(torch):
    # the plain backward keeps its subgradient 0 at the zero vector and at zero elements
    for p in (0.5, 1.5, 2, 3):
        grads = []
        for lib in (tg, torch):
            x = lib.tensor([[0.0, 0.0], [0.0, 2.0]], dtype=lib.float32, requires_grad=True)
            lib.linalg.vector_norm(x, p, dim=1).sum().backward()
            grads.append(x.grad.numpy())
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


# -- i1 / i1e of NaN (62646809; SILENT: NaN gradient where PyTorch's is 1/2) ---------------------
# PyTorch's i1_backward / i1e_backward take 1/2 where NOT |x| > eps, which a NaN x is not.

@pytest.mark.parametrize("name", ["i1", "i1e"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_i1_gradient_of_nan_matches_torch(torch, name, dtype):
    def grads(lib):
        x = lib.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.5],
                       dtype=getattr(lib, dtype), requires_grad=True)
        y = getattr(lib.special, name)(x)
        g, = lib.autograd.grad(y.sum(), [x], create_graph=True)
        g2, = lib.autograd.grad(g.sum(), [x])
        return g.detach().numpy(), g2.numpy()
    got, expected = grads(tg), grads(torch)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=rtol, equal_nan=True)


# -- softplus / elu gradients under tapegrad.compile (62647162: an ulp off) ---------------------
# A permuted (strided) adjoint sent the eager VJP to numpy's exp, while the replay runs the C
# kernel on its contiguous buffers: compiled and eager gradients differed by an ulp.  The eager
# VJP now runs that kernel on contiguous copies.

@pytest.mark.parametrize("name", ["softplus", "elu"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_activation_gradient_compiled_equals_eager_with_strided_adjoint(name, dtype):
    rng = np.random.default_rng(62647162)
    xs = rng.standard_normal((3, 2, 4)).astype(dtype)
    W = tg.tensor(rng.standard_normal((4, 3, 2)).astype(dtype))

    def loss(x):
        return (getattr(tg.nn.functional, name)(x).permute(2, 0, 1) * W).sum()
    grads = []
    for fn in (loss, tg.compile(loss)):
        per_call = []
        for call in range(3):
            x = tg.tensor(xs * (call + 1), requires_grad=True)
            fn(x).backward()
            per_call.append(x.grad.numpy().copy())
        grads.append(per_call)
    for eager, compiled in zip(*grads):
        np.testing.assert_array_equal(compiled, eager)


@pytest.mark.parametrize("name", ["softplus", "elu"])
def test_activation_gradient_with_strided_adjoint_matches_torch(torch, name):
    rng = np.random.default_rng(7)
    xs = rng.standard_normal((3, 2, 4)).astype("float32")
    W = rng.standard_normal((4, 3, 2)).astype("float32")
    grads = []
    for lib in (tg, torch):
        x = lib.tensor(xs, requires_grad=True)
        (getattr(lib.nn.functional, name)(x).permute(2, 0, 1) * lib.tensor(W)).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6, atol=1e-7)
