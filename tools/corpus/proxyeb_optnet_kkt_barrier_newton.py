"""OptNet-style differentiable quadratic programs (written for this corpus, in the manner of
qpth and the OptNet paper's examples): a batch of equality-constrained QPs solved through their
KKT system with torch.cat and batched torch.linalg.solve, differentiated by autograd and by a
hand-written autograd.Function whose backward solves the transposed KKT system (checked with
gradcheck); then an inequality-constrained QP solved by a log-barrier Newton method whose steps
use torch.autograd.functional.jacobian / hessian under no_grad, and the implicit-function-
theorem sensitivity dz*/dq = -H^{-1} d2f/dzdq from a create_graph jacobian.  Data from a seeded
NumPy generator."""
import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Function

rs = np.random.RandomState(1)
torch.set_default_dtype(torch.float64)

def batch_kkt(Q, p, A, b):
    nBatch, nz = p.shape
    neq = A.size(1)
    K = torch.cat([torch.cat([Q, A.transpose(1, 2)], 2),
                   torch.cat([A, torch.zeros(nBatch, neq, neq, dtype=Q.dtype)], 2)], 1)
    rhs = torch.cat([-p, b], 1).unsqueeze(2)
    sol = torch.linalg.solve(K, rhs).squeeze(2)
    return sol[:, :nz], sol[:, nz:]

nBatch, nz, neq = 3, 4, 2
L = torch.tensor(rs.randn(nBatch, nz, nz))
Q = (L @ L.transpose(1, 2) + torch.eye(nz)).requires_grad_()
p = torch.tensor(rs.randn(nBatch, nz), requires_grad=True)
A = torch.tensor(rs.randn(nBatch, neq, nz), requires_grad=True)
b = torch.tensor(rs.randn(nBatch, neq), requires_grad=True)
x, nu = batch_kkt(Q, p, A, b)
print(x.shape, nu.shape, x.dtype)
print("residual", (torch.bmm(A, x.unsqueeze(2)).squeeze(2) - b).abs().max().item() < 1e-10)
print("stationarity", (torch.bmm(Q, x.unsqueeze(2)).squeeze(2) + p + torch.bmm(A.transpose(1, 2), nu.unsqueeze(2)).squeeze(2)).norm().item() < 1e-10)
loss = x.pow(2).sum()
loss.backward()
print(torch.round(p.grad, decimals=4))
print(torch.round(b.grad, decimals=4))
print(Q.grad.shape, A.grad.shape)

class QPFunction(Function):
    @staticmethod
    def forward(ctx, Q, p, A, b):
        x, nu = batch_kkt(Q, p, A, b)
        ctx.save_for_backward(Q, A, x, nu)
        return x

    @staticmethod
    def backward(ctx, dl_dx):
        Q, A, x, nu = ctx.saved_tensors
        nBatch, nz = x.shape
        neq = A.size(1)
        K = torch.cat([torch.cat([Q, A.transpose(1, 2)], 2),
                       torch.cat([A, torch.zeros(nBatch, neq, neq)], 2)], 1)
        rhs = torch.cat([-dl_dx, torch.zeros(nBatch, neq)], 1)
        d = torch.linalg.solve(K.transpose(1, 2), rhs.unsqueeze(-1)).squeeze(-1)
        dx, dnu = d[:, :nz], d[:, nz:]
        dQ = 0.5 * (torch.bmm(dx.unsqueeze(2), x.unsqueeze(1)) + torch.bmm(x.unsqueeze(2), dx.unsqueeze(1)))
        dp = dx
        dA = torch.bmm(dnu.unsqueeze(2), x.unsqueeze(1)) + torch.bmm(nu.unsqueeze(2), dx.unsqueeze(1))
        db = -dnu
        return dQ, dp, dA, db

x2 = QPFunction.apply(Q, p, A, b)
print(torch.allclose(x, x2))
Q.grad = p.grad = A.grad = b.grad = None
x2.pow(2).sum().backward()
print(torch.round(p.grad, decimals=4))
print(torch.round(b.grad, decimals=4))
print(torch.autograd.gradcheck(QPFunction.apply, (Q.detach().requires_grad_(), p, A, b), eps=1e-6, atol=1e-4, raise_exception=False))
print(torch.autograd.gradcheck(lambda p_, A_, b_: QPFunction.apply(Q.detach(), p_, A_, b_), (p, A, b), eps=1e-6, atol=1e-4))

# inequality QP solved by a log-barrier Newton method and implicit differentiation
G = torch.tensor(rs.randn(5, 2))
h = torch.ones(5)
Q1 = torch.eye(2) * 2.0
q1 = torch.tensor([-4.0, 1.0], requires_grad=True)

def barrier_obj(z, q, t):
    return 0.5 * z @ Q1 @ z + q @ z - torch.log(h - G @ z).sum() / t

z = torch.zeros(2)
with torch.no_grad():
    for t in [1.0, 10.0, 100.0, 1000.0]:
        for it in range(30):
            gz = torch.autograd.functional.jacobian(lambda zz: barrier_obj(zz, q1, t), z)
            Hz = torch.autograd.functional.hessian(lambda zz: barrier_obj(zz, q1, t), z)
            step = torch.linalg.solve(Hz, gz)
            s = 1.0
            while ((h - G @ (z - s * step)) <= 0).any():
                s *= 0.5
            z = z - s * step
print("z*", torch.round(z, decimals=3), (h - G @ z).min().item() > 0)
Hz = torch.autograd.functional.hessian(lambda zz: barrier_obj(zz, q1, 1000.0), z)
Jq = torch.autograd.functional.jacobian(lambda qq: torch.autograd.functional.jacobian(lambda zz: barrier_obj(zz, qq, 1000.0), z, create_graph=True), q1)
dz_dq = -torch.linalg.solve(Hz, Jq)
print(torch.round(dz_dq, decimals=3), dz_dq.requires_grad)
