"""Matrix and tensor factorisation by alternating least squares, as tensor-decomposition
tutorials and recommender notebooks write it in torch: masked ALS for matrix completion with
per-user normal equations batched through einsum and solved by linalg.solve and
cholesky_solve (with a gradient through both), batched and broadcast linalg.lstsq (including a
single A against a shared right-hand side), then CP-ALS with a Khatri-Rao product from einsum,
mode-n unfolding by moveaxis/reshape and pinv of the Hadamard Gram, and Tucker by HOSVD+HOOI.
Initial factors come from numpy generators; only sign-free quantities are printed."""
import torch
import numpy as np

rng = np.random.default_rng(81)
nu, ni, k = 30, 20, 3
R = torch.tensor(rng.normal(size=(nu, k)) @ rng.normal(size=(k, ni)), dtype=torch.float32)
M = torch.tensor(rng.uniform(size=(nu, ni)) < 0.5).float()
U = torch.tensor(np.random.default_rng(0).normal(size=(nu, k)), dtype=torch.float32)
V = torch.tensor(np.random.default_rng(1).normal(size=(ni, k)), dtype=torch.float32)
lam = 0.1
I = torch.eye(k)
for it in range(15):
    A = torch.einsum('ui,ik,il->ukl', M, V, V) + lam * I
    b = torch.einsum('ui,ui,ik->uk', M, R, V)
    U = torch.linalg.solve(A, b)
    A = torch.einsum('ui,uk,ul->ikl', M, U, U) + lam * I
    b = (M * R).T @ U
    L = torch.linalg.cholesky(A)
    V = torch.cholesky_solve(b.unsqueeze(-1), L).squeeze(-1)
    if it % 5 == 0:
        loss = ((M * (R - U @ V.T)) ** 2).sum() / M.sum()
        print(f"iter {it} loss {loss.item():.6f}")
print(A.shape, b.shape, L.shape)
print("observed rmse < 0.05:", torch.sqrt(((M * (R - U @ V.T)) ** 2).sum() / M.sum()).item() < 0.05)
print("heldout rmse", round(torch.sqrt((((1 - M) * (R - U @ V.T)) ** 2).sum() / (1 - M).sum()).item(), 2) < 1.0)
# batched lstsq with broadcasting
Xb = torch.tensor(rng.normal(size=(4, 10, 3)))
yb = torch.tensor(rng.normal(size=(4, 10, 2)))
sol = torch.linalg.lstsq(Xb, yb)
print(sol.solution.shape, sol.residuals.shape, sol.rank, sol.singular_values)
sol1 = torch.linalg.lstsq(Xb[:1], yb[0])
print(sol1.solution.shape, torch.allclose(sol1.solution[3], torch.linalg.lstsq(Xb[0], yb[0]).solution))
try:
    torch.linalg.lstsq(Xb, yb[0])
except RuntimeError as e:
    print("RuntimeError:", e)
print(torch.allclose(sol.solution, torch.linalg.pinv(Xb) @ yb))
print(torch.linalg.solve(torch.eye(3).expand(5, 3, 3), torch.ones(5, 3)).shape)
print(torch.linalg.solve(torch.eye(3).expand(5, 3, 3), torch.ones(3)).shape)
print(torch.linalg.solve(torch.eye(3).expand(5, 3, 3), torch.ones(3, 2)).shape)
print(torch.linalg.solve(torch.eye(3), torch.ones(4, 3, 2)).shape)
print(torch.linalg.inv(A).shape, torch.linalg.det(A).shape, torch.linalg.slogdet(A)[1].shape)
print(torch.linalg.eigvalsh(A)[:2], torch.linalg.svdvals(A[:2]))
print(torch.linalg.matrix_rank(Xb), torch.linalg.matrix_norm(Xb).shape, torch.linalg.norm(Xb, dim=(1, 2)))
Ab = A.clone().requires_grad_()
bb = torch.ones(ni, k, requires_grad=True)
out = torch.linalg.solve(Ab, bb).sum() + torch.cholesky_solve(bb.unsqueeze(-1), torch.linalg.cholesky(Ab)).sum()
out.backward()
print(Ab.grad.abs().sum(), bb.grad.sum())
print(torch.bmm(Xb.transpose(1, 2), Xb).shape, torch.matmul(Xb, torch.ones(3, dtype=Xb.dtype)).shape, (Xb @ torch.ones(3, 1, dtype=torch.float64)).shape)

