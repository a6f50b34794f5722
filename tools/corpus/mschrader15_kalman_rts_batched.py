"""Batched linear Kalman filter and Rauch-Tung-Striebel smoother in the style of
mschrader15/torch-kalman (vectorized_kalman.py: many tracks filtered at once with batched
F @ P @ F^T + Q, pinverse of the innovation covariance, a Joseph-form update, eigh-based
log-likelihood with jitter, matrix_rank) written afresh for this corpus.

Exercises: torch.Tensor(np.array) / torch.FloatTensor(np.array) construction, masked row
updates (x[t, mask] = ...), bmm / @ on (V, n, n) batches, transpose(-1, -2) / .mT, pinverse,
linalg.inv, linalg.solve, logdet / slogdet / det printed on small matrices, eigh, matrix_rank,
cholesky, a smoother gain through torch.inverse, MultivariateNormal over the batch, and the
gradient of the filter's log-likelihood with respect to a noise scale.
"""
import numpy as np
import torch

torch.set_printoptions(precision=5)

V, T, n, m = 3, 6, 4, 2            # tracks, steps, state (x, vx, y, vy), measurement (x, y)
dt = torch.tensor([0.1, 0.2, 0.15])
H = torch.FloatTensor(np.array([[1, 0, 0, 0], [0, 0, 1, 0]]))
R = torch.Tensor(np.array([[0.5, 0.0], [0.0, 0.3]]))


def transition(dt):
    F = torch.eye(n).repeat(len(dt), 1, 1)
    F[:, 0, 1] = dt
    F[:, 2, 3] = dt
    return F


def process_noise(dt, q):
    G = torch.zeros(len(dt), n, 1)
    G[:, 0, 0] = 0.5 * dt ** 2
    G[:, 1, 0] = dt
    G[:, 2, 0] = 0.5 * dt ** 2
    G[:, 3, 0] = dt
    return q * (G @ G.transpose(-1, -2)) + 1e-4 * torch.eye(n)


steps = torch.arange(T, dtype=torch.float32)
z = torch.stack([torch.stack([torch.cos(0.4 * steps + k), torch.sin(0.3 * steps - k)], -1)
                 for k in range(V)], 1)                      # (T, V, m)
mask = torch.ones(T, V, dtype=torch.bool)
mask[2, 1] = False                                          # a missed detection: predict only
print("z", z.shape, z.dtype, "observed", int(mask.sum()))

log_q = torch.tensor(0.0, requires_grad=True)
F = transition(dt)
Q = process_noise(dt, log_q.exp())
x = torch.zeros(T, V, n)
P = torch.zeros(T, V, n, n)
x[0] = z[0] @ H
P[0] = torch.eye(n) * 2
xs, Ps, xps, Pps = [x[0]], [P[0]], [x[0]], [P[0]]
ll = torch.zeros(V)
for t in range(1, T):
    xp = (F @ xs[-1].unsqueeze(-1)).squeeze(-1)
    Pp = F @ Ps[-1] @ F.transpose(-1, -2) + Q
    xps.append(xp)
    Pps.append(Pp)
    y = z[t] - (H @ xp.unsqueeze(-1)).squeeze(-1)
    S = H @ Pp @ H.T + R
    K = Pp @ H.T @ torch.pinverse(S)
    I_KH = torch.eye(n) - K @ H
    xu = xp + (K @ y.unsqueeze(-1)).squeeze(-1)
    Pu = I_KH @ Pp @ I_KH.mT + K @ R @ K.mT
    keep = mask[t]
    xs.append(torch.where(keep[:, None], xu, xp))
    Ps.append(torch.where(keep[:, None, None], Pu, Pp))
    maha = (y.unsqueeze(-2) @ torch.linalg.solve(S, y.unsqueeze(-1))).squeeze()
    ll = ll + torch.where(keep, -0.5 * (torch.logdet(S) + maha + m * np.log(2 * np.pi)),
                          torch.zeros(V))
print("log-likelihood", ll)
ll.sum().backward()
print("d ll / d log q", log_q.grad)

vals, vecs = torch.linalg.eigh(S.detach())
print("eigh", vals, torch.linalg.matrix_rank(vecs * vals.rsqrt().unsqueeze(-2)))
print("det / slogdet of S[0]", torch.det(S[0].detach()), torch.linalg.slogdet(S[0].detach()))
print("inv vs pinverse", torch.allclose(torch.linalg.inv(S.detach()), torch.pinverse(S.detach()),
                                        atol=1e-5))

xs_s, Ps_s = [xs[-1].detach()], [Ps[-1].detach()]
for t in range(T - 2, -1, -1):
    G = Ps[t].detach() @ F.mT @ torch.inverse(Pps[t + 1].detach())
    xs_s.insert(0, xs[t].detach() + (G @ (xs_s[0] - xps[t + 1].detach()).unsqueeze(-1)).squeeze(-1))
    Ps_s.insert(0, Ps[t].detach() + G @ (Ps_s[0] - Pps[t + 1].detach()) @ G.mT)
X = torch.stack(xs_s)
print("smoothed x of track 0", X[:, 0, 0])
print("smoothed var", torch.diagonal(torch.stack(Ps_s), dim1=-2, dim2=-1)[-1])
L = torch.linalg.cholesky(0.5 * (Ps_s[0] + Ps_s[0].mT))
print("cholesky diag", torch.diagonal(L, dim1=-2, dim2=-1)[0])
mvn = torch.distributions.MultivariateNormal(X[-1], scale_tril=L)
print("mvn", mvn.batch_shape, mvn.event_shape,
      [round(v, 4) for v in mvn.log_prob(X[-1] + 0.1).tolist()])
print("classic dets", torch.det(torch.tensor([[4.0, 7.0], [2.0, 6.0]])),
      torch.det(torch.tensor([[1.0, 2.0], [2.0, 4.0]])),
      torch.det(torch.tensor([[2.0, 0.0, 1.0], [1.0, 3.0, 2.0], [1.0, 1.0, 1.0]])))
