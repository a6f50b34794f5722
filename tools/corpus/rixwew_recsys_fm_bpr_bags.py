"""Recommender building blocks as in rixwew/pytorch-fm, guoyang9/BPR-pytorch and
alexps711/recommender: field-offset embeddings (np.cumsum offsets through x.new_tensor), a
factorization machine (square-of-sum minus sum-of-squares), an inner-product interaction over
x[:, row] * x[:, col], a cross network with a ParameterList, EmbeddingBag user histories
(offsets, mode mean/sum/max, per_sample_weights, include_last_offset, padding_idx), a BPR
objective over negatives drawn deterministically from the item range, a sparse-gradient
Embedding trained with SparseAdam next to a dense Adagrad, and top-k recommendation with
masking of seen items.  Prints losses, shapes, sparse-gradient layouts and ranked items."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def fill(module, scale=0.3):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=p.dtype) * (0.41 + 0.13 * i)).reshape(p.shape) * scale)
    return module


class FieldEmbedding(nn.Module):
    def __init__(self, field_dims, dim):
        super().__init__()
        self.embedding = nn.Embedding(sum(field_dims), dim)
        self.offsets = np.array((0, *np.cumsum(field_dims)[:-1]), dtype=np.int64)

    def forward(self, x):
        return self.embedding(x + x.new_tensor(self.offsets).unsqueeze(0))


def fm_interaction(e):
    return 0.5 * (e.sum(dim=1) ** 2 - (e ** 2).sum(dim=1)).sum(dim=1, keepdim=True)


def inner_products(e):
    n = e.shape[1]
    row = [i for i in range(n - 1) for j in range(i + 1, n)]
    col = [j for i in range(n - 1) for j in range(i + 1, n)]
    return (e[:, row] * e[:, col]).sum(dim=2)


class Cross(nn.Module):
    def __init__(self, dim, layers):
        super().__init__()
        self.w = nn.ModuleList([nn.Linear(dim, 1, bias=False) for _ in range(layers)])
        self.b = nn.ParameterList([nn.Parameter(torch.zeros(dim)) for _ in range(layers)])

    def forward(self, x):
        x0 = x
        for w, b in zip(self.w, self.b):
            x = x0 * w(x) + b + x
        return x


field_dims = [4, 5, 3]
x = torch.tensor([[0, 1, 2], [3, 4, 0], [1, 0, 1], [2, 2, 2], [0, 3, 1]])
clicks = torch.tensor([1., 0., 1., 0., 1.])
emb = fill(FieldEmbedding(field_dims, 4))
cross = fill(Cross(12, 2))
out = fill(nn.Linear(12 + 3 + 1, 1))
ctr_params = list(emb.parameters()) + list(cross.parameters()) + list(out.parameters())
opt = torch.optim.Adagrad(ctr_params, lr=0.1)
for step in range(3):
    e = emb(x)
    feats = torch.cat([cross(e.flatten(1)), inner_products(e), fm_interaction(e)], dim=1)
    loss = F.binary_cross_entropy_with_logits(out(feats).squeeze(1), clicks)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("ctr", step, f"{loss.item():.5f}", tuple(feats.shape), f"{cross.b[0].grad.norm().item():.5f}")

# user histories as bags of item ids
history = torch.tensor([1, 4, 2, 7, 7, 3, 0, 5])
starts = torch.tensor([0, 3, 5])
bag_mean = fill(nn.EmbeddingBag(8, 3, mode="mean"))
bag_sum = fill(nn.EmbeddingBag(8, 3, mode="sum", padding_idx=0))
bag_max = fill(nn.EmbeddingBag(8, 3, mode="max"))
print(bag_mean(history, starts))
weights = torch.tensor([1.0, 0.5, 0.25, 2.0, 1.0, 1.0, 3.0, 0.5], requires_grad=True)
weighted = bag_sum(history, starts, per_sample_weights=weights)
weighted.pow(2).sum().backward()
print(weighted, weights.grad)
print(bag_max(history, starts).shape, bag_max(history.view(2, 4)).shape)
last = fill(nn.EmbeddingBag(8, 2, mode="sum", include_last_offset=True))
print(last(history, torch.tensor([0, 3, 5, 8])))

# BPR with a sparse user table (SparseAdam) and a dense item table (Adagrad)
n_users, n_items = 6, 9
users = nn.Embedding(n_users, 4, sparse=True)
items = nn.Embedding(n_items, 4)
with torch.no_grad():
    users.weight.copy_(torch.linspace(-0.5, 0.5, n_users * 4).reshape(n_users, 4))
    items.weight.copy_(torch.cos(torch.arange(n_items * 4.)).reshape(n_items, 4) * 0.3)
u = torch.tensor([0, 1, 2, 3, 4, 5, 0, 2])
pos = torch.tensor([1, 2, 3, 4, 5, 6, 7, 8])
neg = (pos * 5 + u * 3 + 1) % n_items          # deterministic "random" negatives
sparse_opt = torch.optim.SparseAdam(list(users.parameters()), lr=0.05)
dense_opt = torch.optim.Adagrad(items.parameters(), lr=0.05)
for step in range(3):
    ue = users(u)
    x_uij = (ue * items(pos)).sum(-1) - (ue * items(neg)).sum(-1)
    loss = -F.logsigmoid(x_uij).mean() + 1e-3 * items.weight.norm(2).pow(2)
    sparse_opt.zero_grad()
    dense_opt.zero_grad()
    loss.backward()
    g = users.weight.grad
    print("bpr", step, f"{loss.item():.5f}", g.layout, g.is_sparse, g._nnz(), tuple(g.coalesce().values().shape))
    sparse_opt.step()
    dense_opt.step()

with torch.no_grad():
    scores = users.weight @ items.weight.t()
    seen = torch.zeros(n_users, n_items, dtype=torch.bool)
    seen[u, pos] = True
    scores = scores.masked_fill(seen, float("-inf"))
    top = torch.topk(scores, 3, dim=1)
print(top.indices)
print(torch.isinf(top.values).any().item(), scores.argmax(dim=1))
