"""Regressions from fuzz22 (session 33): the differential fuzzer's findings, each as an explicit
case checked against PyTorch."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _both(fn):
    return fn(torch), fn(tapegrad)


def _values(rows, cols, seed=0, batch=()):
    return np.random.default_rng(seed).standard_normal(batch + (rows, cols))


# -- LAPACK-backed results are column-major, as PyTorch's (fuzz 65013473) ----------------------

def test_lu_factor_flatten_is_a_copy_so_in_place_leaves_lu_alone():
    # SILENT before: LU was row-major here, so flatten() was a view and sigmoid_ wrote into LU
    a = _values(3, 3, 1, (2, 2)).astype(np.float32)

    def run(lib):
        A = lib.tensor(a, requires_grad=True)
        LU = lib.linalg.lu_factor(A)[0]
        flat = LU.flatten(0)
        flat.sigmoid_()
        w = lib.tensor(np.linspace(-1, 1, flat.numel(), dtype=np.float32))
        (flat * w).sum().backward()
        return LU.detach().numpy().copy(), A.grad.numpy().copy()

    (t_lu, t_grad), (g_lu, g_grad) = _both(run)
    np.testing.assert_allclose(g_lu, t_lu, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g_grad, t_grad, rtol=1e-4, atol=1e-5)


LAPACK_RESULTS = {
    "lu_factor": lambda L, a, b, s: L.linalg.lu_factor(a)[0],
    "lu_factor_ex wide": lambda L, a, b, s: L.linalg.lu_factor_ex(b)[0],
    "torch.lu": lambda L, a, b, s: L.lu(a)[0],
    "inv": lambda L, a, b, s: L.linalg.inv(a),
    "inverse 2-d": lambda L, a, b, s: L.inverse(a[0]),
    "inv_ex": lambda L, a, b, s: L.linalg.inv_ex(a)[0],
    "matrix_power -1": lambda L, a, b, s: L.linalg.matrix_power(a, -1),
    "solve": lambda L, a, b, s: L.linalg.solve(a, b),
    "solve_ex": lambda L, a, b, s: L.linalg.solve_ex(a, b)[0],
    "solve vectors": lambda L, a, b, s: L.linalg.solve(a, b[..., 0]),
    "solve vectors 2 batch dims": lambda L, a, b, s: L.linalg.solve(
        a.expand(2, 2, 3, 3), b[..., 0].expand(2, 2, 3)),
    "cholesky": lambda L, a, b, s: L.linalg.cholesky(s),
    "cholesky upper": lambda L, a, b, s: L.linalg.cholesky(s, upper=True),
    "cholesky_ex": lambda L, a, b, s: L.linalg.cholesky_ex(s)[0],
    "cholesky_solve": lambda L, a, b, s: L.cholesky_solve(b, L.linalg.cholesky(s)),
    "cholesky_inverse": lambda L, a, b, s: L.cholesky_inverse(L.linalg.cholesky(s)),
    "eigh vectors": lambda L, a, b, s: L.linalg.eigh(s)[1],
    "eig vectors": lambda L, a, b, s: L.linalg.eig(a)[1],
    "svd U": lambda L, a, b, s: L.linalg.svd(b)[0],
    "svd Vh": lambda L, a, b, s: L.linalg.svd(b)[2],
    "svd reduced Vh": lambda L, a, b, s: L.linalg.svd(b, full_matrices=False)[2],
    "qr Q": lambda L, a, b, s: L.linalg.qr(b.mT)[0],
    "qr R": lambda L, a, b, s: L.linalg.qr(b)[1],
    "solve_triangular": lambda L, a, b, s: L.linalg.solve_triangular(a.triu(), b, upper=True),
    "solve_triangular right": lambda L, a, b, s: L.linalg.solve_triangular(
        a.triu(), b.mT, upper=True, left=False),
    "lu_solve": lambda L, a, b, s: L.linalg.lu_solve(*L.linalg.lu_factor(a), b),
    "geqrf": lambda L, a, b, s: L.geqrf(a)[0],
    "householder_product": lambda L, a, b, s: L.linalg.householder_product(*L.geqrf(a)),
    "ormqr": lambda L, a, b, s: L.ormqr(*L.geqrf(a), b),
    "lstsq square": lambda L, a, b, s: L.linalg.lstsq(a, b).solution,
    "lstsq tall": lambda L, a, b, s: L.linalg.lstsq(b.mT, b[..., :2, :].mT).solution,
    # row-major in PyTorch too (not LAPACK's layout): they must stay so
    "linalg.lu L": lambda L, a, b, s: L.linalg.lu(a)[1],
    "pinv": lambda L, a, b, s: L.linalg.pinv(a),
    "matrix_power 2": lambda L, a, b, s: L.linalg.matrix_power(a, 2),
    "torch.svd V": lambda L, a, b, s: L.svd(b)[2],
}


@pytest.mark.filterwarnings("ignore:torch.lu is deprecated")
@pytest.mark.parametrize("name", sorted(LAPACK_RESULTS))
def test_lapack_result_layout_matches_pytorch(name):
    def run(lib):
        a = lib.tensor(_values(3, 3, 2, (2,)))
        b = lib.tensor(_values(3, 4, 3, (2,)))
        s = a @ a.mT + lib.eye(3, dtype=lib.float64)
        r = LAPACK_RESULTS[name](lib, a, b, s)
        try:
            r.view(-1)
            flat_view = True
        except RuntimeError:
            flat_view = False
        return tuple(r.shape), r.stride(), r.is_contiguous(), flat_view, r.numpy().copy()

    t, g = _both(run)
    assert g[:4] == t[:4]
    if "eig" not in name and "svd" not in name and "qr" not in name and "geqrf" not in name:
        np.testing.assert_allclose(g[4], t[4], rtol=1e-7, atol=1e-9)


def test_column_major_inv_refuses_flat_view_and_reshape_copies():
    def run(lib):
        A = lib.tensor(_values(3, 3, 4), requires_grad=True)
        X = lib.linalg.inv(A)
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            X.view(-1)
        with lib.no_grad():
            r = X.reshape(-1)
        r.add_(1.0)                                       # a copy: X is unchanged
        w = lib.tensor(np.arange(9.0).reshape(3, 3))
        (X * w).sum().backward()
        return r.requires_grad, X.detach().numpy().copy(), A.grad.numpy().copy()

    t, g = _both(run)
    assert g[0] == t[0] is False
    np.testing.assert_allclose(g[1], t[1], rtol=1e-10)
    np.testing.assert_allclose(g[2], t[2], rtol=1e-9)


def test_relaid_composites_keep_gradients_and_node_names():
    # householder_product / ormqr / lstsq gain a layout node: gradients unchanged (float64 FD)
    a = _values(4, 3, 5)
    tau_values = np.array([0.7, 1.2, 0.3])
    c = _values(4, 2, 6)

    def f(A, tau, C):
        return (tapegrad.linalg.householder_product(A, tau).sum()
                + tapegrad.ormqr(A, tau, C).pow(2).sum()
                + tapegrad.linalg.lstsq(A, C).solution.pow(2).sum())

    inputs = [tapegrad.tensor(x, requires_grad=True) for x in (a, tau_values, c)]
    assert tapegrad.autograd.gradcheck(f, inputs)

    def names(lib):
        A = lib.tensor(a, requires_grad=True)
        tau = lib.tensor(tau_values, requires_grad=True)
        C = lib.tensor(c)
        return (type(lib.linalg.householder_product(A, tau).grad_fn).__name__,
                type(lib.ormqr(A, tau, C).grad_fn).__name__,
                type(lib.linalg.lstsq(A, C).solution.grad_fn).__name__)

    t, g = _both(names)
    assert g == t


def test_solve_of_vectors_is_the_solves_own_output_not_a_view():
    def run(lib):
        A = lib.tensor(_values(3, 3, 7, (2,)), requires_grad=True)
        B = lib.tensor(_values(2, 3, 8))
        X = lib.linalg.solve(A, B)
        Y = lib.linalg.solve(A, B.unsqueeze(-1).mT, left=False)
        (X.sum() + Y.pow(2).sum()).backward()
        return (type(X.grad_fn).__name__, X._is_view(), X.stride(), type(Y.grad_fn).__name__,
                X.detach().numpy().copy(), A.grad.numpy().copy())

    t, g = _both(run)
    assert g[:4] == t[:4]
    np.testing.assert_allclose(g[4], t[4], rtol=1e-10)
    np.testing.assert_allclose(g[5], t[5], rtol=1e-9)


@pytest.mark.parametrize("op", ["complex", "polar"])
def test_complex_and_polar_results_take_the_binary_op_layout(op):
    # complex(inv(A), b): PyTorch's TensorIterator follows the column-major operand, so a flat
    # view() raises there (fuzz 60616918); it was row-major here
    def run(lib):
        A = lib.tensor(_values(3, 3, 9), requires_grad=True)
        X = lib.linalg.inv(A)
        b = lib.tensor(np.array([0.5, 1.5, 2.0]), requires_grad=True)
        z = getattr(lib, op)(X.abs() if op == "polar" else X, b)
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            z.view(-1)
        w = lib.tensor(np.arange(9.0).reshape(3, 3))
        (z.real * w + z.imag).sum().backward()
        return z.stride(), z.detach().numpy().copy(), A.grad.numpy().copy(), b.grad.numpy().copy()

    t, g = _both(run)
    assert g[0] == t[0]
    for x, y in zip(g[1:], t[1:]):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)


def test_qr_backward_of_a_singular_r_is_nan_not_an_error():
    # R with a zero on its diagonal: PyTorch's backward solves with R^H (inf / NaN), tapegrad's
    # inverted R and raised "the input matrix is singular" (fuzz 65100249)
    def run(lib):
        a = lib.tensor(np.array([[0.0, 0.0], [0.75, 3.0], [0.0, 0.0]]), requires_grad=True)
        R = lib.linalg.qr(a)[1]
        (R * lib.tensor(np.array([[0.5, -1.0], [2.0, 0.25]]))).sum().backward()
        return a.grad.numpy().copy()

    t, g = _both(run)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(t))
    np.testing.assert_allclose(g, t, rtol=1e-12)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 4, 3)])
def test_qr_gradients_after_the_triangular_solve(shape):
    a = _values(*shape[-2:], 10, shape[:-2])
    w_q, w_r = np.random.default_rng(11).standard_normal((2, 25))

    def f(x):
        Q, R = tapegrad.linalg.qr(x)
        return ((Q * tapegrad.tensor(w_q[:Q.numel()].reshape(Q.shape))).sum()
                + (R * tapegrad.tensor(w_r[:R.numel()].reshape(R.shape))).sum())

    x = tapegrad.tensor(a, requires_grad=True)
    assert tapegrad.autograd.gradcheck(f, [x])
    assert tapegrad.autograd.gradgradcheck(f, [x])

    def run(lib):
        x = lib.tensor(a, requires_grad=True)
        Q, R = lib.linalg.qr(x)
        ((Q * lib.tensor(w_q[:Q.numel()].reshape(Q.shape))).sum()
         + (R * lib.tensor(w_r[:R.numel()].reshape(R.shape))).sum()).backward()
        return x.grad.numpy().copy()

    t, g = _both(run)
    np.testing.assert_allclose(g, t, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_qr_and_geqrf_of_a_negative_zero_pivot_match_pytorch(dtype):
    # SILENT before: numpy's LAPACK read a leading -0.0 as negative, PyTorch's as positive, so
    # R's row and Q's column came out negated (fuzz 65100597: householder_product(*geqrf(x)))
    x = np.array([[-0.0, 1.0], [0.5, 2.0], [0.0, 1.0]], dtype=dtype)

    def run(lib):
        A = lib.tensor(x, requires_grad=dtype != "complex128")
        Q, R = lib.linalg.qr(A)
        a, tau = lib.geqrf(A.detach())
        H = lib.linalg.householder_product(a, tau)
        return [t.detach().numpy().copy() for t in (Q, R, a, tau, H)]

    t, g = _both(run)
    for x_g, x_t in zip(g, t):
        np.testing.assert_allclose(x_g, x_t, rtol=1e-5, atol=1e-6)


ORMQR_REFUSALS = {
    # (input, tau, other, left): PyTorch's checks, no broadcasting of the batches (65101118)
    "other more dims": ((3, 3), (3,), (2, 3, 3), True),
    "other fewer dims": ((2, 3, 3), (2, 3), (3, 3), True),
    "tau dims": ((2, 3, 3), (3,), (2, 3, 3), True),
    "tau batch": ((2, 3, 3), (4, 3), (2, 3, 3), True),
    "other batch of one": ((2, 3, 3), (2, 3), (1, 3, 3), True),
    "tau longer than input's columns": ((3, 2), (3,), (3, 3), True),
    "tau shorter than its reflectors": ((4, 3), (2,), (4, 3), True),
    "right side, tau shorter": ((4, 3), (2,), (2, 4), False),
    "0-d tau": ((4, 3), (), (4, 3), True),
}


@pytest.mark.parametrize("name", sorted(ORMQR_REFUSALS))
def test_ormqr_refuses_as_pytorch(name):
    a_shape, tau_shape, c_shape, left = ORMQR_REFUSALS[name]

    def run(lib):
        try:
            lib.ormqr(lib.ones(a_shape, dtype=lib.float64), lib.ones(tau_shape, dtype=lib.float64),
                      lib.ones(c_shape, dtype=lib.float64), left)
        except (RuntimeError, IndexError) as e:
            return type(e), str(e)
        return None

    t, g = _both(run)
    assert t is not None and g == t
