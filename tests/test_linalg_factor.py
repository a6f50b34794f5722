"""torch.linalg's LU family (lu_factor, lu_factor_ex, lu, lu_solve), the _ex variants (inv_ex,
solve_ex, cholesky_ex: failures in `info`) and vander, tensorinv, tensorsolve, matmul, diagonal:
values, errors and gradients against torch, float64 finite differences."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import gradcheck

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
A3 = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
B32 = RNG.standard_normal((3, 2))
SPD = A3 @ A3.T + np.eye(3)


def _both(fn, *arrays):
    """fn(lib, *tensors) in both libraries, float64 leaves requiring grad; returns the outputs
    (as numpy) and the gradients of the sum of every floating output's squares."""
    results = []
    for lib in (tg, torch):
        leaves = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
        out = fn(lib, *leaves)
        outs = list(out) if isinstance(out, tuple) else [out]
        terms = [(o * o).sum() for o in outs if o.dtype.is_floating_point and o.requires_grad]
        grads = lib.autograd.grad(sum(terms), leaves, allow_unused=True) if terms else []
        results.append(([o.detach().numpy() for o in outs],
                        [None if g is None else g.numpy() for g in grads]))
    (outs_g, grads_g), (outs_t, grads_t) = results
    for a, b in zip(outs_g, outs_t):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    for a, b in zip(grads_g, grads_t):
        if a is None or b is None:
            assert a is None and b is None
        else:
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)
    return outs_g


