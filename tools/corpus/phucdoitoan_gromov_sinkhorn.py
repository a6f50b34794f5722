"""Entropic optimal transport between point clouds in the style of phucdoitoan/Optimal-Transport-
Distance (wasserstein.py, gromov_wasserstein.py), written afresh with deterministic clouds: the
scaling Sinkhorn (K @ b, K.T @ a, a threshold break on torch.norm, diag(a) @ K @ diag(b)), the
log-domain variant (logsumexp over (f_i + g_j - C_ij) / eps and its transpose), entropic
Gromov-Wasserstein with the square and KL inner losses (intra-cloud costs, .repeat of the
constant term, a Sinkhorn solve per outer step, float64 inputs), and gradients of the OT cost with
respect to the cloud.

Exercises: unsqueeze(-2)/unsqueeze(-3) broadcasting, torch.exp/log/logsumexp, .T, torch.diag,
torch.norm, repeat, .double(), backward through the unrolled loop, torch.cdist, and the errors
PyTorch raises when a distance matrix or a tensor ** tensor result is changed in place before
backward (both nodes save their output).
"""
import math

import torch
import torch.nn as nn

torch.set_printoptions(precision=5)


def cloud(n, phase, scale=1.0):
    t = torch.arange(n, dtype=torch.float64)
    return torch.stack([torch.cos(t * 0.7 + phase), torch.sin(t * 1.3 - phase) * scale], 1)


def sq_cost(x, y):
    return torch.sum((x.unsqueeze(-2) - y.unsqueeze(-3)) ** 2, dim=-1)


class ScalingSinkhorn(nn.Module):
    def __init__(self, eps, max_iter, thresh=1e-9):
        super().__init__()
        self.eps, self.max_iter, self.thresh = eps, max_iter, thresh

    def forward(self, C, p, q):
        K = torch.exp(-C / self.eps)
        b = torch.ones_like(q)
        for it in range(self.max_iter):
            b_old = b
            a = p / (K @ b)
            b = q / (K.T @ a)
            if torch.norm(b - b_old) < self.thresh:
                break
        T = torch.diag(a) @ K @ torch.diag(b)
        return (T * C).sum(), T, it


class LogSinkhorn(nn.Module):
    def __init__(self, eps, n_iter):
        super().__init__()
        self.eps, self.n_iter = eps, n_iter

    def S(self, C, f, g):
        return (-C + f.unsqueeze(-1) + g.unsqueeze(-2)) / self.eps

    def forward(self, C, p, q):
        f, g = torch.zeros_like(p), torch.zeros_like(q)
        for _ in range(self.n_iter):
            f = f + self.eps * (torch.log(p) - torch.logsumexp(self.S(C, f, g), dim=-1))
            g = g + self.eps * (torch.log(q) - torch.logsumexp(self.S(C, f, g).T, dim=-1))
        P = torch.exp(self.S(C, f, g))
        return (P * C).sum(), P, f, g


def gromov(Cx, Cy, px, py, eps, outer, loss="square"):
    nx, ny = Cx.shape[0], Cy.shape[0]
    if loss == "square":
        f1, f2, h1, h2 = (lambda a: a ** 2), (lambda b: b ** 2), (lambda a: a), (lambda b: 2 * b)
    else:
        f1, f2 = (lambda a: a * torch.log(a) - a), (lambda b: b)
        h1, h2 = (lambda a: a), (lambda b: torch.log(b))
    const = (f1(Cx) @ px.reshape(-1, 1)).repeat((1, ny)) + (py.reshape(1, -1) @ f2(Cy).T).repeat((nx, 1))
    P = px.unsqueeze(-1) * py.unsqueeze(-2)
    solver = LogSinkhorn(eps, 60)
    for _ in range(outer):
        L = 2 * (const - h1(Cx) @ P @ h2(Cy).T)
        _, P, _, _ = solver(L, px, py)
    return torch.sum(P * L), P


x = cloud(12, 0.3)
y = cloud(10, 1.1, 0.6) + torch.tensor([0.5, -0.2], dtype=torch.float64)
p = torch.full((12,), 1 / 12, dtype=torch.float64)
q = torch.full((10,), 1 / 10, dtype=torch.float64)
C = sq_cost(x, y)
print("cost", tuple(C.shape), C.dtype, C.max().item())
for eps in (1.0, 0.3):
    w, T, iters = ScalingSinkhorn(eps, 500)(C, p, q)
    w2, P, f, g = LogSinkhorn(eps, 300)(C, p, q)
    print("eps", eps, "scaling", round(w.item(), 6), "log", round(w2.item(), 6),
          "marginals", T.sum(1)[:3], P.sum(0)[:3])
_, P, f, g = LogSinkhorn(0.05, 400)(C, p, q)
print("small eps plan argmax", P.argmax(1))
print("dual", round((f @ p + g @ q).item(), 6))

gw, Pgw = gromov(sq_cost(x, x), sq_cost(y, y), p, q, 0.05, 8)
print("gw square", round(gw.item(), 6), Pgw.shape, Pgw.sum().item())
gwk, Pk = gromov(sq_cost(x, x) + 0.1, sq_cost(y, y) + 0.1, p, q, 0.5, 5, loss="kl")
print("gw kl", round(gwk.item(), 6), Pk.argmax(1))

# gradient of the entropic cost with respect to the source cloud
xs = x.clone().float().requires_grad_(True)
cost, _, _, _ = LogSinkhorn(0.2, 80)(sq_cost(xs, y.float()), p.float(), q.float())
cost.backward()
print("grad", xs.grad[:3], xs.grad.sum(0))

# a few steps moving the cloud towards y
opt = torch.optim.SGD([xs], lr=0.5)
for step in range(4):
    opt.zero_grad()
    cost, _, _, _ = LogSinkhorn(0.2, 60)(torch.cdist(xs, y.float()) ** 2, p.float(), q.float())
    cost.backward()
    opt.step()
    print("step", step, round(cost.item(), 5))

# in-place changes of saved outputs before backward
d = torch.cdist(xs, y.float())
d.pow_(2)
try:
    d.sum().backward()
except RuntimeError as e:
    print("cdist in-place:", type(e).__name__, "modified by an inplace operation" in str(e))
base = xs.abs() + 1
r = torch.pow(base, torch.full_like(base, 1.5))
r.mul_(2)
try:
    r.sum().backward()
except RuntimeError as e:
    print("pow in-place:", type(e).__name__, "modified by an inplace operation" in str(e))
print(math.isclose(torch.cdist(x, y).pow(2).sum().item(), C.sum().item(), rel_tol=1e-9))
