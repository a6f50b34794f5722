"""A TabNet-style tabular classifier written from scratch, after dreamquark-ai/tabnet.

Exercises: sparsemax and entmax-1.5 as torch.autograd.Function (forward with sort/cumsum/gather,
hand-written backward, gradcheck in float64), ghost batch norm over x.chunk, GLU feature blocks,
attentive masks with a relaxation prior, categorical embeddings beside continuous columns with
BatchNorm1d, a sparsity regulariser, Adam + clip_grad_norm_, and feature importances ranked with
topk/argsort (ties among equal importances included).  Data and weights come from numpy so both
libraries see the same numbers.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Sparsemax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z, dim):
        z = z - z.max(dim=dim, keepdim=True).values
        zs, _ = torch.sort(z, dim=dim, descending=True)
        ranks = torch.arange(1, z.size(dim) + 1, dtype=z.dtype)
        shape = [1] * z.dim()
        shape[dim] = -1
        ranks = ranks.view(shape)
        csum = zs.cumsum(dim) - 1
        support = (ranks * zs > csum).sum(dim=dim, keepdim=True)
        tau = csum.gather(dim, support - 1) / support.to(z.dtype)
        out = torch.clamp(z - tau, min=0)
        ctx.dim = dim
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        nz = out > 0
        g = g * nz
        mean = g.sum(ctx.dim, keepdim=True) / nz.sum(ctx.dim, keepdim=True)
        return torch.where(nz, g - mean, torch.zeros_like(g)), None


class Entmax15(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z, dim):
        z = (z - z.max(dim=dim, keepdim=True).values) / 2
        zs, _ = torch.sort(z, dim=dim, descending=True)
        n = z.size(dim)
        shape = [1] * z.dim()
        shape[dim] = -1
        rho = torch.arange(1, n + 1, dtype=z.dtype).view(shape)
        mean = zs.cumsum(dim) / rho
        mean_sq = (zs ** 2).cumsum(dim) / rho
        delta = (1 - rho * (mean_sq - mean ** 2)) / rho
        tau = mean - torch.sqrt(torch.clamp(delta, min=0))
        k = (tau <= zs).sum(dim=dim, keepdim=True)
        out = torch.clamp(z - tau.gather(dim, k - 1), min=0) ** 2
        ctx.dim = dim
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        s = y.sqrt()
        dx = g * s
        q = dx.sum(ctx.dim, keepdim=True) / s.sum(ctx.dim, keepdim=True)
        return dx - q * s, None


class GhostBN(nn.Module):
    def __init__(self, d, vbs=16, momentum=0.05):
        super().__init__()
        self.vbs = vbs
        self.bn = nn.BatchNorm1d(d, momentum=momentum)

    def forward(self, x):
        n_chunks = int(np.ceil(x.shape[0] / self.vbs))
        return torch.cat([self.bn(c) for c in x.chunk(n_chunks, 0)], dim=0)


class GLUBlock(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, 2 * d_out, bias=False)
        self.bn = GhostBN(2 * d_out)

    def forward(self, x):
        return F.glu(self.bn(self.fc(x)), dim=-1)


class TabNetLite(nn.Module):
    def __init__(self, n_cont, cat_cards, emb_dim, n_d, n_steps, n_out, mask="sparsemax", gamma=1.3):
        super().__init__()
        self.embs = nn.ModuleList([nn.Embedding(c, emb_dim) for c in cat_cards])
        self.bn_cont = nn.BatchNorm1d(n_cont)
        d = n_cont + emb_dim * len(cat_cards)
        self.d, self.n_d, self.gamma = d, n_d, gamma
        self.shared = GLUBlock(d, 2 * n_d)
        self.steps = nn.ModuleList([GLUBlock(2 * n_d, 2 * n_d) for _ in range(n_steps)])
        self.att = nn.ModuleList([nn.Linear(n_d, d, bias=False) for _ in range(n_steps)])
        self.att_bn = nn.ModuleList([GhostBN(d) for _ in range(n_steps)])
        self.head = nn.Linear(n_d, n_out)
        self.select = Sparsemax.apply if mask == "sparsemax" else Entmax15.apply

    def embed(self, x_cont, x_cat):
        cols = [self.bn_cont(x_cont)] + [e(x_cat[:, i]) for i, e in enumerate(self.embs)]
        return torch.cat(cols, dim=1)

    def forward(self, x_cont, x_cat):
        x = self.embed(x_cont, x_cat)
        prior = torch.ones_like(x)
        h = self.shared(x)
        att = h[:, self.n_d:]
        out = 0
        entropy = 0
        masks = []
        for step, block in enumerate(self.steps):
            m = self.select(self.att_bn[step](self.att[step](att)) * prior, -1)
            masks.append(m)
            entropy = entropy + (-m * torch.log(m + 1e-10)).sum(1).mean()
            prior = prior * (self.gamma - m)
            h = block(self.shared(m * x))
            out = out + F.relu(h[:, :self.n_d])
            att = h[:, self.n_d:]
        return self.head(out), entropy / len(self.steps), masks


def det_init(model, seed):
    rng = np.random.RandomState(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            scale = 0.5 if "emb" in name else 0.3
            p.copy_(torch.from_numpy(rng.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))


# -- the two mask functions: values, gradients, gradcheck
z = torch.tensor([[1.0, 0.5, -0.2, 2.0, 0.4], [0.1, 0.1, 0.3, -1.0, 0.2], [3.0, -2.0, 2.9, 0.0, 2.95]])
for fn in (Sparsemax.apply, Entmax15.apply):
    zz = z.clone().requires_grad_()
    p = fn(zz, 1)
    (p * torch.arange(15.).view(3, 5)).sum().backward()
    print(p.sum(1), (p > 0).sum(1), p.round(decimals=4))
    print(zz.grad.round(decimals=4))
z64 = torch.tensor(np.random.RandomState(0).randn(3, 6), requires_grad=True)
print(torch.autograd.gradcheck(lambda t: Sparsemax.apply(t, 1), (z64,)),
      torch.autograd.gradcheck(lambda t: Entmax15.apply(t, 0), (z64,)))

# -- a small synthetic table: 3 continuous columns, 2 categorical ones
rng = np.random.RandomState(42)
n = 96
cont = rng.randn(n, 3).astype(np.float32)
cat = np.stack([rng.randint(0, 4, n), rng.randint(0, 3, n)], 1)
y = ((cont[:, 0] + (cat[:, 0] == 2) - 0.5 * cont[:, 2]) > 0.3).astype(np.int64)
Xc, Xk, Y = torch.from_numpy(cont), torch.from_numpy(cat), torch.from_numpy(y)
print("class balance", torch.bincount(Y).tolist())

for mask in ("sparsemax", "entmax"):
    model = TabNetLite(3, [4, 3], 2, n_d=4, n_steps=2, n_out=2, mask=mask)
    det_init(model, 7)
    opt = torch.optim.Adam(model.parameters(), lr=0.03)
    crit = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 1.5]))
    for epoch in range(5):
        model.train()
        for i in range(0, n, 32):
            logits, ent, _ = model(Xc[i:i + 32], Xk[i:i + 32])
            loss = crit(logits, Y[i:i + 32]) + 1e-3 * ent
            opt.zero_grad()
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 2.0)
            opt.step()
        print(mask, epoch, round(loss.item(), 4), round(float(norm), 4))
    model.eval()
    with torch.no_grad():
        logits, ent, masks = model(Xc, Xk)
        pred = logits.argmax(1)
        acc = (pred == Y).float().mean().item()
        print(mask, "acc", round(acc, 4), "entropy", round(ent.item(), 4))
        print("mask rows sum to 1:", torch.allclose(masks[0].sum(1), torch.ones(n), atol=1e-5))
        importance = torch.stack(masks).sum(0).mean(0)
        print("importance", importance.round(decimals=4))
        counts = (torch.stack(masks) > 0).sum((0, 1))
        print("selected counts", counts.tolist())
        top = counts.topk(3)
        print("top-3 by count", top.values.tolist(), top.indices.tolist())
        print("rank", counts.argsort(descending=True).tolist())
        print("running", model.bn_cont.running_mean.round(decimals=4), model.bn_cont.num_batches_tracked.item())
