"""Regressions of the session-26 fuzz run of fuzz9 (programs 62657421-, 60657076-; surface
60773193-).

Each test compares with PyTorch (the `torch` fixture skips cleanly without it).
"""
import numpy as np
import pytest

import tapegrad as tg


def _assert_same(got, expected, rtol=1e-12):
    for a, b in zip(got, expected):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol, atol=0, equal_nan=True)


# -- softplus's second derivative under a huge upstream gradient (62657559; SILENT: NaN or -inf
# where PyTorch's is +-inf or finite) ------------------------------------------------------------
# PyTorch differentiates softplus's gradient g e^z / (e^z + 1) as one product
# g sigmoid(z) (1 - sigmoid(z)) beta (softplus_double_backward), masked where z >= threshold;
# differentiating the quotient gave inf - inf for g = inf, and g e^z overflowed for g = 1e308.

def _softplus_derivatives(lib, dtype, beta, threshold):
    x = lib.tensor([1.5, -0.3, 0.0, 2.5, -4.0, 20.0, 30.0, float("nan")], dtype=dtype,
                   requires_grad=True)
    big = 1e308 if dtype == lib.float64 else 3e38
    w = lib.tensor([float("inf"), 2.0, -float("inf"), big, -big, float("inf"), 3.0, 1.0],
                   dtype=dtype, requires_grad=True)
    y = lib.nn.functional.softplus(x, beta=beta, threshold=threshold)
    g, = lib.autograd.grad((y * w).sum(), [x], create_graph=True)
    h = lib.tensor([1.0, -0.5, 2.0, 0.25, 1.0, 1.0, 1.0, 1.0], dtype=dtype)
    hx, hw = lib.autograd.grad((g * h).sum(), [x, w])
    return [t.detach().numpy() for t in (y, g, hx, hw)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (2.0, 5.0), (0.5, 10.0)])
def test_softplus_second_derivative_with_huge_gradient_matches_torch(torch, dtype, beta,
                                                                      threshold):
    rtol = 1e-5 if dtype == "float32" else 1e-12
    _assert_same(_softplus_derivatives(tg, getattr(tg, dtype), beta, threshold),
                 _softplus_derivatives(torch, getattr(torch, dtype), beta, threshold), rtol)


# -- trigamma at the poles 0, -1, -2, ... (62645607; SILENT: inf, so a digamma gradient times 0
# was NaN where PyTorch's is 0) -------------------------------------------------------------------
# PyTorch's reflection pi^2 / sin(pi x)^2 takes sin of the rounded product pi x, not 0 at a
# negative integer: trigamma(-2) is 1.6e32 in float64, 3.2e14 in float32; inf only at +-0.

_POLES = [-0.0, 0.0, -1.0, -2.0, -3.0, -10.0, -1e6, -2.0 ** 52, 0.3, -2.5, 7.0]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_trigamma_at_poles_matches_torch(torch, dtype):
    got = tg.special.polygamma(1, tg.tensor(_POLES, dtype=getattr(tg, dtype))).numpy()
    expected = torch.special.polygamma(1, torch.tensor(_POLES, dtype=getattr(torch, dtype)))
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-3 if dtype == "float16" else 1e-6)


def _digamma_gradient_times_zero(lib, dtype):
    x = lib.tensor([-1.0, -2.0, -5.0, 1.5], dtype=dtype, requires_grad=True)
    y = x * 1.0
    y.digamma_()
    (y * lib.tensor([0.0, 0.0, 0.0, 2.0], dtype=dtype)).sum().backward()
    return x.grad.numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_digamma_gradient_at_poles_times_zero_matches_torch(torch, dtype):
    np.testing.assert_allclose(_digamma_gradient_times_zero(tg, getattr(tg, dtype)),
                               _digamma_gradient_times_zero(torch, getattr(torch, dtype)),
                               rtol=1e-6)


# -- vector_norm of a 0-d or complex input at zero (62660108; SILENT: NaN gradients where
# PyTorch's are 0) -----------------------------------------------------------------------------
# A 0-d input and any complex input took the composite (|x|^p).sum()^(1/p), whose derivative at
# 0 is inf * 0; PyTorch's LinalgVectorNormBackward0 masks the zeros of x and of the norm.

@pytest.mark.parametrize("shape", [(), (1,), (3,)])
@pytest.mark.parametrize("complex_input", [False, True])
@pytest.mark.parametrize("ord", [0.5, 1.5, 3.0, -1.0, 2.5])
@pytest.mark.parametrize("values", ["zeros", "mixed"])
def test_vector_norm_gradient_at_zero_matches_torch(torch, shape, complex_input, ord, values):
    def derivatives(lib):
        n = int(np.prod(shape))
        base = lib.arange(n, dtype=lib.float64).reshape(shape) - 0.5
        base = base * 0.0 if values == "zeros" else base
        if complex_input:
            base = lib.complex(base, base * 0.5)
        x = base.clone().requires_grad_()
        y = lib.linalg.vector_norm(x, ord)
        g, = lib.autograd.grad(y * 1.5, [x], create_graph=True)
        h, = lib.autograd.grad((g.abs() if complex_input else g).sum(), [x])
        return [np.asarray(t.detach().numpy()) for t in (y, g, h)]
    for a, b in zip(derivatives(tg), derivatives(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


# -- i1 / i1e backward in float16 (60658522: PyTorch raises, tapegrad computed it) ----------------

@pytest.mark.parametrize("name", ["i1", "i1e", "i0e"])
def test_bessel_half_backward_raises_as_torch(torch, name):
    def run(lib):
        x = lib.tensor([0.5, 1.0], dtype=lib.float16, requires_grad=True)
        y = getattr(lib.special, name)(x)
        try:
            y.sum().backward()
        except NotImplementedError as e:
            return str(e)
        return x.grad.float().numpy()
    got, expected = run(tg), run(torch)
    if isinstance(expected, str):
        assert got == expected
    else:
        np.testing.assert_allclose(got, expected, rtol=3e-3)
