"""tapegrad.linalg against PyTorch (values, gradients, second derivatives, errors) and against
finite differences and known values without it."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(20261201)
SQUARE = RNG.standard_normal((2, 3, 3))
SPD = SQUARE @ np.swapaxes(SQUARE, -1, -2) + 3 * np.eye(3)
RHS = RNG.standard_normal((2, 3, 2))
WIDE = RNG.standard_normal((2, 3, 4))


def _svd_gauge_free(m, a, full_matrices):
    # u_i v_i^T does not depend on the sign of a singular-vector pair: a gauge-free function of
    # all three factors.
    U, S, Vh = m.linalg.svd(a, full_matrices=full_matrices)
    k = min(a.shape[-2:])
    return (U[..., :, :k] * S.sqrt().unsqueeze(-2)) @ Vh[..., :k, :]



def _weights(shape):
    # A fixed non-uniform cotangent, so a gradient cannot match by symmetry alone.
    size = int(np.prod(shape))
    return np.cos(np.arange(size) + 0.5).reshape(shape)


def _value_and_grads(module, fn, arrays):
    inputs = [module.tensor(a, requires_grad=True) for a in arrays]
    out = fn(module, *inputs)
    (out * module.tensor(_weights(tuple(out.shape)))).sum().backward()
    return out.detach().numpy(), [x.grad.numpy() for x in inputs]


def _second_order(module, fn, arrays):
    """The gradient of |first gradient|^2: exercises create_graph through each backward."""
    inputs = [module.tensor(a, requires_grad=True) for a in arrays]
    out = fn(module, *inputs)
    firsts = module.autograd.grad((out * module.tensor(_weights(tuple(out.shape)))).sum(),
                                  inputs, create_graph=True)
    seconds = module.autograd.grad(sum((g * g).sum() for g in firsts), inputs)
    return [g.numpy() for g in seconds]


CASES = {
    "inv": (lambda m, a: m.linalg.inv(a), (SQUARE,)),
    "det": (lambda m, a: m.linalg.det(a), (SQUARE,)),
    "det_2d": (lambda m, a: m.linalg.det(a), (SQUARE[0],)),
    "slogdet": (lambda m, a: m.linalg.slogdet(a).logabsdet, (SQUARE,)),
    "solve": (lambda m, a, b: m.linalg.solve(a, b), (SQUARE, RHS)),
    "solve_batched_vector": (lambda m, a, b: m.linalg.solve(a, b), (SQUARE, RHS[..., 0])),
    "solve_1d_vector": (lambda m, a, b: m.linalg.solve(a, b), (SQUARE, RHS[0, :, 0])),
    "solve_broadcast": (lambda m, a, b: m.linalg.solve(a, b), (SQUARE[0], RHS)),
    "solve_right": (lambda m, a, b: m.linalg.solve(a, b, left=False),
                    (SQUARE, np.swapaxes(RHS, -1, -2))),
    "cholesky": (lambda m, a: m.linalg.cholesky(a), (SPD,)),
    "cholesky_upper": (lambda m, a: m.linalg.cholesky(a, upper=True), (SPD,)),
    "cholesky_reads_lower": (lambda m, a: m.linalg.cholesky(a), (SPD + np.triu(SQUARE, 1),)),
    "eigvalsh": (lambda m, a: m.linalg.eigvalsh(a), (SQUARE,)),
    "eigvalsh_upper": (lambda m, a: m.linalg.eigvalsh(a, UPLO="U"), (SQUARE,)),
    # Eigenvectors are defined up to sign: |V| is not.
    "eigh_vectors": (lambda m, a: m.linalg.eigh(a).eigenvectors.abs(), (SPD,)),
    "vector_norm": (lambda m, a: m.linalg.vector_norm(a), (SQUARE,)),
    "vector_norm_3_dim": (lambda m, a: m.linalg.vector_norm(a, 3, dim=-1), (SQUARE,)),
    "vector_norm_inf": (lambda m, a: m.linalg.vector_norm(a, math.inf, dim=(0, 2),
                                                         keepdim=True), (SQUARE,)),
    "vector_norm_-inf": (lambda m, a: m.linalg.vector_norm(a, -math.inf, dim=1), (SQUARE,)),
    "vector_norm_1": (lambda m, a: m.linalg.vector_norm(a, 1, dim=1), (SQUARE,)),
    "vector_norm_-1.5": (lambda m, a: m.linalg.vector_norm(a, -1.5), (SQUARE,)),
    "matrix_norm_fro": (lambda m, a: m.linalg.matrix_norm(a), (SQUARE,)),
    "matrix_norm_1": (lambda m, a: m.linalg.matrix_norm(a, 1), (SQUARE,)),
    "matrix_norm_-1": (lambda m, a: m.linalg.matrix_norm(a, -1), (SQUARE,)),
    "matrix_norm_inf_dims": (lambda m, a: m.linalg.matrix_norm(a, math.inf, dim=(2, 0)),
                             (SQUARE,)),
    "matrix_norm_-inf_keepdim": (lambda m, a: m.linalg.matrix_norm(a, -math.inf, dim=(0, 2),
                                                                   keepdim=True), (SQUARE,)),
    "norm_flat": (lambda m, a: m.linalg.norm(a), (SQUARE,)),
    "norm_matrix_ord": (lambda m, a: m.linalg.norm(a, 1), (SQUARE[0],)),
    "norm_vector_ord": (lambda m, a: m.linalg.norm(a, 1), (SQUARE[0, 0],)),
    "norm_dim_pair": (lambda m, a: m.linalg.norm(a, dim=(1, 2)), (SQUARE,)),
    "norm_fro_str": (lambda m, a: m.linalg.norm(a, "fro"), (SQUARE[0],)),
    "svdvals": (lambda m, a: m.linalg.svdvals(a), (WIDE,)),
    "svd_wide": (lambda m, a: _svd_gauge_free(m, a, False), (WIDE,)),
    "svd_tall_full": (lambda m, a: _svd_gauge_free(m, a.mT, True), (WIDE,)),
    "svd_square": (lambda m, a: _svd_gauge_free(m, a, True), (SQUARE,)),
    "matrix_norm_2": (lambda m, a: m.linalg.matrix_norm(a, 2), (WIDE,)),
    "matrix_norm_-2_dims": (lambda m, a: m.linalg.matrix_norm(a, -2, dim=(2, 0),
                                                              keepdim=True), (WIDE,)),
    "matrix_norm_nuc": (lambda m, a: m.linalg.norm(a, "nuc", dim=(0, 1)), (WIDE,)),
    "pinv": (lambda m, a: m.linalg.pinv(a), (WIDE,)),
    "pinv_hermitian": (lambda m, a: m.linalg.pinv(a + a.mT, hermitian=True), (SQUARE,)),
    "matrix_power_0": (lambda m, a: m.linalg.matrix_power(a, 0), (SQUARE,)),
    "matrix_power_5": (lambda m, a: m.linalg.matrix_power(a, 5), (SQUARE,)),
    "matrix_power_-2": (lambda m, a: m.linalg.matrix_power(a, -2), (SQUARE,)),
    "multi_dot": (lambda m, a, b, c: m.linalg.multi_dot([a, b, c]),
                  (WIDE[0], WIDE[1].T, SQUARE[0])),
    "multi_dot_vectors": (lambda m, a, b, c: m.linalg.multi_dot([a, b, c]),
                          (WIDE[0, 0], WIDE[1].T, SQUARE[0, 0])),
    "cross": (lambda m, a, b: m.linalg.cross(a, b), (SQUARE, SQUARE[:1] + 1)),
    "cross_dim": (lambda m, a, b: m.linalg.cross(a, b, dim=1), (SQUARE, SQUARE[1:] * 2)),
    "torch.inverse": (lambda m, a: m.inverse(a), (SQUARE,)),
    "Tensor.det": (lambda m, a: a.det(), (SQUARE,)),
    "torch.logdet": (lambda m, a: m.logdet(a), (SPD,)),
    "Tensor.logdet": (lambda m, a: a.logdet(), (SPD,)),
    "torch.slogdet": (lambda m, a: m.slogdet(a).logabsdet, (SQUARE,)),
    "torch.pinverse": (lambda m, a: m.pinverse(a), (WIDE,)),
    "torch.matrix_power": (lambda m, a: m.matrix_power(a, 3), (SQUARE,)),
    "torch.svd_some": (lambda m, a: (lambda r: (r.U * r.S.unsqueeze(-2)) @ r.V.mT)(m.svd(a)),
                       (WIDE,)),
    "torch.svd_full": (lambda m, a: (lambda r: (r.U[..., :3] * r.S.unsqueeze(-2))
                                     @ r.V[..., :3].mT)(m.svd(a, some=False)), (WIDE,)),
    "qr_tall": (lambda m, a: (lambda q: q.Q.sum(-1, keepdim=True) * q.R.sum(-2).unsqueeze(-2)
                              .sum(-1, keepdim=True) + q.Q)(m.linalg.qr(a.mT)), (WIDE,)),
    "qr_wide_R": (lambda m, a: m.linalg.qr(a).R, (WIDE,)),
    "qr_wide_Q": (lambda m, a: m.linalg.qr(a).Q, (WIDE,)),
    "qr_complete_square": (lambda m, a: m.linalg.qr(a, mode="complete").Q, (SQUARE,)),
    "lstsq": (lambda m, a, b: m.linalg.lstsq(a, b).solution,
              (np.swapaxes(WIDE, -1, -2), RNG.standard_normal((2, 4, 2)))),
    "lstsq_vector": (lambda m, a, b: m.linalg.lstsq(a, b).solution,
                     (np.swapaxes(WIDE, -1, -2), RNG.standard_normal((2, 4)))),
}
SECOND_ORDER = ["inv", "det", "slogdet", "solve", "cholesky", "eigvalsh", "eigh_vectors",
                "vector_norm_3_dim", "matrix_norm_fro", "svd_wide", "svd_tall_full", "pinv",
                "matrix_power_-2", "cross", "qr_tall", "qr_wide_R", "lstsq"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_and_gradient_match_torch(torch, name):
    fn, arrays = CASES[name]
    ours, our_grads = _value_and_grads(tg, fn, arrays)
    theirs, their_grads = _value_and_grads(torch, fn, arrays)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    for g, h in zip(our_grads, their_grads):
        np.testing.assert_allclose(g, h, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_derivative_matches_torch(torch, name):
    fn, arrays = CASES[name]
    for g, h in zip(_second_order(tg, fn, arrays), _second_order(torch, fn, arrays)):
        np.testing.assert_allclose(g, h, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ["inv", "det", "slogdet", "solve", "solve_1d_vector",
                                  "solve_right", "vector_norm_3_dim", "matrix_norm_1",
                                  "svdvals", "svd_wide", "matrix_norm_nuc", "pinv",
                                  "matrix_power_-2", "multi_dot_vectors", "cross_dim",
                                  "qr_tall", "qr_wide_Q", "lstsq_vector"])
def test_gradient_matches_finite_differences(gradcheck, name):
    fn, arrays = CASES[name]
    gradcheck(lambda *xs: fn(tg, *xs) * tg.tensor(_weights(tuple(fn(tg, *xs).shape))),
              *arrays)


def test_symmetric_rules_match_finite_differences_along_symmetric_directions():
    # cholesky and eigh read one triangle: their gradient is the symmetric one, so it is
    # checked along symmetric perturbations.
    direction = RNG.standard_normal((2, 3, 3))
    direction = direction + np.swapaxes(direction, -1, -2)
    eps = 1e-6
    for fn in (lambda a: tg.linalg.cholesky(a), lambda a: tg.linalg.eigvalsh(a),
               lambda a: tg.linalg.eigh(a).eigenvectors.abs()):
        x = tg.tensor(SPD, requires_grad=True)
        out = fn(x)
        weights = tg.tensor(_weights(tuple(out.shape)))
        (out * weights).sum().backward()
        plus = (fn(tg.tensor(SPD + eps * direction)) * weights).sum().item()
        minus = (fn(tg.tensor(SPD - eps * direction)) * weights).sum().item()
        assert (x.grad.numpy() * direction).sum() == pytest.approx((plus - minus) / (2 * eps),
                                                                  rel=1e-6)


def test_euclidean_norm_of_zero_has_zero_gradient(torch):
    for module in (tg, torch):
        x = module.tensor([[0.0, 0.0], [3.0, 4.0]], requires_grad=True)
        module.linalg.vector_norm(x, dim=1).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [[0.0, 0.0], [0.6, 0.8]], rtol=1e-6)


def test_known_values():
    A = tg.tensor([[4.0, 2.0], [2.0, 3.0]])
    np.testing.assert_allclose(tg.linalg.inv(A).numpy(), [[0.375, -0.25], [-0.25, 0.5]])
    assert tg.linalg.det(A).item() == pytest.approx(8.0)
    sign, logabsdet = tg.linalg.slogdet(-A[:1, :1])
    assert (sign.item(), logabsdet.item()) == (-1.0, pytest.approx(math.log(4.0)))
    np.testing.assert_allclose(tg.linalg.solve(A, tg.tensor([8.0, 7.0])).numpy(), [1.25, 1.5])
    np.testing.assert_allclose(tg.linalg.cholesky(A).numpy(),
                               [[2.0, 0.0], [1.0, math.sqrt(2.0)]], rtol=1e-6)
    np.testing.assert_allclose(tg.linalg.eigvalsh(tg.tensor([[2.0, 1.0], [1.0, 2.0]])).numpy(),
                               [1.0, 3.0], rtol=1e-6)
    v = tg.tensor([3.0, -4.0, 0.0])
    assert [tg.linalg.vector_norm(v, o).item() for o in (2, 1, 0, math.inf, -math.inf)] == [
        5.0, 7.0, 2.0, 4.0, 0.0]
    assert tg.linalg.matrix_norm(A, 1).item() == 6.0
    assert tg.linalg.norm(A).item() == pytest.approx(math.sqrt(33.0))
    assert tg.linalg.det(tg.ones(2, 0, 0)).tolist() == [1.0, 1.0]
    assert tg.linalg.det(A).dtype == tg.float32
    assert tg.linalg.inv(A.double()).dtype == tg.float64


def test_svd_factors_reconstruct_and_are_orthonormal():
    for full in (True, False):
        U, S, Vh = tg.linalg.svd(tg.tensor(WIDE), full_matrices=full)
        assert (U.shape, S.shape, Vh.shape) == (
            (2, 3, 3), (2, 3), (2, 4, 4) if full else (2, 3, 4))
        rebuilt = (U * S.unsqueeze(-2)) @ Vh[..., :3, :]
        np.testing.assert_allclose(rebuilt.numpy(), WIDE, atol=1e-12)
        np.testing.assert_allclose((Vh @ Vh.mT).numpy(), np.broadcast_to(
            np.eye(Vh.shape[-2]), Vh.shape[:-1] + (Vh.shape[-2],)), atol=1e-12)
    assert tg.linalg.svd(tg.tensor(WIDE)).S is not None


def test_rank_and_powers():
    assert tg.linalg.matrix_rank(tg.ones(2, 3, 3)).tolist() == [1, 1]
    assert tg.linalg.matrix_rank(tg.tensor(WIDE)).dtype == tg.int64
    assert tg.linalg.matrix_rank(tg.tensor(WIDE), atol=1.0, rtol=0.1).tolist() == [
        int(x) for x in (np.linalg.svd(WIDE, compute_uv=False) > np.maximum(
            1.0, 0.1 * np.linalg.svd(WIDE, compute_uv=False).max(-1, keepdims=True))).sum(-1)]
    A = tg.tensor([[1.0, 1.0], [0.0, 1.0]])
    assert tg.linalg.matrix_power(A, 3).tolist() == [[1.0, 3.0], [0.0, 1.0]]
    assert tg.linalg.matrix_power(A, -2).tolist() == [[1.0, -2.0], [0.0, 1.0]]
    assert tg.linalg.matrix_power(tg.ones(2, 2, dtype=tg.int64), 2).tolist() == [[2, 2], [2, 2]]
    assert tg.linalg.cross(tg.tensor([1.0, 0, 0]), tg.tensor([0.0, 1, 0])).tolist() == [0, 0, 1]


def test_rank_matches_torch(torch):
    for hermitian in (False, True):
        for kwargs in ({}, {"atol": 0.5}, {"rtol": 0.3}, {"atol": 2.0, "rtol": 0.1}):
            a = SQUARE + np.swapaxes(SQUARE, -1, -2) if hermitian else WIDE
            ours = tg.linalg.matrix_rank(tg.tensor(a), hermitian=hermitian, **kwargs)
            theirs = torch.linalg.matrix_rank(torch.tensor(a), hermitian=hermitian, **kwargs)
            assert ours.tolist() == theirs.tolist()


def test_qr_and_lstsq_shapes_and_values():
    Q, R = tg.linalg.qr(tg.tensor(WIDE.swapaxes(-1, -2)))
    assert (Q.shape, R.shape) == ((2, 4, 3), (2, 3, 3))
    np.testing.assert_allclose((Q @ R).numpy(), WIDE.swapaxes(-1, -2), atol=1e-12)
    np.testing.assert_allclose((Q.mT @ Q).numpy(), np.broadcast_to(np.eye(3), (2, 3, 3)),
                               atol=1e-12)
    assert (R.numpy() == np.triu(R.numpy())).all()
    only_R = tg.linalg.qr(tg.tensor(WIDE), mode="r")
    assert (only_R.Q.shape, only_R.R.shape) == ((0,), (2, 3, 4))
    assert tg.linalg.qr(tg.tensor(WIDE.swapaxes(-1, -2)), mode="complete").Q.shape == (2, 4, 4)
    x = tg.tensor(WIDE, requires_grad=True)
    with pytest.raises(RuntimeError, match="not computed when mode='r'"):
        tg.linalg.qr(x, mode="r").R.sum().backward()
    result = tg.linalg.lstsq(tg.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
                             tg.tensor([1.0, 2.0, 4.0]))
    np.testing.assert_allclose(result.solution.numpy(), [4 / 3, 7 / 3], rtol=1e-6)
    assert result.rank.item() == 2 and result.residuals.shape == (0,)
    _raises(RuntimeError, "qr received unrecognized mode 'x'",
            lambda: tg.linalg.qr(tg.eye(2), mode="x"))
    _raises(RuntimeError, "torch.linalg.lstsq: input.size(-2) should match other.size(-2)",
            lambda: tg.linalg.lstsq(tg.ones(2, 4, 3), tg.ones(2, 3, 2)))


def test_old_api():
    assert tg.logdet(tg.tensor([[0.0, 0.0], [0.0, 1.0]])).item() == -math.inf
    assert math.isnan(tg.logdet(tg.tensor([[-1.0, 0.0], [0.0, 1.0]])).item())
    result = tg.svd(tg.tensor(WIDE), compute_uv=False)
    assert (result.U.shape, result.V.shape) == ((2, 3, 3), (2, 4, 4))
    assert result.U.abs().sum().item() == 0.0
    assert type(tg.svd(tg.eye(2))).__name__ == "svd"
    assert type(tg.slogdet(tg.eye(2))).__name__ == "slogdet"
    with pytest.warns(UserWarning, match="torch.cholesky is deprecated"):
        L = tg.cholesky(tg.tensor(SPD), True)
    np.testing.assert_allclose(L.numpy(), np.swapaxes(np.linalg.cholesky(SPD), -1, -2))
    with pytest.raises(tg.linalg.LinAlgError, match="^cholesky: The factorization"):
        tg.cholesky(-tg.eye(2))         # (no second warning: PyTorch warns once per process)
    _raises(RuntimeError, "logdet: A must be batches of square matrices",
            lambda: tg.logdet(tg.ones(2, 3)))
    _raises(RuntimeError, "linalg.svd: input should have at least 2 dimensions, but has 1 "
            "dimensions instead", lambda: tg.svd(tg.ones(3)))


def _raises(exc, phrase, fn):
    with pytest.raises(exc) as info:
        fn()
    assert phrase in str(info.value)
    return info.value


def test_errors():
    assert issubclass(tg.linalg.LinAlgError, RuntimeError)
    _raises(tg.linalg.LinAlgError, "linalg.inv: The diagonal element 2 is zero, the inversion "
            "could not be completed because the input matrix is singular.",
            lambda: tg.linalg.inv(tg.tensor([[1.0, 2.0], [2.0, 4.0]])))
    _raises(tg.linalg.LinAlgError, "linalg.inv: (Batch element 1): The diagonal element 1 is "
            "zero", lambda: tg.linalg.inv(tg.stack([tg.eye(2), tg.zeros(2, 2)])))
    _raises(RuntimeError, "linalg.inv: A must be batches of square matrices, but they are 2 by "
            "3 matrices", lambda: tg.linalg.inv(tg.zeros(2, 3)))
    _raises(RuntimeError, "linalg.det: The input tensor A must have at least 2 dimensions.",
            lambda: tg.linalg.det(tg.zeros(3)))
    _raises(RuntimeError, "linalg.inv: Expected a floating point or complex tensor as input. "
            "Got Long", lambda: tg.linalg.inv(tg.zeros(2, 2, dtype=tg.int64)))
    _raises(tg.linalg.LinAlgError, "torch.linalg.solve: The solver failed because the input "
            "matrix is singular.", lambda: tg.linalg.solve(tg.zeros(3, 3), tg.ones(3)))
    _raises(RuntimeError, "linalg.solve: Incompatible shapes of A and B for the equation AX = B "
            "(3x3 and 4x1)", lambda: tg.linalg.solve(tg.eye(3), tg.ones(4)))
    _raises(RuntimeError, "equation XA = B (3x3 and 3x1)",
            lambda: tg.linalg.solve(tg.eye(3), tg.ones(3), left=False))
    _raises(RuntimeError, "A of type Float and B of type Double",
            lambda: tg.linalg.solve(tg.eye(3), tg.ones(3, dtype=tg.float64)))
    _raises(tg.linalg.LinAlgError, "linalg.cholesky: (Batch element 1): The factorization could "
            "not be completed because the input is not positive-definite (the leading minor of "
            "order 2 is not positive-definite).",
            lambda: tg.linalg.cholesky(tg.tensor([[[1.0, 0], [0, 1]], [[1.0, 2], [2, 1]]])))
    _raises(RuntimeError, "Expected UPLO argument to be 'L' or 'U', but got X",
            lambda: tg.linalg.eigh(tg.eye(3), UPLO="X"))
    _raises(NotImplementedError, "\"linalg_eigh_cpu\" not implemented for 'Int'",
            lambda: tg.linalg.eigvalsh(tg.zeros(2, 2, dtype=tg.int32)))
    _raises(RuntimeError, "linalg.vector_norm: Expected a floating point or complex tensor as "
            "input. Got Long", lambda: tg.linalg.vector_norm(tg.zeros(3, dtype=tg.int64)))
    _raises(RuntimeError, "cannot compute the inf norm on an empty tensor",
            lambda: tg.linalg.vector_norm(tg.zeros(0), math.inf))
    _raises(RuntimeError, "cannot compute the inf norm on the dimension 1because",
            lambda: tg.linalg.vector_norm(tg.zeros(2, 0), math.inf, dim=1))
    _raises(RuntimeError, "linalg.matrix_norm: Order 3 not supported.",
            lambda: tg.linalg.matrix_norm(tg.zeros(3, 3), 3))
    _raises(RuntimeError, "linalg.norm: If dim is not specified but ord is, the input must be "
            "1D or 2D. Got 3D.", lambda: tg.linalg.norm(tg.zeros(2, 2, 2), 1))


def test_empty_inputs_match_torch(torch):
    for shape in [(0, 3, 3), (2, 0, 0), (0, 0)]:
        for fn in (lambda m, a: m.linalg.inv(a), lambda m, a: m.linalg.det(a),
                   lambda m, a: m.linalg.cholesky(a), lambda m, a: m.linalg.svdvals(a),
                   lambda m, a: m.linalg.pinv(a), lambda m, a: m.linalg.matrix_rank(a),
                   lambda m, a: m.linalg.matrix_norm(a, 1)):
            ours, theirs = fn(tg, tg.zeros(shape)), fn(torch, torch.zeros(shape))
            assert (tuple(ours.shape), ours.tolist()) == (tuple(theirs.shape), theirs.tolist())


def test_errors_match_torch(torch):
    cases = [
        lambda m: m.linalg.inv(m.tensor([[1.0, 2.0], [2.0, 4.0]])),
        lambda m: m.linalg.inv(m.tensor([[0.0, 0.0], [0.0, 4.0]])),
        lambda m: m.linalg.inv(m.zeros(2, 3)),
        lambda m: m.linalg.cholesky(-m.eye(3)),
        lambda m: m.linalg.solve(m.eye(3), m.ones(4)),
        lambda m: m.linalg.vector_norm(m.zeros(2, 0), -math.inf),
        lambda m: m.linalg.matrix_norm(m.zeros(3)),
        lambda m: m.linalg.norm(m.zeros(2, 2, 2), dim=(0, 1, 2)),
        lambda m: m.linalg.matrix_power(m.ones(2, 3), 2),
        lambda m: m.linalg.matrix_power(m.ones(2, 2, dtype=m.int64), -1),
        lambda m: m.linalg.multi_dot([m.ones(2, 3)]),
        lambda m: m.linalg.multi_dot([m.ones(2, 3), m.ones(4, 2)]),
        lambda m: m.linalg.multi_dot([m.ones(2, 3, 3), m.ones(3, 2)]),
        lambda m: m.linalg.cross(m.ones(2, 4), m.ones(2, 4)),
        lambda m: m.linalg.matrix_rank(m.ones(3)),
        lambda m: m.linalg.pinv(m.ones(3)),
        lambda m: m.linalg.svd(m.ones(3)),
    ]
    for case in cases:
        with pytest.raises(RuntimeError) as theirs:
            case(torch)
        with pytest.raises(type(theirs.value).__mro__[1] if "LinAlg" in type(
                theirs.value).__name__ else type(theirs.value)) as ours:
            case(tg)
        assert str(ours.value) == str(theirs.value)
        assert ("LinAlg" in type(ours.value).__name__) == ("LinAlg" in type(
            theirs.value).__name__)


HALF_CALLS = {
    "cholesky": lambda L, a: L.linalg.cholesky(a),
    "cholesky_ex": lambda L, a: L.linalg.cholesky_ex(a),
    "inv": lambda L, a: L.linalg.inv(a), "inv_ex": lambda L, a: L.linalg.inv_ex(a),
    "det": lambda L, a: L.linalg.det(a), "slogdet": lambda L, a: L.linalg.slogdet(a),
    "solve": lambda L, a: L.linalg.solve(a, a), "lstsq": lambda L, a: L.linalg.lstsq(a, a),
    "solve_triangular": lambda L, a: L.linalg.solve_triangular(a, a, upper=True),
    "eig": lambda L, a: L.linalg.eig(a), "eigvals": lambda L, a: L.linalg.eigvals(a),
    "eigh": lambda L, a: L.linalg.eigh(a), "eigvalsh": lambda L, a: L.linalg.eigvalsh(a),
    "svd": lambda L, a: L.linalg.svd(a), "svdvals": lambda L, a: L.linalg.svdvals(a),
    "cond": lambda L, a: L.linalg.cond(a), "pinv": lambda L, a: L.linalg.pinv(a),
    "matrix_rank": lambda L, a: L.linalg.matrix_rank(a), "qr": lambda L, a: L.linalg.qr(a),
    "lu": lambda L, a: L.linalg.lu(a), "lu_factor": lambda L, a: L.linalg.lu_factor(a),
    "lu_factor_ex": lambda L, a: L.linalg.lu_factor_ex(a),
    "householder_product": lambda L, a: L.linalg.householder_product(
        a, L.ones(1, dtype=L.float16)),
}


@pytest.mark.parametrize("name", sorted(HALF_CALLS))
def test_float16_is_refused_in_pytorchs_words(name, torch):
    """PyTorch's CPU linear algebra has no float16 kernels; each function's own error (numpy's
    LAPACK raised a TypeError, and lu / lu_factor / householder_product computed)."""
    call = HALF_CALLS[name]
    with pytest.raises(Exception) as expected:
        call(torch, torch.eye(2, dtype=torch.float16))
    with pytest.raises(Exception) as got:
        call(tg, tg.eye(2, dtype=tg.float16))
    assert type(got.value) is type(expected.value)
    assert str(got.value) == str(expected.value)