CASES = {
    "lu_factor": (lambda lib, a: tuple(lib.linalg.lu_factor(a)), [A3]),
    "lu_factor_ex": (lambda lib, a: tuple(lib.linalg.lu_factor_ex(a)), [A3]),
    "lu": (lambda lib, a: tuple(lib.linalg.lu(a)), [A3]),
    "lu_batched": (lambda lib, a: tuple(lib.linalg.lu(a)), [np.stack([A3, A3.T])]),
    "lu_solve": (lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b), [A3, B32]),
    "lu_solve_adjoint": (lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b,
                                                               adjoint=True), [A3, B32]),
    "lu_solve_right": (lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b.mT,
                                                             left=False), [A3, B32]),
    "lu_solve_right_adjoint": (lambda lib, a, b: lib.linalg.lu_solve(
        *lib.linalg.lu_factor(a), b.mT, left=False, adjoint=True), [A3, B32]),
    "inv_ex": (lambda lib, a: tuple(lib.linalg.inv_ex(a)), [A3]),
    "solve_ex": (lambda lib, a, b: tuple(lib.linalg.solve_ex(a, b)), [A3, B32]),
    "solve_ex_vector": (lambda lib, a, b: tuple(lib.linalg.solve_ex(a, b[:, 0])), [A3, B32]),
    "cholesky_ex": (lambda lib, a: tuple(lib.linalg.cholesky_ex(a)), [SPD]),
    # (finite differences need a symmetric perturbation: Cholesky reads one triangle)
    "cholesky_ex_of_gram": (lambda lib, a: tuple(lib.linalg.cholesky_ex(a @ a.mT)), [A3]),
    "cholesky_ex_upper": (lambda lib, a: tuple(lib.linalg.cholesky_ex(a, upper=True)), [SPD]),
    "vander": (lambda lib, x: lib.linalg.vander(x), [RNG.standard_normal(4)]),
    "vander_N": (lambda lib, x: lib.linalg.vander(x, N=3), [RNG.standard_normal((2, 4))]),
    "tensorinv": (lambda lib, a: lib.linalg.tensorinv(a.reshape(6, 2, 3), ind=1),
                  [RNG.standard_normal((6, 6)) + 4 * np.eye(6)]),
    "tensorsolve": (lambda lib, a, b: lib.linalg.tensorsolve(a.reshape(6, 2, 3), b),
                    [RNG.standard_normal((6, 6)) + 4 * np.eye(6), RNG.standard_normal(6)]),
    "matmul": (lambda lib, a, b: lib.linalg.matmul(a, b), [A3, B32]),
    "diagonal": (lambda lib, a: lib.linalg.diagonal(a, offset=1), [RNG.standard_normal((2, 3, 3))]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_as_torch(name):
    fn, arrays = CASES[name]
    _both(fn, *arrays)


@pytest.mark.parametrize("name", ["lu_factor", "lu", "lu_solve", "lu_solve_adjoint",
                                  "lu_solve_right_adjoint", "inv_ex", "solve_ex",
                                  "cholesky_ex_of_gram",
                                  "vander", "tensorsolve"])
def test_float64_finite_differences(name):
    fn, arrays = CASES[name]

    def floating(*xs):
        out = fn(tg, *xs)
        outs = out if isinstance(out, tuple) else (out,)
        return tuple(o for o in outs if o.dtype.is_floating_point)
    leaves = [tg.tensor(a, dtype=tg.float64, requires_grad=True) for a in arrays]
    assert gradcheck(floating, leaves)


SINGULAR = np.array([[1., 2.], [2., 4.]])
NOT_PD = np.array([[[4., 2.], [2., 3.]], [[1., 2.], [2., 1.]]])

ERRORS = [
    "lib.linalg.lu_factor(lib.tensor(SINGULAR))",
    "lib.linalg.lu_factor(lib.tensor(SINGULAR).expand(2, 2, 2))",
    "lib.linalg.lu_factor_ex(lib.tensor(SINGULAR), check_errors=True)",
    "lib.linalg.lu_factor(lib.ones(3))",
    "lib.linalg.lu_factor(lib.ones(2, 2, dtype=lib.long))",
    "lib.linalg.lu(lib.ones(2, 2), pivot=False)",
    "lib.linalg.lu_solve(*lib.linalg.lu_factor(lib.eye(2)), lib.ones(2))",
    "lib.linalg.lu_solve(*lib.linalg.lu_factor(lib.eye(2)), lib.ones(3, 1))",
    "lib.linalg.inv_ex(lib.ones(2, 3))",
    "lib.linalg.inv_ex(lib.tensor(SINGULAR), check_errors=True)",
    "lib.linalg.solve_ex(lib.tensor(SINGULAR), lib.ones(2), check_errors=True)",
    "lib.linalg.solve_ex(lib.tensor(SINGULAR), lib.ones(2, dtype=lib.float64), check_errors=True)",
    "lib.linalg.solve_ex(lib.eye(2), lib.ones(3))",
    "lib.linalg.cholesky_ex(lib.tensor(NOT_PD), check_errors=True)",
    "lib.linalg.vander(lib.tensor([1., 2.]), N=1)",
    "lib.linalg.tensorinv(lib.ones(2, 3), ind=1)",
]


@pytest.mark.parametrize("expression", ERRORS)
def test_errors_as_torch(expression):
    outcomes = []
    for lib in (tg, torch):
        with pytest.raises(Exception) as caught:
            eval(expression, {"lib": lib, "SINGULAR": SINGULAR, "NOT_PD": NOT_PD})
        error = caught.value
        kind = "LinAlgError" if "LinAlgError" in type(error).__name__ else type(error).__name__
        outcomes.append((kind, str(error)))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("expression", [
    "lib.linalg.lu_factor_ex(lib.tensor(SINGULAR))", "lib.linalg.lu_factor_ex(lib.zeros(2, 2))",
    "lib.linalg.inv_ex(lib.tensor(SINGULAR))", "lib.linalg.solve_ex(lib.tensor(SINGULAR), lib.ones(2, dtype=lib.float64))",
    "lib.linalg.solve_ex(lib.tensor(SINGULAR).expand(3, 2, 2), lib.ones(3, 2, 1, dtype=lib.float64))",
    "lib.linalg.solve_ex(lib.tensor(SINGULAR), lib.ones(1, 2, dtype=lib.float64), left=False)",
    "lib.linalg.cholesky_ex(lib.tensor(NOT_PD))",
    "lib.linalg.cholesky_ex(lib.tensor(NOT_PD), upper=True)",
])
def test_failures_reported_in_info_as_torch(expression):
    printed = [repr(eval(expression, {"lib": lib, "SINGULAR": SINGULAR, "NOT_PD": NOT_PD}))
               .replace("tapegrad", "torch") for lib in (tg, torch)]
    assert printed[0] == printed[1]
