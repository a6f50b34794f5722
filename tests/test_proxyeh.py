"""Numerical linear algebra as course notebooks teach it with torch.linalg (singular and
ill-conditioned systems in float32, cross products, the gradients of a determinant), checked
against PyTorch itself."""
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")

SINGULAR_3X3 = [[1., 2., 3.], [4., 5., 6.], [7., 8., 9.]]


def _outcome(lib, fn):
    try:
        return fn(lib)
    except Exception as e:          # the exception's type and message are the outcome
        return type(e).__name__.lstrip("_"), str(e)


# -- float32 systems are solved in float32 ----------------------------------------------------

def test_inverse_of_float32_singular_matrix_is_huge_not_an_error():
    # PyTorch's float32 LU keeps a rounding-size pivot: entries of millions, no LinAlgError
    t = torch.linalg.inv(torch.tensor(SINGULAR_3X3))
    g = tapegrad.linalg.inv(tapegrad.tensor(SINGULAR_3X3))
    assert g.dtype == tapegrad.float32
    assert np.abs(g.numpy()).min() > 1e6
    np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-6)


def test_float64_matrix_singular_only_in_exact_arithmetic_inverts_as_pytorch():
    # PyTorch's (MKL's) LU of this float64 matrix keeps a pivot of -1.6e-16 where numpy's
    # OpenBLAS LU met a zero: entries of 3e15, not a LinAlgError; its transpose's LU does meet
    # a zero, and raises naming it
    a = np.array(SINGULAR_3X3)
    t = torch.linalg.inv(torch.from_numpy(a)).numpy()
    g = tapegrad.linalg.inv(tapegrad.from_numpy(a)).numpy()
    np.testing.assert_allclose(g, t, rtol=1e-3)
    x_t = torch.linalg.solve(torch.from_numpy(a), torch.ones(3, dtype=torch.float64))
    x_g = tapegrad.linalg.solve(tapegrad.from_numpy(a), tapegrad.ones(3, dtype=tapegrad.float64))
    assert np.isfinite(x_g.numpy()).all() and np.isfinite(x_t.numpy()).all()
    for fn in (lambda lib: lib.linalg.inv(lib.tensor(SINGULAR_3X3, dtype=lib.float64).T),
               lambda lib: lib.linalg.inv(lib.tensor(SINGULAR_3X3, dtype=lib.float64).mT
                                          .contiguous())):
        assert _outcome(tapegrad, fn) == _outcome(torch, fn)


