"""Contrastive and metric-learning objectives as HobbitLong/SupContrast, facebookresearch/moco
and common triplet-mining code write them, small and deterministic: a supervised-contrastive
loss (views unbound and concatenated, a label mask tiled with repeat, the self-contrast mask made
by torch.scatter on ones_like, logits shifted by a detached row max), its 'one' anchor mode and
errors, a MoCo key encoder updated by momentum under no_grad with a registered queue buffer
re-assigned after F.normalize, einsum logits and a pointer buffer; online hard mining through
cdist with eq/ne masks on expanded labels, argmax/argmin over boolean-masked rows and
TripletMarginLoss(swap=True); TripletMarginWithDistanceLoss with a cosine distance; NT-Xent
with an eye mask and logsumexp; SimSiam's stop-gradient.  Prints losses, gradient norms and
buffer states."""
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def fill(module, scale=0.4):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=p.dtype) * (0.53 + 0.07 * i)).reshape(p.shape) * scale)
    return module


def supcon(features, labels=None, mask=None, temperature=0.5, mode="all"):
    if features.dim() < 3:
        raise ValueError("`features` needs to be [bsz, n_views, ...]")
    features = features.view(features.shape[0], features.shape[1], -1)
    bsz = features.shape[0]
    if labels is not None and mask is not None:
        raise ValueError("Cannot define both `labels` and `mask`")
    if labels is None and mask is None:
        mask = torch.eye(bsz, dtype=torch.float32)
    elif labels is not None:
        labels = labels.contiguous().view(-1, 1)
        mask = torch.eq(labels, labels.T).float()
    else:
        mask = mask.float()
    views = features.shape[1]
    contrast = torch.cat(torch.unbind(features, dim=1), dim=0)
    anchor, anchors = (features[:, 0], 1) if mode == "one" else (contrast, views)
    logits = torch.div(anchor @ contrast.T, temperature)
    row_max, _ = torch.max(logits, dim=1, keepdim=True)
    logits = logits - row_max.detach()
    mask = mask.repeat(anchors, views)
    self_mask = torch.scatter(torch.ones_like(mask), 1, torch.arange(bsz * anchors).view(-1, 1), 0)
    mask = mask * self_mask
    log_prob = logits - torch.log((torch.exp(logits) * self_mask).sum(1, keepdim=True) + 1e-9)
    mean_pos = (mask * log_prob).sum(1) / mask.sum(1)
    return (-mean_pos).view(anchors, bsz).mean()


class Encoder(nn.Module):
    def __init__(self, dim=6):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 12), nn.BatchNorm1d(12), nn.ReLU())
        self.fc = nn.Linear(12, dim)

    def forward(self, x):
        return self.fc(self.body(x))


class MoCo(nn.Module):
    def __init__(self, dim=6, K=12, m=0.9, T=0.2):
        super().__init__()
        self.K, self.m, self.T = K, m, T
        self.encoder_q = fill(Encoder(dim))
        self.encoder_k = Encoder(dim)
        for pq, pk in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            pk.data.copy_(pq.data)
            pk.requires_grad = False
        self.register_buffer("queue", torch.cos(torch.arange(dim * K, dtype=torch.float32)).view(dim, K))
        self.queue = F.normalize(self.queue, dim=0)
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def momentum_update(self):
        for pq, pk in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            pk.mul_(self.m).add_(pq.mul(1. - self.m))

    @torch.no_grad()
    def enqueue(self, keys):
        ptr = int(self.queue_ptr)
        self.queue[:, ptr:ptr + keys.shape[0]] = keys.T
        self.queue_ptr[0] = (ptr + keys.shape[0]) % self.K

    def forward(self, im_q, im_k):
        q = F.normalize(self.encoder_q(im_q), dim=1)
        with torch.no_grad():
            self.momentum_update()
            k = F.normalize(self.encoder_k(im_k), dim=1)
        l_pos = torch.einsum("nc,nc->n", [q, k]).unsqueeze(-1)
        l_neg = torch.einsum("nc,ck->nk", [q, self.queue.clone().detach()])
        logits = torch.cat([l_pos, l_neg], dim=1) / self.T
        self.enqueue(k)
        return logits, torch.zeros(logits.shape[0], dtype=torch.long)


