"""Point-cloud pieces: squared distances by baddbmm (checked against torch.cdist), k nearest
neighbours with topk(largest=False) and per-batch gathering, a DGCNN-style edge feature built
with flat index arithmetic, a PointNet encoder (shared Conv1d + BatchNorm1d, global max pool,
an input transform regularised towards orthogonality), chamfer distance both ways, and a
Bayes-by-backprop Linear head (softplus scales, reparameterised weights with numpy noise, a
Gaussian KL term and a scale-mixture prior) trained with SGD; prints shapes, losses and grads.

Inspired by murari023/torch3d (cdist/knn/chamfer helpers) and akarakulev/bnn
(Weight-Uncertainty/BayesBackpropagation.py); written for this corpus, all draws from numpy.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rs = np.random.RandomState(3)


def sqdist(x, y):
    xx = x.pow(2).sum(dim=2, keepdim=True)
    yy = y.pow(2).sum(dim=2, keepdim=True).transpose(2, 1)
    return torch.baddbmm(yy, x, y.transpose(2, 1), alpha=-2).add_(xx)


def knn(q, p, k):
    return torch.topk(sqdist(q, p), k, dim=2, largest=False)


def chamfer(x, y):
    d = sqdist(x, y)
    return d.min(1)[0].mean() + d.min(2)[0].mean()


def edge_features(x, k):
    b, c, n = x.shape
    idx = knn(x.transpose(1, 2), x.transpose(1, 2), k)[1]
    idx = (idx + torch.arange(b).view(-1, 1, 1) * n).view(-1)
    pts = x.transpose(2, 1).contiguous()
    neigh = pts.view(b * n, -1)[idx, :].view(b, n, k, c)
    centre = pts.view(b, n, 1, c).repeat(1, 1, k, 1)
    return torch.cat((neigh - centre, centre), dim=3).permute(0, 3, 1, 2).contiguous()


class PointEncoder(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.tnet = nn.Sequential(nn.Conv1d(3, 16, 1), nn.ReLU(), nn.AdaptiveMaxPool1d(1),
                                  nn.Flatten(), nn.Linear(16, 9))
        self.mlp = nn.Sequential(nn.Conv1d(3, 16, 1), nn.BatchNorm1d(16), nn.ReLU(),
                                 nn.Conv1d(16, width, 1), nn.BatchNorm1d(width))

    def forward(self, x):
        t = self.tnet(x).view(-1, 3, 3) + torch.eye(3)
        x = torch.bmm(x.transpose(2, 1), t).transpose(2, 1)
        return torch.max(self.mlp(x), 2, keepdim=False)[0], t


class BayesLinear(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.mu = nn.Parameter(torch.empty(n_out, n_in))
        self.rho = nn.Parameter(torch.full((n_out, n_in), -3.0))
        self.b_mu = nn.Parameter(torch.zeros(n_out))
        self.b_rho = nn.Parameter(torch.full((n_out,), -3.0))

    def forward(self, x, eps_w, eps_b):
        sw, sb = F.softplus(self.rho), torch.log1p(torch.exp(self.b_rho))
        w, b = self.mu + sw * eps_w, self.b_mu + sb * eps_b
        q = torch.distributions.Normal(self.mu, sw)
        kl = torch.distributions.kl_divergence(q, torch.distributions.Normal(0.0, 1.0)).sum()
        prior = torch.log(0.5 * torch.exp(torch.distributions.Normal(0.0, 1.0).log_prob(w))
                          + 0.5 * torch.exp(torch.distributions.Normal(0.0, 0.1).log_prob(w))).sum()
        return F.linear(x, w, b), kl, prior


p = torch.from_numpy(rs.rand(2, 20, 3).astype(np.float32))
q = torch.from_numpy(rs.rand(2, 15, 3).astype(np.float32)).requires_grad_()
d = sqdist(q, p)
print("sqdist", tuple(d.shape), "matches cdist**2:", torch.allclose(d, torch.cdist(q, p) ** 2, atol=1e-5))
dist, idx = knn(q, p, 4)
print("knn", tuple(idx.shape), idx.dtype, idx[0, :3].tolist())
nearest = torch.stack([p[b, i] for b, i in enumerate(torch.unbind(idx[:, :, 0], dim=0))])
print("nearest", tuple(nearest.shape), "%.5f" % (nearest - q).pow(2).sum(-1).sqrt().mean().item())
loss = chamfer(q, p)
loss.backward()
print("chamfer %.5f" % loss.item(), "grad %.5f" % q.grad.abs().sum().item())
e = edge_features(p.transpose(1, 2), 5)
print("edge features", tuple(e.shape), e.is_contiguous(), "%.4f" % e.abs().sum().item())

enc, head = PointEncoder(), BayesLinear(32, 4)
with torch.no_grad():
    for prm in list(enc.parameters()) + [head.mu]:
        prm.copy_(torch.from_numpy(rs.normal(0, 0.2, tuple(prm.shape)).astype(np.float32)))
clouds = torch.from_numpy(rs.rand(6, 3, 32).astype(np.float32))
labels = torch.tensor([0, 1, 2, 3, 1, 0])
opt = torch.optim.SGD(list(enc.parameters()) + list(head.parameters()), lr=0.05, momentum=0.9)
for step in range(4):
    feat, t = enc(clouds)
    eps_w = torch.from_numpy(rs.randn(4, 32).astype(np.float32))
    eps_b = torch.from_numpy(rs.randn(4).astype(np.float32))
    logits, kl, prior = head(feat, eps_w, eps_b)
    reg = torch.linalg.matrix_norm(torch.bmm(t, t.transpose(2, 1)) - torch.eye(3)).mean()
    nll = F.cross_entropy(logits, labels)
    loss = nll + kl / 600.0 + 0.001 * reg
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, "nll %.4f kl %.3f prior %.3f reg %.4f" % (nll.item(), kl.item(), prior.item(), reg.item()))
print("rho grad %.6f" % head.rho.grad.abs().sum().item(), "mu grad %.5f" % head.mu.grad.norm().item())
enc.eval()
with torch.no_grad():
    feat, _ = enc(clouds)
    probs = torch.stack([F.softmax(F.linear(feat, head.mu, head.b_mu), -1) for _ in range(2)]).mean(0)
print("eval", tuple(feat.shape), probs.argmax(1).tolist(), enc.mlp[1].num_batches_tracked.item())