def test_exactly_singular_float32_matrix_raises_as_pytorch():
    for fn in (lambda lib: lib.linalg.inv(lib.tensor([[1., 2.], [2., 4.]])),
               lambda lib: lib.inverse(lib.zeros(2, 3, 3)),
               lambda lib: lib.linalg.solve(lib.tensor([[1., 2.], [2., 4.]]),
                                            lib.tensor([1., 1.]))):
        assert _outcome(tapegrad, fn) == _outcome(torch, fn)


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_single_precision_inverse_and_solve_batched(dtype):
    rs = np.random.RandomState(0)
    a = rs.randn(4, 5, 5) + 5 * np.eye(5)
    b = rs.randn(4, 5, 2)
    if dtype == "complex64":
        a = a + 1j * rs.randn(4, 5, 5)
        b = b + 1j * rs.randn(4, 5, 2)
    a, b = a.astype(dtype), b.astype(dtype)
    for lib in (torch, tapegrad):
        assert lib.linalg.inv(lib.from_numpy(a)).dtype == getattr(lib, dtype)
    inv_t = torch.linalg.inv(torch.from_numpy(a)).numpy()
    inv_g = tapegrad.linalg.inv(tapegrad.from_numpy(a)).numpy()
    np.testing.assert_allclose(inv_g, inv_t, rtol=1e-5, atol=1e-6)
    x_t = torch.linalg.solve(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    x_g = tapegrad.linalg.solve(tapegrad.from_numpy(a), tapegrad.from_numpy(b)).numpy()
    np.testing.assert_allclose(x_g, x_t, rtol=1e-5, atol=1e-6)


def test_float32_small_inverse_bits(torch_bits):
    # the substitution rounds as MKL's trsm: a 2x2 float32 inverse is PyTorch's bit for bit
    rs = np.random.RandomState(1)
    a = rs.randn(8, 2, 2).astype(np.float32)
    torch_bits.assert_equal(tapegrad.linalg.inv(tapegrad.from_numpy(a)).numpy(),
                            torch.linalg.inv(torch.from_numpy(a)).numpy())


def test_float32_inverse_gradient_matches():
    a = np.array([[4., 1., 0.5], [1., 3., 0.2], [0.5, 0.2, 2.]], dtype=np.float32)
    grads = []
    for lib in (torch, tapegrad):
        A = lib.tensor(a, requires_grad=True)
        lib.linalg.inv(A).pow(2).sum().backward()
        grads.append(A.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5)


def test_inverse_gradient_finite_differences(gradcheck):
    a = np.array([[4., 1., 0.5], [1., 3., 0.2], [0.5, 0.2, 2.]])
    gradcheck(lambda A: (tapegrad.linalg.inv(A) ** 2).sum(), a)


# -- cross products and svdvals: PyTorch's errors -------------------------------------------

@pytest.mark.parametrize("shapes", [((3, 3), (3, 2)), ((4, 3), (2, 3)), ((2, 3, 4), (5, 3, 4)),
                                    ((3, 1), (3, 2)), ((1, 3), (4, 3))])
def test_cross_broadcast_error_names_the_inputs_dimension(shapes):
    def cross(lib, **kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = lib.cross(lib.ones(shapes[0]), lib.ones(shapes[1]), **kw)
        return tuple(r.shape)
    assert _outcome(tapegrad, cross) == _outcome(torch, cross)
    for dim in (0, -1):
        fn = lambda lib: cross(lib, dim=dim)        # noqa: E731
        assert _outcome(tapegrad, fn) == _outcome(torch, fn)
    fn = lambda lib: tuple(lib.linalg.cross(lib.ones(shapes[0]), lib.ones(shapes[1])).shape)  # noqa
    assert _outcome(tapegrad, fn) == _outcome(torch, fn)


def test_svdvals_errors_name_svd():
    for x in ([1., 2., 3.], [[1, 2], [3, 4]]):
        fn = lambda lib: lib.linalg.svdvals(lib.tensor(x))      # noqa: E731
        assert _outcome(tapegrad, fn) == _outcome(torch, fn)


# -- solve's backward: A^H by A's own LU ------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_solve_gradient_matches(dtype):
    rs = np.random.RandomState(2)
    a = rs.randn(2, 4, 4) + 3 * np.eye(4)
    b = rs.randn(2, 4, 3)
    if dtype.startswith("complex"):
        a, b = a + 1j * rs.randn(2, 4, 4), b + 1j * rs.randn(2, 4, 3)
    a, b = a.astype(dtype), b.astype(dtype)
    grads = []
    for lib in (torch, tapegrad):
        A, B = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        lib.linalg.solve(A, B).abs().pow(2).sum().backward()
        grads.append((A.grad.numpy(), B.grad.numpy()))
    tol = 1e-4 if dtype in ("float32", "complex64") else 1e-10
    for ours, theirs in zip(grads[1], grads[0]):
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


def test_solve_gradient_of_matrix_singular_only_in_exact_arithmetic_is_finite():
    # the forward solves by an LU with a rounding-size pivot; the backward had factorised A^H
    # anew, met a zero pivot and raised LinAlgError where PyTorch's gradient is finite
    for dtype in ("float32", "float64"):
        A = tapegrad.tensor(SINGULAR_3X3, dtype=getattr(tapegrad, dtype), requires_grad=True)
        tapegrad.linalg.solve(A, tapegrad.ones(3, dtype=A.dtype)).sum().backward()
        assert np.isfinite(A.grad.numpy()).all()
        At = torch.tensor(SINGULAR_3X3, dtype=getattr(torch, dtype), requires_grad=True)
        torch.linalg.solve(At, torch.ones(3, dtype=At.dtype)).sum().backward()
        assert np.isfinite(At.grad.numpy()).all()


def test_solve_gradient_finite_differences(gradcheck):
    a = np.array([[4., 1., 0.5], [1., 3., 0.2], [0.5, 0.2, 2.]])
    b = np.array([[1., 2.], [0.5, -1.], [2., 0.]])
    gradcheck(lambda A, B: tapegrad.linalg.solve(A, B) ** 2, a, b)
