"""Self-supervised contrastive and redundancy-reduction losses on a tiny encoder: SimCLR's
NT-Xent three ways (the diagonal removed by boolean masking and reshape, by fill_diagonal_
with -inf before cross_entropy, and by masked_fill_ of cosine similarities with the positive
pairs picked by a rolled identity mask), a MoCo key queue (einsum logits, a buffer enqueued by
slice assignment under no_grad, an int64 pointer buffer), Barlow Twins' cross-correlation with
the off-diagonal view trick and in-place diagonal updates, VICReg's variance/covariance terms,
and BYOL's normalized regression loss with a momentum target updated in place.

Inspired by MTNeuro/MTNeuro, MTNeuro/self_supervised/loss/nt_xent_loss.py (NT-Xent written
from scratch); written for this corpus.  Weights, views and noise are drawn with numpy.
"""
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.RandomState(11)


def randn(*shape):
    return torch.tensor(rng.randn(*shape), dtype=torch.float32)


def fill_(module, scale=0.4):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.tensor(rng.uniform(-scale, scale, size=tuple(p.shape)), dtype=p.dtype))


def nt_xent_masked(z1, z2, t):
    b = z1.shape[0]
    z = F.normalize(torch.cat((z1, z2)), dim=1)
    logits = z @ z.t()
    mask = torch.eye(2 * b).bool()
    logits = logits[~mask].reshape(2 * b, 2 * b - 1) / t
    labels = torch.cat((torch.arange(b) + b - 1, torch.arange(b)))
    return F.cross_entropy(logits, labels)


def nt_xent_fill(z1, z2, t):
    b = z1.shape[0]
    z = torch.cat([F.normalize(z1, dim=1), F.normalize(z2, dim=1)])
    sim = z @ z.T / t
    sim.fill_diagonal_(float("-inf"))
    targets = torch.cat([torch.arange(b) + b, torch.arange(b)])
    return F.cross_entropy(sim, targets)


def nt_xent_cosine(z1, z2, t):
    feats = torch.cat([z1, z2])
    cos = F.cosine_similarity(feats[:, None, :], feats[None, :, :], dim=-1)
    self_mask = torch.eye(cos.shape[0], dtype=torch.bool)
    cos.masked_fill_(self_mask, -9e15)
    pos_mask = self_mask.roll(shifts=cos.shape[0] // 2, dims=0)
    cos = cos / t
    return (-cos[pos_mask] + torch.logsumexp(cos, dim=-1)).mean()


def off_diagonal(m):
    n = m.shape[0]
    return m.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


def barlow(z1, z2, lam=0.05):
    bn = nn.BatchNorm1d(z1.shape[1], affine=False)
    c = bn(z1).T @ bn(z2)
    c.div_(z1.shape[0])
    on = torch.diagonal(c).add_(-1).pow_(2).sum()
    return on + lam * off_diagonal(c).pow_(2).sum()


def vicreg(z1, z2):
    n, d = z1.shape
    a, b = z1 - z1.mean(dim=0), z2 - z2.mean(dim=0)
    std_a, std_b = torch.sqrt(a.var(dim=0) + 1e-4), torch.sqrt(b.var(dim=0) + 1e-4)
    std = F.relu(1 - std_a).mean() / 2 + F.relu(1 - std_b).mean() / 2
    cov = off_diagonal(a.T @ a / (n - 1)).pow(2).sum() / d + off_diagonal(b.T @ b / (n - 1)).pow(2).sum() / d
    return 25 * F.mse_loss(z1, z2) + 25 * std + cov


def byol(p, z):
    p, z = F.normalize(p, dim=-1, p=2), F.normalize(z, dim=-1, p=2)
    return (2 - 2 * (p * z).sum(dim=-1)).mean()


class Queue(nn.Module):
    def __init__(self, dim, size):
        super().__init__()
        self.size = size
        self.register_buffer("queue", F.normalize(randn(dim, size), dim=0))
        self.register_buffer("ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def push(self, keys):
        n, at = keys.shape[0], int(self.ptr)
        self.queue[:, at:at + n] = keys.T
        self.ptr[0] = (at + n) % self.size


encoder = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 8))
predictor = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
fill_(encoder)
fill_(predictor)
target = copy.deepcopy(encoder)
for p in target.parameters():
    p.requires_grad = False
queue = Queue(8, 24)
opt = torch.optim.SGD(list(encoder.parameters()) + list(predictor.parameters()), lr=0.05,
                      momentum=0.9, weight_decay=1e-4)
base = randn(8, 6)
for step in range(4):
    v1, v2 = base + 0.1 * randn(8, 6), base * 0.9 + 0.1 * randn(8, 6)
    z1, z2 = encoder(v1), encoder(v2)
    losses = {"masked": nt_xent_masked(z1, z2, 0.5), "fill": nt_xent_fill(z1, z2, 0.5),
              "cosine": nt_xent_cosine(z1, z2, 0.5), "barlow": barlow(z1, z2),
              "vicreg": vicreg(z1, z2)}
    with torch.no_grad():
        k = F.normalize(target(v2), dim=1)
    q = F.normalize(z1, dim=1)
    l_pos = torch.einsum("nc,nc->n", [q, k]).unsqueeze(-1)
    l_neg = torch.einsum("nc,ck->nk", [q, queue.queue.clone().detach()])
    logits = torch.cat([l_pos, l_neg], dim=1) / 0.2
    losses["moco"] = F.cross_entropy(logits, torch.zeros(logits.shape[0], dtype=torch.long))
    losses["byol"] = byol(predictor(z1), target(v2).detach()) + byol(predictor(z2), target(v1).detach())
    print(step, " ".join(f"{n}={v.item():.4f}" for n, v in losses.items()))
    total = sum(losses.values())
    opt.zero_grad()
    total.backward()
    opt.step()
    queue.push(k)
    with torch.no_grad():
        for pt, ps in zip(target.parameters(), encoder.parameters()):
            pt.mul_(0.9).add_(ps.detach(), alpha=0.1)
        for bt, bs in zip(target.buffers(), encoder.buffers()):
            bt.copy_(bs)
print("queue ptr", queue.ptr.tolist(), "queue sum", round(queue.queue.sum().item(), 4))
print("grad of first layer", round(encoder[0].weight.grad.abs().sum().item(), 4))
print("target drift", round((target[0].weight - encoder[0].weight).abs().sum().item(), 4))
print("running mean", [round(v, 4) for v in encoder[1].running_mean[:4].tolist()])
print("buffers", sorted(queue.state_dict().keys()), queue.ptr.dtype)
