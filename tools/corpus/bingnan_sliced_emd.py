"""One-dimensional and sliced Wasserstein distances in the style of bingnan-baby/D3ER (swd.py:
projections normalised by their row norms, matmul with the transposed projections, torch.sort of
both projected clouds, the p-th power mean) and of the cumulative-sum EMD losses of
truskovskiyk/nima.pytorch, written afresh with deterministic clouds and histograms; plus the exact
1-D Wasserstein distance from CDFs (argsort, searchsorted, torch.diff), quantile matching, and an
entropic barycentre of two histograms (Bregman projections).

Exercises: torch.sort values/indices and their gradient, abs/pow/mean over dim tuples, cumsum of
softmax outputs, searchsorted(right=True), diff, cat of a zero, quantile, log/exp of kernel
products, Adam steps moving a cloud to minimise the sliced distance.
"""
import torch
import torch.nn as nn

torch.set_printoptions(precision=5)


def projections(dim, n):
    a = torch.arange(n * dim, dtype=torch.float32).view(n, dim)
    w = torch.cos(a * 1.7 + 0.3)
    return w / torch.sqrt(torch.sum(w ** 2, dim=1, keepdim=True))


def sliced(first, second, proj, p=2):
    a = first.matmul(proj.transpose(0, 1))
    b = second.matmul(proj.transpose(0, 1))
    d = torch.abs(torch.sort(a.transpose(0, 1), dim=1)[0] - torch.sort(b.transpose(0, 1), dim=1)[0])
    d = torch.pow(torch.sum(torch.pow(d, p), dim=1), 1.0 / p)
    return torch.pow(torch.pow(d, p).mean(), 1.0 / p)


def sliced_batched(x, y, proj, p=2):
    a = torch.sort((x @ proj.T).transpose(-2, -1), dim=-1)[0]
    b = torch.sort((y @ proj.T).transpose(-2, -1), dim=-1)[0]
    return torch.mean(torch.abs(a - b) ** p, dim=(-2, -1))


def emd(p_target, p_est, r=2):
    diff = torch.cumsum(p_est, dim=1) - torch.cumsum(p_target, dim=1)
    return torch.pow(torch.mean(torch.pow(torch.abs(diff), r), dim=1), 1.0 / r).mean()


def w1d(u, v, p=1):
    us, vs = torch.sort(u)[0], torch.sort(v)[0]
    allv = torch.cat([u, v]).sort().values
    deltas = torch.diff(allv)
    ucdf = torch.searchsorted(us, allv[:-1], right=True).to(u.dtype) / len(u)
    vcdf = torch.searchsorted(vs, allv[:-1], right=True).to(v.dtype) / len(v)
    return torch.sum(torch.abs(ucdf - vcdf) ** p * deltas) ** (1.0 / p)


t = torch.arange(40, dtype=torch.float32)
X = torch.stack([torch.sin(t * 0.9), torch.cos(t * 0.4), torch.sin(t * 0.23) * 2], 1)
Y = torch.stack([torch.cos(t * 0.55) + 1, torch.sin(t * 1.3) * 0.5, torch.cos(t * 0.17)], 1)
P = projections(3, 25)
print("proj norms", P.norm(dim=1)[:3])
print("swd", round(sliced(X, Y, P).item(), 5), round(sliced(X, X, P).item(), 5))
print("batched", sliced_batched(X.view(4, 10, 3), Y.view(4, 10, 3), P))

pts = X.clone().requires_grad_(True)
v, idx = torch.sort(pts[:, 0])
(v * torch.linspace(0, 1, 40)).sum().backward()
print("sort grad", pts.grad[:5, 0], idx[:5])

cloud = nn.Parameter(X[:, :2].clone())
target = Y[:, :2]
opt = torch.optim.Adam([cloud], lr=0.05)
P2 = projections(2, 30)
for step in range(25):
    opt.zero_grad()
    loss = sliced(cloud, target, P2)
    loss.backward()
    opt.step()
    if step % 8 == 0:
        print("step", step, round(loss.item(), 5))
print("moved mean", cloud.mean(0), target.mean(0))

logits = torch.stack([torch.sin(torch.arange(10.) * (k + 1) * 0.3) for k in range(4)]).requires_grad_(True)
tgt = torch.softmax(torch.stack([torch.cos(torch.arange(10.) * (k + 2) * 0.2) for k in range(4)]), 1)
loss = emd(tgt, torch.softmax(logits, 1))
loss.backward()
print("emd", round(loss.item(), 6), logits.grad.abs().sum().item())
print("cumsum dtypes", torch.cumsum(torch.tensor([1, 2, 3]), 0).dtype,
      torch.tensor([True, False, True]).cumsum(0), torch.ones(3).cumsum(0, dtype=torch.float64).dtype)

u = X[:, 0].double()
w = Y[:, 1].double()
print("w1", round(w1d(u, w).item(), 6), "w2", round(w1d(u, w, 2).item(), 6))
q = torch.linspace(0, 1, 11, dtype=torch.float64)
print("quantile gap", (torch.quantile(u, q) - torch.quantile(w, q)).abs().mean().item())

n = 30
grid = torch.arange(n, dtype=torch.float64)
def bump(m, s):
    h = torch.exp(-(grid - m) ** 2 / (2 * s ** 2))
    return h / h.sum()
A = torch.stack([bump(7, 2), bump(22, 3)], 1)
M = (grid[:, None] - grid[None, :]) ** 2
K = torch.exp(-M / M.max() / 1e-2)
for wt in (0.25, 0.5, 0.75):
    weights = torch.tensor([1 - wt, wt], dtype=torch.float64)
    v = torch.ones_like(A)
    for _ in range(100):
        u_ = A / (K @ v)
        Ku = K.T @ u_
        bary = torch.exp((weights * torch.log(Ku)).sum(1))
        v = bary[:, None] / Ku
    print("bary", wt, bary.argmax().item(), round(bary.sum().item(), 4))
