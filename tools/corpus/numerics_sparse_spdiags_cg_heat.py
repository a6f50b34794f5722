# Implicit heat equation with CSR matrices, sparse @ dense, and a CG solver
import warnings

import torch

warnings.filterwarnings("ignore", category=UserWarning)  # sparse beta / invariant notices

torch.set_printoptions(precision=6)

n = 8
h = 1.0 / (n + 1)
idx_i, idx_j, vals = [], [], []
for i in range(n):
    idx_i.append(i); idx_j.append(i); vals.append(2.0 / h ** 2)
    if i > 0:
        idx_i.append(i); idx_j.append(i - 1); vals.append(-1.0 / h ** 2)
    if i < n - 1:
        idx_i.append(i); idx_j.append(i + 1); vals.append(-1.0 / h ** 2)
A = torch.sparse_coo_tensor([idx_i, idx_j], vals, size=(n, n), dtype=torch.float64)
print(A)
Acsr = A.to_sparse_csr()
print(Acsr.layout, Acsr.crow_indices(), Acsr.col_indices()[:6])
print(Acsr.values()[:3])
u = torch.sin(torch.pi * torch.arange(1, n + 1, dtype=torch.float64) * h)
print("Au/u ~ pi^2:", (Acsr @ u / u)[:3])
print("matmul dense", torch.sparse.mm(A, u.unsqueeze(1)).squeeze(1)[:3])
print("torch.mm", torch.mm(A, u[:, None]).shape)
print("addmm", torch.sparse.addmm(torch.zeros(n, 1, dtype=torch.float64), A, u[:, None]).squeeze()[:2])

crow = torch.tensor([0, 2, 3, 5])
col = torch.tensor([0, 2, 1, 0, 2])
v = torch.tensor([4.0, 1.0, 3.0, 1.0, 5.0])
C = torch.sparse_csr_tensor(crow, col, v, size=(3, 3))
print(C.to_dense())
print(C.to_sparse().indices())
print((C @ torch.ones(3)), C.shape, C.dtype)

dt = 1e-3
I = torch.eye(n, dtype=torch.float64)
M = I + dt * A.to_dense()
def cg(A, b, x0=None, tol=1e-12):
    x = torch.zeros_like(b) if x0 is None else x0.clone()
    r = b - A @ x
    p = r.clone()
    rr = torch.dot(r, r)
    k = 0
    while rr.sqrt() > tol and k < 100:
        Ap = A @ p
        a = rr / torch.dot(p, Ap)
        x.add_(a * p)
        r.sub_(a * Ap)
        rr_new = torch.dot(r, r)
        p.mul_(rr_new / rr).add_(r)
        rr = rr_new
        k += 1
    return x, k
Msp = M.to_sparse()
for step in range(10):
    u, k = cg(Msp, u, u)
print("after 10 implicit steps", u[:4], "cg iters", k)
print("decay factor %.6f" % (u[0] / torch.sin(torch.tensor(torch.pi * h, dtype=torch.float64))).item())
# sparse construction helpers
D = torch.sparse.spdiags(torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), torch.tensor([0, 1]), (3, 3))
print(D.to_dense())
print(torch.sparse_coo_tensor(torch.tensor([[0, 0, 1]]), torch.tensor([1.0, 2.0, 3.0]), (2,)).coalesce())
print(torch.eye(3).to_sparse().mul(2).to_dense().diag())
print(A.t().coalesce().to_dense().equal(A.to_dense().T))
# direct sparse solve where the backend has one, dense LU otherwise
bands = torch.tensor([[-1.0] * n, [2.0] * n, [-1.0] * n], dtype=torch.float64)
T = torch.sparse.spdiags(bands, torch.tensor([-1, 0, 1]), (n, n), layout=torch.sparse_csr)
try:
    sol = torch.sparse.spsolve(T, torch.ones(n, dtype=torch.float64))
except NotImplementedError as err:
    print("spsolve unavailable:", "aten::_spsolve" in str(err))
    sol = torch.linalg.solve(T.to_dense(), torch.ones(n, dtype=torch.float64))
print("tridiagonal solution", sol)
