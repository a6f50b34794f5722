"""Regressions found by the sixth argument-form sweep (linalg, fft and their neighbours)
against PyTorch."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _both(make):
    """Run `make(lib)` with PyTorch and with tapegrad; return the two results."""
    return make(torch), make(tg)


def _np(t):
    return t.detach().numpy() if hasattr(t, "numpy") else np.asarray(t)


def _error_type(make, lib):
    try:
        make(lib)
    except Exception as e:              # noqa: BLE001 - the type is what is compared
        return RuntimeError if isinstance(e, RuntimeError) else type(e)
    return None


def _data(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape)


# --- linalg.lstsq: the fields each driver fills -------------------------------------------

@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 5, 3)])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_lstsq_fields_follow_the_driver(driver, shape, dtype):
    a = _data(*shape)
    b = _data(*shape[:-1], 2, seed=1)
    if dtype == "complex128":
        a = a + 1j * _data(*shape, seed=2)

    def run(lib):
        return lib.linalg.lstsq(lib.tensor(a), lib.tensor(b, dtype=getattr(lib, dtype)),
                                driver=driver)
    expected, got = _both(run)
    for e, g in zip(expected, got):
        assert str(g.dtype) == str(e.dtype)
        assert tuple(g.shape) == tuple(e.shape)
        np.testing.assert_allclose(_np(g), _np(e), rtol=1e-7, atol=1e-9)


def test_lstsq_residuals_are_differentiable():
    a, b = _data(5, 3), _data(5, 2, seed=1)

    def run(lib):
        A = lib.tensor(a, requires_grad=True)
        B = lib.tensor(b, requires_grad=True)
        r = lib.linalg.lstsq(A, B, driver="gelsd").residuals
        return lib.autograd.grad((r * lib.tensor([1.0, 2.0], dtype=lib.float64)).sum(), (A, B))
    expected, got = _both(run)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(_np(g), _np(e), rtol=1e-7, atol=1e-10)


def test_lstsq_refuses_bad_driver_and_rank_deficient_gels():
    def bad_driver(lib):
        lib.linalg.lstsq(lib.ones(3, 2), lib.ones(3, 1), driver="foo")

    def rank_deficient(lib):
        lib.linalg.lstsq(lib.tensor([[1., 2], [2, 4], [3, 6]]), lib.ones(3, 1), driver="gels")

    def zero_matrix(lib):       # LAPACK's quick return: a zero solution, no error
        return lib.linalg.lstsq(lib.zeros(3, 3), lib.ones(3, 1), driver="gels").solution

    assert _error_type(bad_driver, tg) is _error_type(bad_driver, torch) is RuntimeError
    with pytest.raises(tg.linalg.LinAlgError, match="does not have full rank"):
        rank_deficient(tg)
    assert _error_type(rank_deficient, torch) is RuntimeError
    expected, got = _both(zero_matrix)
    np.testing.assert_array_equal(_np(got), _np(expected))


# --- pinv / matrix_rank tolerances ---------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    {"atol": "tensor"}, {"rtol": "tensor"}, {"rcond": 0.3}, {"tol": 1.0}, {"atol": 0.0},
    {"atol": "zero_tensor"}, {"positional": 0.3}])
@pytest.mark.parametrize("fn", ["pinv", "matrix_rank"])
def test_pinv_matrix_rank_tolerance_forms(kwargs, fn):
    a = _data(2, 4, 3)
    a[1, :, 2] = a[1, :, 0] * 1e-9 + a[1, :, 1]     # nearly rank 2

    def run(lib):
        kw = dict(kwargs)
        if fn == "pinv" and "tol" in kw:
            kw = {"rcond": kw["tol"] / 10}
        if fn == "matrix_rank" and "rcond" in kw:
            kw = {"tol": kw["rcond"]}
        for key, value in list(kw.items()):
            if value == "tensor":
                kw[key] = lib.tensor([0.5, 1e-3], dtype=lib.float64)
            elif value == "zero_tensor":
                kw[key] = lib.tensor([0.0, 0.0], dtype=lib.float64)
        args = (kw.pop("positional"),) if "positional" in kw else ()
        return getattr(lib.linalg, fn)(lib.tensor(a), *args, **kw)
    expected, got = _both(run)
    assert str(got.dtype) == str(expected.dtype)
    np.testing.assert_allclose(_np(got), _np(expected), rtol=1e-7, atol=1e-9)


def test_pinv_rcond_with_atol_is_a_type_error():
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        tg.linalg.pinv(tg.ones(3, 3), 0.5, atol=1.0)
    with pytest.raises(TypeError):
        torch.linalg.pinv(torch.ones(3, 3), 0.5, atol=1.0)


# --- LU of complex matrices pivots as LAPACK's izamax (|re| + |im|) ------------------------

def _complex_data(*shape, seed=0):
    return _data(*shape, seed=seed) + 1j * _data(*shape, seed=seed + 100)


@pytest.mark.parametrize("shape", [(3, 3), (3, 4), (4, 2), (2, 5, 5)])
def test_complex_lu_factors_match_torch(shape):
    a = _complex_data(*shape, seed=3)
    expected, got = _both(lambda lib: lib.linalg.lu(lib.tensor(a)))
    for e, g in zip(expected, got):
        np.testing.assert_allclose(_np(g), _np(e), rtol=1e-8, atol=1e-10)
    expected, got = _both(lambda lib: lib.linalg.lu_factor(lib.tensor(a)))
    np.testing.assert_array_equal(_np(got.pivots), _np(expected.pivots))


def test_complex_lu_factor_gradient_matches_torch():
    # A column where |re| + |im| and |z| pick different pivot rows.
    a = np.array([[0.1 + 1.0j, 2.0, 0.5], [0.9 + 0.9j, 1.0, -1.0], [0.2, 0.3j, 1.0]])

    def run(lib):
        A = lib.tensor(a, requires_grad=True)
        (g,) = lib.autograd.grad(lib.linalg.lu_factor(A).LU.abs().sum(), A)
        return g
    expected, got = _both(run)
    np.testing.assert_allclose(_np(got), _np(expected), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("shape", [(3, 3), (3, 5), (5, 3), (2, 4, 3), (2, 3, 4)])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_lu_gradients_of_square_wide_and_tall_matrices(shape, dtype):
    # complex gradients were conjugated (transpose for conjugate transpose) and non-square
    # matrices were refused
    a = _complex_data(*shape, seed=4) if dtype == "complex128" else _data(*shape, seed=4)
    w = _data(*shape, seed=5)

    def run(lib):
        A = lib.tensor(a, requires_grad=True)
        P, L, U = lib.linalg.lu(A)
        wl = lib.tensor(w[..., :L.shape[-1]])
        wu = lib.tensor(w[..., :U.shape[-2], :])
        loss = (L.abs() * wl).sum() + (U.abs() * wu).sum() + lib.linalg.lu_factor(A).LU.real.sum()
        (g,) = lib.autograd.grad(loss, A)
        return g
    expected, got = _both(run)
    np.testing.assert_allclose(_np(got), _np(expected), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3)])
def test_lu_gradient_of_non_square_matrix_matches_finite_differences(shape):
    a = tg.tensor(_data(*shape, seed=6), requires_grad=True)
    assert tg.autograd.gradcheck(lambda x: tg.linalg.lu(x)[1:], (a,))


# --- complex siblings of the transpose-for-conjugate-transpose mistake ---------------------

def _hermitian_factor(lib, upper):
    a = _complex_data(3, 3, seed=7)
    A = lib.tensor(a)
    S = A @ A.mH + 3 * lib.eye(3, dtype=lib.complex128)
    return lib.linalg.cholesky(S, upper=upper)


@pytest.mark.parametrize("upper", [False, True])
def test_complex_cholesky_solve_and_inverse_match_torch(upper):
    b = _complex_data(3, 2, seed=8)

    def run(lib):
        factor = _hermitian_factor(lib, upper).requires_grad_(True)
        B = lib.tensor(b, requires_grad=True)
        X = lib.cholesky_solve(B, factor, upper=upper)
        inverse = lib.cholesky_inverse(factor, upper=upper)
        grads = lib.autograd.grad(X.abs().sum() + inverse.real.sum(), (B, factor))
        return (X, inverse) + grads
    expected, got = _both(run)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(_np(g), _np(e), rtol=1e-7, atol=1e-9)


def test_legacy_svd_v_of_a_complex_matrix_is_the_conjugate_transpose_of_vh():
    a = _complex_data(4, 3, seed=9)

    def run(lib):
        A = lib.tensor(a, requires_grad=True)
        U, S, V = lib.svd(A)
        rebuilt = U @ lib.diag(S).to(U.dtype) @ V.mH
        (g,) = lib.autograd.grad(rebuilt.abs().sum(), A)
        return rebuilt, g
    expected, got = _both(run)
    np.testing.assert_allclose(_np(got[0]), a, rtol=1e-9, atol=1e-12)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(_np(g), _np(e), rtol=1e-7, atol=1e-9)


def test_complex_geqrf_and_householder_product_match_torch():
    a = _complex_data(4, 3, seed=10)

    def run(lib):
        h, tau = lib.geqrf(lib.tensor(a))
        return h, tau, lib.linalg.householder_product(h, tau)
    expected, got = _both(run)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(_np(g), _np(e), rtol=1e-7, atol=1e-9)


# --- singular matrices: cond is inf, det/slogdet gradients are PyTorch's, no LinAlgError ----

_SINGULAR = [[1., 2.], [2., 4.]]


@pytest.mark.parametrize("p", ["fro", "nuc", 1, -1, float("inf"), float("-inf"), 2, -2, None])
def test_cond_of_singular_and_batched_matrices(p):
    def run(lib):
        batch = lib.stack([lib.tensor(_SINGULAR, dtype=lib.float64),
                           lib.tensor([[2., 1.], [0., 3.]], dtype=lib.float64)])
        return lib.linalg.cond(batch, p), lib.linalg.cond(lib.zeros(2, 2), p)
    expected, got = _both(run)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(_np(g), _np(e), rtol=1e-6)


def test_det_and_slogdet_gradients_at_a_singular_matrix():
    def run(lib):
        A = lib.tensor(_SINGULAR, dtype=lib.float64, requires_grad=True)
        out = []
        for f in (lambda x: lib.linalg.det(x).pow(2), lambda x: lib.linalg.slogdet(x)[1],
                  lambda x: lib.logdet(x),
                  lambda x: lib.linalg.det(lib.stack([x, x + lib.eye(2)])).sum()):
            out.append(lib.autograd.grad(f(A), A)[0])
        return out
    expected, got = _both(run)
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(_np(g), _np(e))


@pytest.mark.parametrize("ord", [-1, -2, -0.5, float("inf")])
@pytest.mark.parametrize("shape, dim", [((0,), None), ((2, 0), 1), ((2, 0), 0)])
def test_vector_norm_of_empty_input_with_an_order_without_identity(ord, shape, dim):
    def run(lib):
        return lib.linalg.vector_norm(lib.zeros(shape), ord=ord, dim=dim)
    assert _error_type(run, tg) is _error_type(run, torch)
    if _error_type(run, torch) is None:
        assert tuple(run(tg).shape) == tuple(run(torch).shape)


def test_vecdot_refuses_integer_tensors():
    def run(lib):
        return lib.linalg.vecdot(lib.arange(3), lib.arange(3))
    assert _error_type(run, tg) is _error_type(run, torch) is RuntimeError


# --- fft: invalid sizes and dtypes are refused as PyTorch refuses them ----------------------

@pytest.mark.parametrize("fn", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
@pytest.mark.parametrize("case", ["n=-1", "n=0", "empty", "half"])
def test_one_dim_fft_refuses_invalid_sizes_and_half(fn, case):
    def run(lib):
        x = lib.arange(6.0)
        if fn in ("irfft", "hfft", "ifft", "fft") and case != "half":
            x = x.to(lib.complex64)
        if case == "n=-1":
            return getattr(lib.fft, fn)(x, n=-1)
        if case == "n=0":
            return getattr(lib.fft, fn)(x, n=0)
        if case == "empty":
            return getattr(lib.fft, fn)(x[:0])
        return getattr(lib.fft, fn)(x.half())
    assert _error_type(run, torch) is RuntimeError
    assert _error_type(run, tg) is RuntimeError


@pytest.mark.parametrize("fn", ["fftn", "rfftn", "irfftn", "fft2"])
def test_n_dim_fft_of_an_empty_dim_is_refused_and_s_minus_one_kept(fn):
    def empty(lib):
        return getattr(lib.fft, fn)(lib.zeros(0, 3))
    assert _error_type(empty, tg) is _error_type(empty, torch) is RuntimeError
    expected, got = _both(lambda lib: getattr(lib.fft, fn)(lib.ones(2, 3), s=(-1, 3)))
    np.testing.assert_allclose(_np(got), _np(expected))


# --- trapezoid / diff argument checks ----------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda lib: lib.trapezoid(lib.tensor([True, False, True])),
    lambda lib: lib.trapz(lib.tensor([True, False])),
    lambda lib: lib.cumulative_trapezoid(lib.tensor([True, False])),
    lambda lib: lib.trapezoid(lib.tensor([1., 2.]), lib.tensor([True, False])),
    lambda lib: lib.diff(lib.arange(3), prepend=lib.tensor(0)),
    lambda lib: lib.diff(lib.arange(12.).reshape(3, 4), dim=0, append=lib.zeros(4)),
])
def test_trapezoid_refuses_bool_and_diff_refuses_mismatched_rank(call):
    assert _error_type(call, torch) is RuntimeError
    assert _error_type(call, tg) is RuntimeError
    message = str(pytest.raises(RuntimeError, call, tg).value)
    assert message == str(pytest.raises(RuntimeError, call, torch).value)


# --- orgqr / ormqr (new public names) ------------------------------------------------------

@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 4, 2)])
def test_ormqr_matches_torch_with_gradients(left, transpose, dtype, shape):
    make = _complex_data if dtype == "complex128" else _data
    a = make(*shape, seed=11)
    m = shape[-2]
    c = make(*shape[:-2], *((m, 2) if left else (2, m)), seed=12)

    def run(lib):
        h, tau = lib.geqrf(lib.tensor(a))
        h = h.detach().requires_grad_(True)
        tau = tau.detach().requires_grad_(True)
        C = lib.tensor(c, requires_grad=True)
        out = lib.ormqr(h, tau, C, left=left, transpose=transpose)
        grads = lib.autograd.grad(out.abs().sum(), (h, tau, C))
        return (out, lib.orgqr(h, tau)) + grads
    expected, got = _both(run)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(_np(g), _np(e), rtol=1e-7, atol=1e-9)


def test_ormqr_refuses_mismatched_shapes():
    def left(lib):
        h, tau = lib.geqrf(lib.ones(4, 3, dtype=lib.float64))
        return lib.ormqr(h, tau, lib.ones(3, 2, dtype=lib.float64))

    def right(lib):
        h, tau = lib.geqrf(lib.ones(4, 3, dtype=lib.float64))
        return h.ormqr(tau, lib.ones(2, 3, dtype=lib.float64), left=False)
    for call in (left, right):
        assert _error_type(call, torch) is _error_type(call, tg) is RuntimeError
        assert str(pytest.raises(RuntimeError, call, tg).value) == \
            str(pytest.raises(RuntimeError, call, torch).value)


# --- complex inputs to the norm family -----------------------------------------------------

def test_torch_norm_nuc_of_a_complex_matrix_sums_its_singular_values():
    z = _complex_data(2, 3, 3, seed=13)

    def run(lib):
        Z = lib.tensor(z, requires_grad=True)
        value = lib.norm(Z, p="nuc", dim=(1, 2))
        (g,) = lib.autograd.grad(value.sum(), Z)
        return value, lib.norm(Z[0].detach(), p="nuc"), g
    expected, got = _both(run)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(_np(g), _np(e), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("p", [1, 2, 3.5, float("inf")])
def test_renorm_of_a_complex_tensor(p):
    z = _complex_data(2, 3, 3, seed=14)
    expected, got = _both(lambda lib: lib.renorm(lib.tensor(z), p=p, dim=0, maxnorm=1.0))
    np.testing.assert_allclose(_np(got), _np(expected), rtol=1e-6)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_of_complex_gradients_is_real_and_counts_imaginary_parts(norm_type):
    z, w = _complex_data(3, 3, seed=15), _complex_data(3, 3, seed=16)

    def run(lib):
        p = lib.nn.Parameter(lib.tensor(z))
        p.grad = lib.tensor(w)
        total = lib.nn.utils.clip_grad_norm_([p], 1.0, norm_type=norm_type)
        return total, p.grad
    expected, got = _both(run)
    assert str(got[0].dtype) == str(expected[0].dtype) == "torch.float64"
    for e, g in zip(expected, got):
        np.testing.assert_allclose(_np(g), _np(e), rtol=1e-6)


# --- norms' dtype= argument ----------------------------------------------------------------

@pytest.mark.parametrize("fn", ["linalg.vector_norm", "linalg.matrix_norm", "linalg.norm", "norm"])
@pytest.mark.parametrize("source", ["float64", "float32", "complex128"])
@pytest.mark.parametrize("target", ["float32", "float64", "complex64", "complex128", "int64"])
def test_norm_dtype_argument_follows_torch(fn, source, target):
    a = _data(3, 3, seed=17)

    def run(lib):
        f = lib
        for part in fn.split("."):
            f = getattr(f, part)
        return f(lib.tensor(a).to(getattr(lib, source)), dtype=getattr(lib, target))
    expected_error = _error_type(run, torch)
    assert _error_type(run, tg) is expected_error
    if expected_error is None:
        expected, got = _both(run)
        assert str(got.dtype) == str(expected.dtype)
        np.testing.assert_allclose(_np(got), _np(expected), rtol=1e-5)


def test_multi_dot_and_vander_refusals():
    def mixed(lib):
        return lib.linalg.multi_dot([lib.ones(2, 2, dtype=lib.float64), lib.ones(2, 2)])

    def boolean(lib):
        return lib.linalg.vander(lib.tensor([True, False]))
    for call in (mixed, boolean):
        assert str(pytest.raises(RuntimeError, call, tg).value) == \
            str(pytest.raises(RuntimeError, call, torch).value)


# --- fft: second derivatives (create_graph=True) -------------------------------------------

_FFT_INPUT_KIND = {"fft": "c", "ifft": "c", "rfft": "r", "irfft": "c", "hfft": "c",
                   "ihfft": "r", "fft2": "c", "ifft2": "c", "rfft2": "r", "irfft2": "c",
                   "fftn": "c", "ifftn": "c", "rfftn": "r", "irfftn": "c", "hfft2": "c",
                   "ihfft2": "r", "hfftn": "c", "ihfftn": "r"}


@pytest.mark.parametrize("fn", sorted(_FFT_INPUT_KIND))
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("leaf", ["real", "complex"])
def test_fft_double_backward_matches_torch(fn, norm, leaf):
    # The first-order VJP ran on arrays and refused create_graph=True.
    one_dim = not fn.endswith(("2", "n"))
    shape = (6,) if one_dim else (3, 4)
    x = _data(*shape, seed=18)
    if leaf == "complex":
        x = x + 1j * _data(*shape, seed=19)
    if _FFT_INPUT_KIND[fn] == "r" and leaf == "complex":
        pytest.skip("a real-to-complex transform refuses complex input")
    size = {"n": 5} if one_dim else {"s": (3, 5)}

    def run(lib):
        X = lib.tensor(x, requires_grad=True)
        y = getattr(lib.fft, fn)(X, norm=norm, **size)
        loss = (y.abs() ** 3).sum() if y.is_complex() else (y ** 3).sum()
        (g,) = lib.autograd.grad(loss, X, create_graph=True)
        (gg,) = lib.autograd.grad((g.abs() ** 2).sum(), X)
        return g, gg
    expected, got = _both(run)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(_np(g), _np(e), rtol=1e-7, atol=1e-9)


def test_fft_second_derivative_matches_finite_differences():
    x = tg.tensor(_data(8, seed=20), requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda t: tg.fft.rfft(t).abs().pow(2).sum(), (x,))


# --- integer and bool inputs ---------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:torch.cholesky is deprecated")
@pytest.mark.parametrize("dtype", ["int64", "bool"])
@pytest.mark.parametrize("call", [
    lambda lib, x: lib.linalg.householder_product(x, x[0]),
    lambda lib, x: lib.cholesky(x),
    lambda lib, x: lib.cholesky_solve(x, x),
    lambda lib, x: lib.cholesky_inverse(x),
    lambda lib, x: lib.geqrf(x),
    lambda lib, x: lib.cov(x),
])
def test_integer_and_bool_inputs_are_refused_as_torch_refuses_them(dtype, call):
    # householder_product of an int64 matrix returned an int64 "product"
    def run(lib):
        return call(lib, (lib.eye(3) + 1).to(getattr(lib, dtype)))
    if dtype == "int64" and _error_type(run, torch) is None:      # cov of integers runs
        expected, got = _both(run)
        np.testing.assert_allclose(_np(got), _np(expected))
        return
    expected = _error_type(run, torch)
    assert expected is not None and _error_type(run, tg) is expected
    with pytest.raises(expected) as got_error:
        run(tg)
    with pytest.raises(expected) as expected_error:
        run(torch)
    assert str(got_error.value) == str(expected_error.value)


# --- PyTorch's keyword names for the linalg functions ---------------------------------------

@pytest.mark.filterwarnings("ignore:torch.triangular_solve is deprecated")
@pytest.mark.parametrize("call", [
    lambda lib, A, S, B: lib.linalg.cholesky(input=S),
    lambda lib, A, S, B: lib.linalg.cholesky_ex(input=S).L,
    lambda lib, A, S, B: lib.linalg.eigvalsh(input=S),
    lambda lib, A, S, B: lib.linalg.eigh(input=S).eigenvalues,
    lambda lib, A, S, B: lib.linalg.eigvals(input=S).real,
    lambda lib, A, S, B: lib.linalg.eig(input=S).eigenvalues.real,
    lambda lib, A, S, B: lib.linalg.norm(input=A),
    lambda lib, A, S, B: lib.linalg.matrix_norm(input=A),
    lambda lib, A, S, B: lib.linalg.pinv(input=A),
    lambda lib, A, S, B: lib.linalg.matrix_power(input=A, n=2),
    lambda lib, A, S, B: lib.linalg.matrix_exp(input=A),
    lambda lib, A, S, B: lib.linalg.cond(input=A),
    lambda lib, A, S, B: lib.linalg.matrix_rank(input=A),
    lambda lib, A, S, B: lib.linalg.lstsq(input=A, b=B).solution,
    lambda lib, A, S, B: lib.linalg.solve_triangular(input=S, B=B, upper=True),
    lambda lib, A, S, B: lib.linalg.householder_product(input=A, tau=A[0, :2]),
    lambda lib, A, S, B: lib.linalg.tensorinv(input=A.reshape(3, 3), ind=1),
    lambda lib, A, S, B: lib.linalg.tensorsolve(input=S, other=B[:, 0]),
    lambda lib, A, S, B: lib.triangular_solve(input=B, A=S).solution,
])
def test_linalg_functions_take_pytorchs_keyword_names(call):
    a, b = _data(3, 3, seed=21), _data(3, 2, seed=22)

    def run(lib):
        A = lib.tensor(a)
        return call(lib, A, A @ A.mT + 3 * lib.eye(3, dtype=lib.float64), lib.tensor(b))
    expected, got = _both(run)
    np.testing.assert_allclose(_np(got), _np(expected), rtol=1e-7, atol=1e-9)


@pytest.mark.filterwarnings("ignore:Using torch.cross without specifying the dim")
@pytest.mark.parametrize("call", [
    lambda lib: lib.linalg.svdvals(lib.eye(3, dtype=lib.int64)),
    lambda lib: lib.linalg.cond(lib.eye(3, dtype=lib.int64)),
    lambda lib: lib.linalg.cholesky_ex(lib.eye(3, dtype=lib.int64)),
    lambda lib: lib.linalg.matrix_rank(lib.eye(3, dtype=lib.int64)),
    lambda lib: lib.linalg.lstsq(lib.eye(3, dtype=lib.int64), lib.eye(3, dtype=lib.int64)),
    lambda lib: lib.linalg.eigvals(lib.eye(3, dtype=lib.bool)),
    lambda lib: lib.linalg.cross(lib.ones(3, dtype=lib.bool), lib.ones(3, dtype=lib.bool)),
    lambda lib: lib.cross(lib.ones(3, 3, dtype=lib.bool), lib.ones(3, 3, dtype=lib.bool)),
    lambda lib: lib.cdist(lib.ones(2, 2), lib.ones(2, 2, dtype=lib.int64)),
    lambda lib: lib.linalg.matrix_norm(lib.ones(3, 3), dim=1),
])
def test_linalg_refusals_in_pytorchs_words(call):
    expected = _error_type(call, torch)
    assert expected is not None and _error_type(call, tg) is expected
    with pytest.raises(Exception) as got_error:
        call(tg)
    with pytest.raises(Exception) as expected_error:
        call(torch)
    assert type(got_error.value).__name__ == type(expected_error.value).__name__
    assert str(got_error.value) == str(expected_error.value)


def test_linalg_error_is_named_as_pytorchs_and_pickles():
    import pickle

    def singular(lib):
        return lib.linalg.inv(lib.zeros(2, 2))
    with pytest.raises(tg.linalg.LinAlgError) as got:
        singular(tg)
    with pytest.raises(torch.linalg.LinAlgError) as expected:
        singular(torch)
    assert type(got.value).__name__ == type(expected.value).__name__ == "_LinAlgError"
    again = pickle.loads(pickle.dumps(got.value))
    assert isinstance(again, tg.linalg.LinAlgError) and str(again) == str(got.value)


@pytest.mark.parametrize("sublist", [[-1, 0], [52, 0], [1.5, 0]])
def test_einsum_sublist_subscript_out_of_range(sublist):
    def run(lib):
        return lib.einsum(lib.ones(2, 2), sublist, [0])
    expected = _error_type(run, torch)
    assert expected is not None and _error_type(run, tg) is expected
    assert str(pytest.raises(expected, run, tg).value) == \
        str(pytest.raises(expected, run, torch).value)


@pytest.mark.parametrize("driver", [None, "gels", "gelsd"])
@pytest.mark.parametrize("a_shape, b_shape, zero_second", [
    ((0, 3), (0, 2), False), ((5, 0), (5, 2), False), ((2, 5, 3), (2, 5, 2), True),
    ((0, 5, 3), (0, 5, 2), False), ((2, 5, 3), (1, 5, 2), False)])
def test_lstsq_quick_returns_and_rank_deficient_batches(driver, a_shape, b_shape, zero_second):
    # gels failed on empty inputs and dropped the residuals of a batch with a zero matrix
    a, b = _data(*a_shape, seed=23), _data(*b_shape, seed=24)
    if zero_second:
        a[1] = 0

    def run(lib):
        return lib.linalg.lstsq(lib.tensor(a), lib.tensor(b), driver=driver)
    expected, got = _both(run)
    for e, g in zip(expected, got):
        assert tuple(g.shape) == tuple(e.shape)
        np.testing.assert_allclose(_np(g), _np(e), rtol=1e-7, atol=1e-9)
