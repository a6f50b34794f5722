"""torch.linalg as small numerical scripts use it: solve, inv, det, eigh, svd, qr, lstsq, norms."""
import torch

A = torch.tensor([[4.0, 1.0, 2.0], [1.0, 3.0, 0.5], [2.0, 0.5, 5.0]])
b = torch.tensor([1.0, 2.0, 3.0])

x = torch.linalg.solve(A, b)
print('solve:', x)
print('residual ok:', torch.allclose(A @ x, b, atol=1e-5))
B = torch.stack([b, 2 * b], dim=1)
print('solve matrix rhs:', torch.linalg.solve(A, B).shape)

A_inv = torch.linalg.inv(A)
print('inv:\n', A_inv)
print('A @ inv is eye:', torch.allclose(A @ A_inv, torch.eye(3), atol=1e-5))
print('det:', torch.linalg.det(A), torch.det(A))
sign, logabsdet = torch.linalg.slogdet(A)
print('slogdet:', sign, logabsdet)
print('logdet:', torch.logdet(A))

evals, evecs = torch.linalg.eigh(A)
print('eigh values:', evals)
print('eigh reconstructs:', torch.allclose(evecs @ torch.diag(evals) @ evecs.T, A, atol=1e-5))
print('eigvalsh:', torch.linalg.eigvalsh(A))

C = torch.arange(1.0, 7.0).reshape(3, 2)
U, S, Vh = torch.linalg.svd(C, full_matrices=False)
print('svd shapes:', U.shape, S.shape, Vh.shape)
print('singular values:', S)
print('svdvals:', torch.linalg.svdvals(C))
print('svd reconstructs:', torch.allclose(U @ torch.diag(S) @ Vh, C, atol=1e-5))
U_full, S_full, Vh_full = torch.linalg.svd(C)
print('full svd shapes:', U_full.shape, Vh_full.shape)

Q, R = torch.linalg.qr(C)
print('qr shapes:', Q.shape, R.shape)
print('Q orthonormal:', torch.allclose(Q.T @ Q, torch.eye(2), atol=1e-5))
print('R upper:', torch.equal(R, torch.triu(R)))
print('|diag R|:', R.diagonal().abs())

X = torch.tensor([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0], [1.0, 4.0]])
y = torch.tensor([[6.0], [5.0], [7.0], [10.0]])
sol = torch.linalg.lstsq(X, y)
print('lstsq solution:', sol.solution.squeeze())
print('lstsq via pinv:', (torch.linalg.pinv(X) @ y).squeeze())

v = torch.tensor([3.0, -4.0, 12.0])
print('norms:', torch.linalg.norm(v), torch.linalg.norm(v, ord=1), torch.linalg.norm(v, ord=float('inf')))
print('vector_norm:', torch.linalg.vector_norm(v, ord=3))
print('matrix norms:', torch.linalg.norm(A), torch.linalg.matrix_norm(A, ord='fro'), torch.linalg.matrix_norm(A, ord=1))
print('nuclear and spectral:', torch.linalg.matrix_norm(C, ord='nuc'), torch.linalg.matrix_norm(C, ord=2))
print('tensor.norm:', v.norm(), v.norm(p=1), A.norm(dim=1))

Lc = torch.linalg.cholesky(A)
print('cholesky lower:', torch.equal(Lc, torch.tril(Lc)), torch.allclose(Lc @ Lc.T, A, atol=1e-5))
print('matrix_rank:', torch.linalg.matrix_rank(C), torch.linalg.matrix_rank(torch.ones(3, 3)))
print('matrix_power:', torch.linalg.matrix_power(torch.tensor([[1, 1], [1, 0]]), 10))
print('cross:', torch.linalg.cross(torch.tensor([1.0, 0.0, 0.0]), torch.tensor([0.0, 1.0, 0.0])))
print('multi_dot:', torch.linalg.multi_dot([A, A_inv, b.unsqueeze(1)]).squeeze())
print('cond:', torch.linalg.cond(torch.tensor([[1.0, 0.0], [0.0, 4.0]])))

batch = torch.stack([A, 2 * A])
print('batched det:', torch.linalg.det(batch))
print('batched inv shape:', torch.linalg.inv(batch).shape)

P = torch.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
torch.linalg.det(P).backward()
print('d det / dP:', P.grad)
P.grad = None
torch.linalg.inv(P).sum().backward()
print('d sum(inv) / dP:', P.grad)

try:
    torch.linalg.inv(torch.ones(2, 3))
except RuntimeError as e:
    print('inv of non-square: RuntimeError')
try:
    torch.linalg.solve(torch.zeros(2, 2), torch.ones(2))
except RuntimeError as e:
    print('singular solve:', isinstance(e, torch.linalg.LinAlgError))
