"""Entropic optimal transport in log space in the style of syq2021/PMFA (loss/sinkhorn.py:
a SinkhornDistance module alternating logsumexp updates of the dual potentials u, v over the
modified cost (-C + u_i + v_j) / eps, then the plan exp(M) detached and the cost sum(pi * C)),
written afresh with batched point clouds, plus the exact 1-D Wasserstein distance from sorted
samples and a sliced Wasserstein distance with fixed projections.

Exercises: FloatTensor(n).fill_, unsqueeze broadcasting into a (B, N, M) cost, abs ** p and
cdist(p=2/1), logsumexp over the last two dims with transpose(-2, -1), detach of the plan,
marginals of the plan, gradients of the Sinkhorn cost with respect to the point positions,
a few Adam steps moving a point cloud, sort along dim 0, and torch.norm of projections.
"""
import torch

torch.set_printoptions(precision=5)


class Sinkhorn(torch.nn.Module):
    def __init__(self, n, m, eps=0.1, iters=60):
        super().__init__()
        self.eps, self.iters = eps, iters
        self.mu = 1.0 / n * torch.FloatTensor(n).fill_(1)
        self.nu = 1.0 / m * torch.FloatTensor(m).fill_(1)

    def cost(self, x, y, p=2):
        return torch.sum(torch.abs(x.unsqueeze(-2) - y.unsqueeze(-3)) ** p, -1)

    def modified(self, C, u, v):
        return (-C + u.unsqueeze(-1) + v.unsqueeze(-2)) / self.eps

    def forward(self, x, y):
        C = self.cost(x, y)
        u = torch.zeros(x.shape[:-1])
        v = torch.zeros(y.shape[:-1])
        for _ in range(self.iters):
            u = self.eps * (torch.log(self.mu + 1e-8)
                            - torch.logsumexp(self.modified(C, u, v), dim=-1)) + u
            v = self.eps * (torch.log(self.nu + 1e-8)
                            - torch.logsumexp(self.modified(C, u, v).transpose(-2, -1), dim=-1)) + v
        pi = torch.exp(self.modified(C, u, v)).detach()
        return torch.sum(pi * C, dim=(-2, -1)), pi, C


t = torch.linspace(0, 2 * torch.pi, 9)[:-1]
x = torch.stack([torch.cos(t), torch.sin(t)], -1)                     # (8, 2) ring
y = torch.stack([0.5 * torch.cos(t + 0.3) + 1.0, 1.5 * torch.sin(t + 0.3)], -1)
xb = torch.stack([x, 0.8 * x]).requires_grad_()                        # (2, 8, 2) batch
yb = torch.stack([y, y - 0.5])
sk = Sinkhorn(8, 8, eps=0.1, iters=60)
cost, pi, C = sk(xb, yb)
print("cost", cost, cost.grad_fn is not None)
print("C equals cdist^2", torch.allclose(C, torch.cdist(xb, yb) ** 2, atol=1e-5))
print("plan marginals", pi.sum(-1)[0], pi.sum(-2)[1])
cost.sum().backward()
print("grad", xb.grad[0, :3])

pts = x.clone().requires_grad_()
opt = torch.optim.Adam([pts], lr=0.05)
for step in range(5):
    opt.zero_grad()
    c, _, _ = sk(pts, y)
    c.backward()
    opt.step()
    print(step, round(c.item(), 5))
print("moved", pts.detach()[:2])


def wasserstein_1d(a, b, p=1):
    a_sorted = torch.sort(a, dim=0)[0]
    b_sorted = torch.sort(b, dim=0)[0]
    return torch.mean(torch.abs(a_sorted - b_sorted) ** p, dim=0)


theta = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [-0.8, 0.6]])
theta = theta / torch.norm(theta, dim=1, keepdim=True)
proj_x, proj_y = x @ theta.T, y @ theta.T
print("1-D W1 per projection", wasserstein_1d(proj_x, proj_y))
print("sliced W2", torch.pow(wasserstein_1d(proj_x, proj_y, p=2).mean(), 0.5))
print("cdist p=1", torch.cdist(x[:3], y[:3], p=1))