# -- CP and Tucker decompositions of a 3-way tensor
torch.set_printoptions(precision=4)
rng = np.random.default_rng(4)
I, J, K, R = 6, 5, 4, 2
A0 = torch.tensor(rng.normal(size=(I, R)))
B0 = torch.tensor(rng.normal(size=(J, R)))
C0 = torch.tensor(rng.normal(size=(K, R)))
T = torch.einsum('ir,jr,kr->ijk', A0, B0, C0)
print(T.shape, T.dtype)

def unfold(tensor, mode):
    return torch.moveaxis(tensor, mode, 0).reshape(tensor.shape[mode], -1)

def fold(mat, mode, shape):
    full = [shape[mode]] + [s for i, s in enumerate(shape) if i != mode]
    return torch.moveaxis(mat.reshape(full), 0, mode)

print(torch.equal(fold(unfold(T, 1), 1, T.shape), T))
print(unfold(T, 0).shape, unfold(T, 1).shape, unfold(T, 2).shape)

def khatri_rao(A, B):
    return torch.einsum('ir,jr->ijr', A, B).reshape(-1, A.shape[1])

def cp_als(T, rank, n_iter=50):
    g = np.random.default_rng(0)
    factors = [torch.tensor(g.normal(size=(s, rank))) for s in T.shape]
    for it in range(n_iter):
        for mode in range(3):
            others = [factors[m] for m in range(3) if m != mode]
            kr = khatri_rao(others[0], others[1])
            gram = (others[0].T @ others[0]) * (others[1].T @ others[1])
            factors[mode] = unfold(T, mode) @ kr @ torch.linalg.pinv(gram)
    return factors

A, B, C = cp_als(T, R)
T_hat = torch.einsum('ir,jr,kr->ijk', A, B, C)
print("CP rel error < 1e-6:", (torch.norm(T - T_hat) / torch.norm(T)).item() < 1e-6)
# lstsq variant
A2 = torch.linalg.lstsq(khatri_rao(B, C), unfold(T, 0).T).solution.T
print(torch.allclose(A2, A, atol=1e-6))
sol = torch.linalg.lstsq(khatri_rao(B, C), unfold(T, 0).T)
print(sol.solution.shape, sol.residuals.shape, sol.rank, sol.singular_values)
# weights / normalisation
lam = A.norm(dim=0) * B.norm(dim=0) * C.norm(dim=0)
print(torch.sort(lam, descending=True).values.shape)

# Tucker via HOSVD then HOOI
def mode_dot(tensor, matrix, mode):
    new_shape = list(tensor.shape)
    new_shape[mode] = matrix.shape[0]
    res = matrix @ unfold(tensor, mode)
    return fold(res, mode, new_shape)

X = torch.tensor(rng.normal(size=(6, 5, 4)))
ranks = (3, 3, 2)
U = [torch.linalg.svd(unfold(X, m), full_matrices=False)[0][:, :r] for m, r in enumerate(ranks)]
for it in range(10):
    for m in range(3):
        Y = X
        for n in range(3):
            if n != m:
                Y = mode_dot(Y, U[n].T, n)
        U[m] = torch.linalg.svd(unfold(Y, m), full_matrices=False)[0][:, :ranks[m]]
core = X
for m in range(3):
    core = mode_dot(core, U[m].T, m)
print("core", core.shape)
rec = core
for m in range(3):
    rec = mode_dot(rec, U[m], m)
err = torch.norm(X - rec) / torch.norm(X)
print("tucker err %.6f" % err)
print("core norm^2 + err^2 = total:", torch.isclose(core.norm() ** 2 + (X - rec).norm() ** 2, X.norm() ** 2))
G2 = torch.einsum('ijk,ia,jb,kc->abc', X, U[0], U[1], U[2])
print(torch.allclose(G2, core))
print(torch.tensordot(X, U[0], dims=([0], [0])).shape)
print(torch.kron(torch.eye(2), torch.ones(2, 2)))
print(torch.linalg.matrix_norm(unfold(X, 0), ord='nuc') >= torch.linalg.matrix_norm(unfold(X, 0), ord=2))
print(torch.linalg.norm(X), torch.linalg.vector_norm(X, ord=1))
