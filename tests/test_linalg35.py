"""torch.linalg.ldl_factor / ldl_factor_ex / ldl_solve (Bunch-Kaufman, LAPACK's compact storage
and pivot encoding) and the 2-d/3-d pools' argument-error order, against torch itself."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _pair(array):
    return torch.from_numpy(array.copy()), tapegrad.from_numpy(array.copy())


def _matrix(rng, n, dtype, batch=()):
    a = rng.standard_normal(batch + (n, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(batch + (n, n))
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.complex64])
@pytest.mark.parametrize("hermitian", [False, True])
@pytest.mark.parametrize("n", [1, 2, 3, 6, 11])
def test_ldl_factor_ex_matches_lapack_storage_and_pivots(dtype, hermitian, n):
    rng = np.random.default_rng(100 * n + 7)
    # (only the lower triangle is read: a non-symmetric A is factored as its lower triangle's)
    a = _matrix(rng, n, dtype, (5,))
    ta, ga = _pair(a)
    want = torch.linalg.ldl_factor_ex(ta, hermitian=hermitian)
    got = tapegrad.linalg.ldl_factor_ex(ga, hermitian=hermitian)
    assert type(got).__name__ == "linalg_ldl_factor_ex"
    np.testing.assert_array_equal(got.pivots.numpy(), want.pivots.numpy())
    assert got.pivots.dtype == tapegrad.int32 and got.info.dtype == tapegrad.int32
    np.testing.assert_array_equal(got.info.numpy(), want.info.numpy())
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-11
    np.testing.assert_allclose(got.LD.numpy(), want.LD.numpy(), rtol=tol, atol=tol)
    assert got.LD.stride() == want.LD.stride() or n == 1


def test_ldl_factor_uses_2x2_blocks_and_interchanges():
    # a zero diagonal forces 2x2 pivots; a large off-diagonal entry forces an interchange
    a = np.array([[0.0, 1.0, 4.0, 0.5],
                  [1.0, 0.0, 2.0, 1.0],
                  [4.0, 2.0, 0.0, 3.0],
                  [0.5, 1.0, 3.0, 2.0]])
    ta, ga = _pair(a)
    want = torch.linalg.ldl_factor(ta)
    got = tapegrad.linalg.ldl_factor(ga)
    assert (want.pivots < 0).any()
    np.testing.assert_array_equal(got.pivots.numpy(), want.pivots.numpy())
    np.testing.assert_allclose(got.LD.numpy(), want.LD.numpy(), rtol=1e-12, atol=1e-12)
    assert type(got).__name__ == "linalg_ldl_factor"


def test_ldl_factor_ex_info_of_singular_input():
    a = np.zeros((2, 3, 3))
    a[1] = np.diag([2.0, 0.0, 1.0])
    ta, ga = _pair(a)
    want = torch.linalg.ldl_factor_ex(ta)
    got = tapegrad.linalg.ldl_factor_ex(ga)
    np.testing.assert_array_equal(got.info.numpy(), want.info.numpy())     # [1, 2]
    np.testing.assert_array_equal(got.pivots.numpy(), want.pivots.numpy())
    np.testing.assert_array_equal(got.LD.numpy(), want.LD.numpy())
    with pytest.raises(RuntimeError, match="Unknown error code: 1"):
        torch.linalg.ldl_factor(torch.zeros(3, 3))
    with pytest.raises(RuntimeError, match="Unknown error code: 1"):
        tapegrad.linalg.ldl_factor(tapegrad.zeros(3, 3))
    with pytest.raises(RuntimeError, match="Unknown error code: 1"):
        tapegrad.linalg.ldl_factor_ex(tapegrad.zeros(3, 3), check_errors=True)


def test_ldl_factor_empty():
    for shape in [(0, 0), (2, 0, 0)]:
        want = torch.linalg.ldl_factor(torch.zeros(shape))
        got = tapegrad.linalg.ldl_factor(tapegrad.zeros(shape))
        assert tuple(got.LD.shape) == tuple(want.LD.shape)
        assert tuple(got.pivots.shape) == tuple(want.pivots.shape)


@pytest.mark.parametrize("make, error, phrase", [
    (lambda m: m.zeros(3, 4), RuntimeError, "A must be batches of square matrices, but they are "
                                            "3 by 4 matrices"),
    (lambda m: m.zeros(3), RuntimeError, "must have at least 2 dimensions"),
    (lambda m: m.zeros(3, 3, dtype=m.int64), RuntimeError,
     "Expected a floating point or complex tensor as input. Got Long"),
    (lambda m: m.zeros(3, 3, dtype=m.bool), RuntimeError,
     "Expected a floating point or complex tensor as input. Got Bool"),
    (lambda m: m.zeros(3, 3, dtype=m.float16), NotImplementedError,
     "\"ldl_factor_kernel_cpu\" not implemented for 'Half'"),
])
def test_ldl_factor_errors(make, error, phrase):
    for module in (torch, tapegrad):
        for fn in (module.linalg.ldl_factor, module.linalg.ldl_factor_ex):
            with pytest.raises(error, match=phrase.replace("(", r"\(")):
                fn(make(module))
    for module in (torch, tapegrad):
        with pytest.raises(TypeError, match="must be Tensor, not list"):
            module.linalg.ldl_factor([[1.0, 2.0], [2.0, 1.0]])


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl_solve_matches_torch(dtype, hermitian):
    rng = np.random.default_rng(5)
    a = _matrix(rng, 7, dtype, (3,))
    b = _matrix(rng, 7, dtype, (3,))[..., :4]
    ta, ga = _pair(a)
    tLD, tpiv = torch.linalg.ldl_factor(ta, hermitian=hermitian)
    gLD, gpiv = tapegrad.linalg.ldl_factor(ga, hermitian=hermitian)
    want = torch.linalg.ldl_solve(tLD, tpiv, torch.from_numpy(b), hermitian=hermitian)
    got = tapegrad.linalg.ldl_solve(gLD, gpiv, tapegrad.from_numpy(b), hermitian=hermitian)
    tol = 1e-3 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol)
    assert got.stride() == want.stride() and got.dtype == gLD.dtype
    # (and it solves the system the factored lower triangle describes)
    low = np.tril(a)
    full = low + np.swapaxes(np.tril(a, -1), -1, -2)
    if hermitian and np.dtype(dtype).kind == "c":
        full = low + np.swapaxes(np.tril(a, -1), -1, -2).conj()
        full[..., range(7), range(7)] = full.diagonal(0, -2, -1).real
    np.testing.assert_allclose(full @ got.numpy(), b, rtol=10 * tol, atol=10 * tol)


def test_ldl_solve_broadcasts_b_and_takes_any_integer_pivots():
    rng = np.random.default_rng(9)
    a = _matrix(rng, 4, np.float64)
    b = rng.standard_normal((2, 4, 3))
    tLD, tpiv = torch.linalg.ldl_factor(torch.from_numpy(a))
    gLD, gpiv = tapegrad.linalg.ldl_factor(tapegrad.from_numpy(a))
    want = torch.linalg.ldl_solve(tLD, tpiv.long(), torch.from_numpy(b))
    got = tapegrad.linalg.ldl_solve(gLD, gpiv.long(), tapegrad.from_numpy(b))
    assert tuple(got.shape) == (2, 4, 3)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_ldl_solve_errors():
    def args(module, a=None, pivots=None, b=None):
        LD, piv = module.linalg.ldl_factor(module.eye(3) + 1)
        return (LD if a is None else a(LD), piv if pivots is None else pivots(piv),
                module.ones(3, 2) if b is None else b(module))
    cases = [
        (dict(b=lambda m: m.ones(3, 2, dtype=m.float64)), RuntimeError,
         "Expected b and A to have the same dtype, but found b of type Double and A of type "
         "Float instead."),
        (dict(pivots=lambda p: p[:2]), RuntimeError,
         r"Expected LD.shape\[:-1\] and pivots.shape to be the same, but got pivots with shape "
         r"\[2\] instead"),
        (dict(b=lambda m: m.ones(2, 2)), RuntimeError,
         "Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is 3 by 3 but "
         "each b matrix is 2 by 2"),
        (dict(b=lambda m: m.ones(3)), IndexError, "Dimension out of range"),
        (dict(a=lambda LD: LD[:2]), RuntimeError,
         "A must be batches of square matrices, but they are 2 by 3 matrices"),
        (dict(a=lambda LD: LD[0], pivots=lambda p: p[0]), RuntimeError,
         "must have at least 2 dimensions"),
        (dict(pivots=lambda p: p.float()), RuntimeError,
         "Expected pivots to be integers. Got Float"),
        (dict(a=lambda LD: LD.half(), b=lambda m: m.ones(3, 2, dtype=m.float16)),
         NotImplementedError, "\"ldl_solve_kernel_cpu\" not implemented for 'Half'"),
        (dict(a=lambda LD: LD.int(), b=lambda m: m.ones(3, 2, dtype=m.int32)), RuntimeError,
         "Expected a floating point or complex tensor as input. Got Int"),
        (dict(pivots=lambda p: p * 0), RuntimeError, r"\|pivot\| >= 1"),
        (dict(pivots=lambda p: p + 3), RuntimeError, r"\|pivot\| <= LD.size\(-2\)"),
    ]
    for kwargs, error, phrase in cases:
        for module in (torch, tapegrad):
            with pytest.raises(error, match=phrase):
                module.linalg.ldl_solve(*args(module, **kwargs))


def test_ldl_has_no_derivative_as_in_torch():
    a = np.array([[2.0, 1.0], [1.0, -3.0]])
    for module in (torch, tapegrad):
        A = module.tensor(a, requires_grad=True)
        LD, piv, info = module.linalg.ldl_factor_ex(A)
        assert LD.requires_grad and not piv.requires_grad and not info.requires_grad
        with pytest.raises(RuntimeError,
                           match="derivative for aten::linalg_ldl_factor_ex is not implemented"):
            LD.sum().backward()
        B = module.ones(2, 1, dtype=module.float64, requires_grad=True)
        X = module.linalg.ldl_solve(LD.detach(), piv, B)
        assert X.requires_grad
        with pytest.raises(RuntimeError,
                           match="derivative for aten::linalg_ldl_solve is not implemented"):
            X.sum().backward()


def test_ldl_out_arguments():
    a = np.array([[1.0, 2.0, 0.0], [2.0, -1.0, 1.0], [0.0, 1.0, 3.0]])
    LD, piv = tapegrad.empty(3, 3, dtype=tapegrad.float64), tapegrad.empty(3, dtype=tapegrad.int32)
    tapegrad.linalg.ldl_factor(tapegrad.from_numpy(a), out=(LD, piv))
    want = torch.linalg.ldl_factor(torch.from_numpy(a))
    np.testing.assert_allclose(LD.numpy(), want.LD.numpy(), rtol=1e-12)
    np.testing.assert_array_equal(piv.numpy(), want.pivots.numpy())


# -- 2-d/3-d pools: PyTorch's argument-check order (padding before the input's empty dims) ----

@pytest.mark.parametrize("name, shape, kwargs", [
    ("max_pool2d", (0, 1, 49), dict(kernel_size=2, stride=50, padding=-1, return_indices=True)),
    ("max_pool2d", (0, 1, 49), dict(kernel_size=(3, 2), stride=50, padding=4)),
    ("max_pool2d", (1, 0, 10), dict(kernel_size=1)),
    ("max_pool2d", (2, 1, 10, 0), dict(kernel_size=1)),
    ("max_pool2d", (0, 0, 4, 4), dict(kernel_size=1)),
    ("max_pool2d", (1, 4, 4), dict(kernel_size=3, padding=2, dilation=2)),
    ("max_pool2d", (1, 4, 4), dict(kernel_size=2, padding=-1, dilation=0)),
    ("max_pool2d", (1, 4, 4), dict(kernel_size=0, stride=50, padding=1)),
    ("max_pool2d", (1, 4, 4), dict(kernel_size=2, stride=-1)),
    ("avg_pool2d", (0, 1, 49), dict(kernel_size=2, stride=50, padding=-1)),
    ("avg_pool2d", (0, 1, 49), dict(kernel_size=(3, 2), stride=50, padding=4)),
    ("avg_pool2d", (1, 1, 1, 4, 4), dict(kernel_size=2)),
    ("avg_pool2d", (4, 4), dict(kernel_size=2, divisor_override=0)),
    ("max_pool3d", (0, 1, 49, 50), dict(kernel_size=2, stride=50, padding=-1)),
    ("max_pool3d", (0, 1, 49, 50), dict(kernel_size=(3, 2, 2), stride=50, padding=4)),
    ("max_pool3d", (0, 1, 2, 10), dict(kernel_size=1)),
    ("max_pool3d", (2, 1, 0, 1, 2), dict(kernel_size=1, return_indices=True)),
    ("max_pool3d", (1, 4, 4, 4), dict(kernel_size=3, padding=2, dilation=2)),
    ("max_pool3d", (1, 4, 4, 4), dict(kernel_size=2, dilation=0)),
    ("avg_pool3d", (0, 1, 49, 50), dict(kernel_size=2, stride=50, padding=-1)),
    ("avg_pool3d", (0, 1, 49, 50), dict(kernel_size=(3, 2, 2), stride=50, padding=4)),
    ("avg_pool3d", (2, 1, 0, 1, 2), dict(kernel_size=1)),
    ("avg_pool3d", (1, 2, 4, 4), dict(kernel_size=3, padding=1)),   # (T=2 < kT=3: refused)
])
def test_pool_errors_in_torch_order(name, shape, kwargs):
    def outcome(module):
        try:
            getattr(module.nn.functional, name)(module.zeros(shape), **kwargs)
        except Exception as error:      # (compared: type and message)
            return type(error), str(error)
        return None
    want = outcome(torch)
    assert want is not None
    assert outcome(tapegrad) == want


def test_pool_dtype_refused_after_the_window_checks():
    for module in (torch, tapegrad):
        with pytest.raises(RuntimeError, match="pad must be non-negative"):
            module.nn.functional.max_pool2d(module.zeros(1, 4, 4, dtype=module.bool), 2, padding=-1)
        with pytest.raises(RuntimeError, match="pad must be non-negative"):
            module.nn.functional.max_pool3d(module.zeros(1, 4, 4, 4, dtype=module.bool), 2,
                                            padding=-1)
