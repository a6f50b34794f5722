# Singular and ill-conditioned matrices as a numerical linear algebra notebook shows them:
# determinants, the inverse PyTorch's float32 LU gives a matrix singular only in exact
# arithmetic, the LinAlgError of an exactly singular one, pinv, cond and matrix_rank.
import torch

torch.set_printoptions(precision=4)

A = torch.tensor([[1., 2., 3.], [4., 5., 6.], [7., 8., 9.]])
print("det:", torch.det(A), torch.linalg.slogdet(A))
try:
    Ainv = torch.linalg.inv(A)
    print("inverse of a 'singular' float32 matrix:")
    print(Ainv)
    print("max |A A^-1 - I| > 0.1:", ((A @ Ainv) - torch.eye(3)).abs().max().item() > 0.1)
except RuntimeError as e:
    print("inv failed:", e)

S = torch.tensor([[1., 2.], [2., 4.]])
print(torch.linalg.det(S), S.det(), torch.linalg.slogdet(S))
for name, fn in [("inv", lambda: torch.linalg.inv(S)),
                 ("inverse batch", lambda: torch.inverse(torch.stack([torch.eye(2), S]))),
                 ("solve", lambda: torch.linalg.solve(S, torch.ones(2))),
                 ("cholesky", lambda: torch.linalg.cholesky(S))]:
    try:
        fn()
    except torch.linalg.LinAlgError as e:
        print(name, "->", type(e).__name__, e)
print(torch.linalg.inv_ex(S).info, torch.linalg.cholesky_ex(S).info)
print("pinv:", torch.linalg.pinv(S))
print("pinv hermitian:", torch.linalg.pinv(S, hermitian=True))
print("rank:", torch.linalg.matrix_rank(S), torch.linalg.matrix_rank(A.double()))

# Hilbert matrices: the condition number grows, float32 gives up first
print(f"{'n':>2} {'cond':>10} {'err64':>6} {'err32':>6}")
for n in [2, 4, 6, 8, 10]:
    i = torch.arange(n, dtype=torch.float64)
    H = 1.0 / (i[:, None] + i[None, :] + 1)
    x = torch.ones(n, dtype=torch.float64)
    b = H @ x
    x64 = torch.linalg.solve(H, b)
    x32 = torch.linalg.solve(H.float(), b.float())
    err64 = (x64 - x).abs().max().item()
    err32 = (x32.double() - x).abs().max().item()
    print(f"{n:>2} {torch.linalg.cond(H).item():>10.2e} {err64 < 1e-3!s:>6} {err32 < 1e-3!s:>6}")

# determinant by hand through the LU factors
B = torch.tensor([[2., 1., 1.], [4., -6., 0.], [-2., 7., 2.]], dtype=torch.float64)
P, L, U = torch.linalg.lu(B)
sign = torch.linalg.det(P)
print("P:", P, sep="\n")
print("det via LU:", (sign * U.diagonal().prod()).item(), "det:", torch.linalg.det(B).item())
print("inv:", torch.linalg.inv(B), sep="\n")
print(torch.allclose(torch.linalg.inv(B) @ B, torch.eye(3, dtype=torch.float64)))
