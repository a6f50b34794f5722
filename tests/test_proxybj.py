"""proxybj: probabilistic numerics and classical algorithms in plain PyTorch (GP / Kalman /
Bayesian-optimisation scripts).  The LU family rounds as PyTorch's getrf (MKL): det, slogdet
and logdet are formed from it as PyTorch forms them, det's first-order gradient solves with it,
and solve_triangular substitutes column by column with reciprocal scaling and fused updates."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _bits(t):
    return t.detach().numpy().tobytes()


# det of small integer matrices as tutorials print them: PyTorch's is the product of the LU's
# diagonal (of A^T), numpy's (what tapegrad used) exp(log|det|)
@pytest.mark.parametrize("arr, shown", [
    ([[4.0, 7.0], [2.0, 6.0]], "tensor(10.0000)"),
    ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]], "tensor(-3.0000)"),
    ([[1.0, 2.0], [2.0, 4.0]], "tensor(-0.)"),
])
def test_det_prints_as_torch(arr, shown):
    assert repr(torch.det(torch.tensor(arr))) == shown
    assert repr(tg.det(tg.tensor(arr))) == shown
    assert repr(tg.linalg.det(tg.tensor(arr))) == shown


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_det_slogdet_lu_bits_match_torch_small(dtype, n, torch_bits):
    rs = np.random.RandomState(7 + n)
    for _ in range(25):
        a = rs.randn(n, n).astype(dtype)
        for arr in (a, a.T):                  # contiguous (LU of A^T) and not (LU of A)
            T, G = torch.from_numpy(arr.copy() if arr is a else arr), tg.from_numpy(arr)
            torch_bits.assert_equal(tg.linalg.det(G).numpy(), torch.linalg.det(T).numpy())
            torch_bits.assert_equal(tg.linalg.slogdet(G)[0].numpy(),
                                    torch.linalg.slogdet(T)[0].numpy())
            torch_bits.assert_equal(tg.linalg.lu_factor(G)[0].numpy(),
                                    torch.linalg.lu_factor(T)[0].numpy())
            assert tg.linalg.lu_factor(G)[1].tolist() == torch.linalg.lu_factor(T)[1].tolist()
        # (log|det| through tapegrad's log, not yet PyTorch's to the last bit)
        T, G = torch.from_numpy(a), tg.from_numpy(a)
        np.testing.assert_allclose(tg.linalg.slogdet(G)[1].numpy(),
                                   torch.linalg.slogdet(T)[1].numpy(),
                                   rtol=1e-6 if torch_bits.reproducible else 1e-5)


def test_lu_factor_subnormal_pivot_turns_column_nan_as_torch():
    arr = [[1e-39, 1.0, 1.0], [0.0, 2.0, 1.0], [0.0, 0.0, 1.0]]
    got = tg.linalg.lu_factor_ex(tg.tensor(arr))
    expected = torch.linalg.lu_factor_ex(torch.tensor(arr))
    np.testing.assert_array_equal(got[0].numpy(), expected[0].numpy())
    assert got[2].item() == expected[2].item() == 0


def test_det_gradient_by_lu_as_torch(torch_bits):
    # a numerically singular matrix whose LU of A^T keeps a tiny pivot: PyTorch's finite
    # adjugate-like gradient (inv through numpy's LU raised LinAlgError)
    arr = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]
    for create_graph in (False, True):
        out = []
        for lib in (torch, tg):
            A = lib.tensor(arr, dtype=lib.float64, requires_grad=True)
            d = lib.linalg.det(A)
            G, = lib.autograd.grad(d, A, create_graph=create_graph)
            out.append((d.item(), G.detach().numpy()))
        if torch_bits.reproducible:
            assert out[0][0] == out[1][0]
            np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-12, atol=1e-12)
        else:
            # PyTorch's LU on other CPUs ends in an exactly zero pivot here, and its gradient
            # then is no longer the adjugate: compare with the cofactors themselves
            cofactors = [[4.0, 4.0, -4.0], [-2.0, -2.0, 2.0], [0.0, 0.0, 0.0]]
            assert abs(out[1][0]) < 1e-14
            np.testing.assert_allclose(out[1][1], cofactors, rtol=1e-12, atol=1e-14)
    A = tg.tensor([[4.0, 7.0], [2.0, 6.0]], dtype=tg.float64, requires_grad=True)
    B = torch.tensor([[4.0, 7.0], [2.0, 6.0]], dtype=torch.float64, requires_grad=True)
    torch_bits.assert_equal(tg.autograd.grad(tg.linalg.det(A), A)[0].numpy(),
                            torch.autograd.grad(torch.linalg.det(B), B)[0].numpy())
    from tapegrad.autograd import gradcheck, gradgradcheck
    C = tg.tensor([[2.0, 1.0, 0.5], [0.3, 1.5, -1.0], [0.0, 0.7, 1.2]], dtype=tg.float64,
                  requires_grad=True)
    assert gradcheck(tg.linalg.det, (C,))
    assert gradgradcheck(tg.linalg.det, (C,))
    assert gradcheck(lambda m: tg.linalg.slogdet(m)[1], (C,))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("upper", [False, True])
def test_solve_triangular_bits_match_torch(dtype, n, upper, torch_bits):
    rs = np.random.RandomState(11 * n + upper)
    for _ in range(20):
        T = (np.triu if upper else np.tril)(rs.randn(n, n) + 3 * np.eye(n)).astype(dtype)
        B = rs.randn(n, 3).astype(dtype)
        got = tg.linalg.solve_triangular(tg.from_numpy(T), tg.from_numpy(B), upper=upper)
        expected = torch.linalg.solve_triangular(torch.from_numpy(T), torch.from_numpy(B),
                                                 upper=upper)
        torch_bits.assert_equal(got.numpy(), expected.numpy())