def hard_mining(feats, labels, margin=0.3):
    crit = nn.TripletMarginLoss(margin=margin, swap=True)
    with torch.no_grad():
        n = labels.size(0)
        dist = torch.cdist(feats, feats)
        is_pos = labels.expand(n, n).eq(labels.expand(n, n).t())
        is_neg = labels.expand(n, n).ne(labels.expand(n, n).t())
        p_rel = torch.argmax(dist[is_pos].contiguous().view(n, -1), 1)
        n_rel = torch.argmin(dist[is_neg].contiguous().view(n, -1), 1)
        pos_idx = is_pos.nonzero()[:, 1].view(n, -1).gather(1, p_rel.unsqueeze(1)).squeeze(1)
        neg_idx = is_neg.nonzero()[:, 1].view(n, -1).gather(1, n_rel.unsqueeze(1)).squeeze(1)
    return crit(feats, feats[pos_idx], feats[neg_idx]), pos_idx, neg_idx


def nt_xent(z1, z2, tau=0.3):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    n = z1.shape[0]
    sim = (z @ z.t() / tau).masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    pos = torch.cat([torch.diagonal(sim, n), torch.diagonal(sim, -n)])
    return (torch.logsumexp(sim, dim=1) - pos).mean()


base = torch.linspace(-1, 1, 6 * 2 * 4).view(6, 2, 4)
feats = F.normalize(torch.sin(base * 3) + 0.1 * base, dim=-1).requires_grad_()
labels = torch.tensor([0, 1, 0, 2, 1, 0])
for mode in ("all", "one"):
    for kw in ({}, {"labels": labels}, {"mask": (labels[:, None] == labels[None]).int()}):
        loss = supcon(feats, mode=mode, **kw)
        loss.backward()
        print("supcon", mode, sorted(kw), round(loss.item(), 5), round(feats.grad.norm().item(), 5))
        feats.grad = None
for bad in ({"features": feats[0, 0]}, {"features": feats, "labels": labels, "mask": torch.eye(6)}):
    try:
        supcon(**bad)
    except ValueError as e:
        print("ValueError:", e)

moco = MoCo()
print(sorted(dict(moco.named_buffers()))[-2:], moco.queue.norm(dim=0)[:3], moco.queue_ptr)
opt = torch.optim.SGD([p for p in moco.parameters() if p.requires_grad], lr=0.1, momentum=0.9,
                      weight_decay=1e-4)
for step in range(4):
    x = torch.cos(torch.arange(40, dtype=torch.float32).view(4, 10) * (0.3 + 0.1 * step))
    logits, target = moco(x + 0.05 * torch.sin(x * 7), x)
    loss = F.cross_entropy(logits, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("moco", step, tuple(logits.shape), round(loss.item(), 4), moco.queue_ptr.item(),
          round(moco.queue.sum().item(), 4), round(moco.encoder_k.fc.weight.sum().item(), 5))

emb = torch.sin(torch.arange(8 * 5, dtype=torch.float32).view(8, 5) * 0.7).requires_grad_()
cls = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
loss, pos_idx, neg_idx = hard_mining(emb, cls)
loss.backward()
print("mining", round(loss.item(), 5), pos_idx.tolist(), neg_idx.tolist(), round(emb.grad.abs().sum().item(), 5))
emb.grad = None
cos_dist = lambda a, b: 1.0 - F.cosine_similarity(a, b)
twd = nn.TripletMarginWithDistanceLoss(distance_function=cos_dist, margin=0.5, swap=True)
loss = twd(emb[0::2], emb[1::2], emb[[2, 4, 6, 0]])
loss.backward()
print("cosine triplet", round(loss.item(), 5), round(emb.grad.norm().item(), 5), twd)

z1 = torch.cos(torch.arange(24, dtype=torch.float32).view(4, 6)).requires_grad_()
z2 = torch.sin(torch.arange(24, dtype=torch.float32).view(4, 6) * 1.3).requires_grad_()
loss = nt_xent(z1, z2)
loss.backward()
print("nt-xent", round(loss.item(), 5), round(z1.grad.norm().item(), 5), round(z2.grad.norm().item(), 5))
predictor = fill(nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 6)))
p1, p2 = predictor(z1), predictor(z2)
simsiam = -0.5 * (F.cosine_similarity(p1, z2.detach()).mean() + F.cosine_similarity(p2, z1.detach()).mean())
z1.grad = None
z2.grad = None
simsiam.backward()
print("simsiam", round(simsiam.item(), 5), round(z1.grad.norm().item(), 5), round(predictor[0].weight.grad.norm().item(), 5))
target = copy.deepcopy(predictor).requires_grad_(False)
with torch.no_grad():
    for pt, po in zip(target.parameters(), predictor.parameters()):
        pt.mul_(0.99).add_(po.detach() - 0.1, alpha=0.01)
print("ema", round(sum(p.sum().item() for p in target.parameters()), 5), target[0].weight.requires_grad)
