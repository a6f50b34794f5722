"""Group-by aggregation written with tensors, the pandas-like idioms of tabular preprocessing
code: per-key sums/means/max with scatter_add_/scatter_reduce/index_add_, counts with bincount,
label encoding with torch.unique(return_inverse), average ranks with ties, frequency and target
encoding, within-group diffs and running totals, and the gradients through a grouped mean/max.

Written for tapegrad's proxy corpus (data wrangling domain); fixed data, no randomness.
"""
import torch

keys = torch.tensor([0, 2, 1, 2, 0, 3, 1, 1])
vals = torch.tensor([1.0, 4.0, 2.5, 6.0, 3.0, 7.0, 0.5, 1.5])
n = int(keys.max()) + 1
sums = torch.zeros(n).scatter_add_(0, keys, vals)
counts = torch.zeros(n).scatter_add_(0, keys, torch.ones_like(vals))
print("sums", sums)
print("counts", counts, torch.bincount(keys), torch.bincount(keys).dtype)
print("means", sums / counts)
for red in ["sum", "prod", "mean", "amax", "amin"]:
    print(red, torch.zeros(n).scatter_reduce(0, keys, vals, reduce=red, include_self=False))
print("with self", torch.full((n,), 2.0).scatter_reduce(0, keys, vals, "mean"))
print("int mean", torch.zeros(2, dtype=torch.long).scatter_reduce(
    0, torch.tensor([0, 1, 0, 1, 1]), torch.tensor([3, 4, 4, 5, 7]), "mean", include_self=False))
print("weighted counts", torch.bincount(keys, weights=vals, minlength=6))

# 2-D: per-group column sums and maxima
X = torch.arange(12, dtype=torch.float32).reshape(6, 2)
g = torch.tensor([0, 1, 0, 2, 1, 0])
print(torch.zeros(3, 2).index_add_(0, g, X))
print(torch.zeros(3, 2).scatter_reduce(0, g.unsqueeze(1).expand(-1, 2), X, "amax", include_self=False))

# label encoding and one-hot
city = ["paris", "oslo", "paris", "rome", "oslo", "paris"]
vocab = {c: i for i, c in enumerate(sorted(set(city)))}
codes = torch.tensor([vocab[c] for c in city])
u, inv, cnt = torch.unique(codes, return_inverse=True, return_counts=True)
print(u, inv, cnt)
print(torch.nn.functional.one_hot(codes, num_classes=len(vocab)))
rows = torch.tensor([[1, 2], [3, 4], [1, 2], [0, 9]])
print(torch.unique(rows, dim=0, return_inverse=True, return_counts=True))
print(torch.unique_consecutive(torch.tensor([1, 1, 2, 2, 3, 1, 1]), return_counts=True))

# average ranks with ties, dense ranks, percentiles
price = torch.tensor([12.5, 3.0, 7.25, 3.0, 99.0, 45.5, 7.25, 0.5, 18.0, 3.0])
store = torch.tensor([2, 0, 1, 0, 2, 1, 1, 0, 2, 2])
order = torch.argsort(price, stable=True)
ranks = torch.empty_like(order)
ranks[order] = torch.arange(len(price))
uniq, inv, counts = torch.unique(price, return_inverse=True, return_counts=True)
avg_rank = (torch.zeros(len(uniq)).index_add_(0, inv, ranks.float()) / counts)[inv] + 1
print("avg ranks", avg_rank)
print("dense", inv + 1, "pct", ((avg_rank - 1) / (len(price) - 1)).round(decimals=3))

# frequency / target encoding
freq = torch.bincount(store).float() / len(store)
target = (price > 10).float()
te = (torch.zeros(3).scatter_add_(0, store, target) + 1.0) / (torch.bincount(store, minlength=3) + 2)
print("freq", freq[store], "target", te[store])
for s in torch.unique(store):
    m = store == s
    print(int(s), price[m].mean().item(), price[m].median().item(), m.sum().item())

# within-group diffs and running totals (sort by group, then segment)
o = torch.argsort(store, stable=True)
gp, pp = store[o], price[o]
d = torch.diff(pp, prepend=pp[:1])
d[torch.cat([torch.tensor([True]), gp[1:] != gp[:-1]])] = 0
print("diff", d)
start = torch.cat([torch.tensor([0]), torch.nonzero(gp[1:] != gp[:-1]).squeeze(1) + 1])
lengths = torch.diff(torch.cat([start, torch.tensor([len(gp)])]))
seg = torch.repeat_interleave(torch.arange(len(start)), lengths)
cs = pp.cumsum(0)
print("group cumsum", cs - torch.cat([torch.tensor([0.]), cs])[start][seg])
print("segment sums", torch.segment_reduce(pp, "sum", lengths=lengths))

# gradients through grouped reductions
v = vals.clone().requires_grad_()
(torch.zeros(n).scatter_reduce(0, keys, v, "mean", include_self=False) * torch.arange(1., n + 1)).sum().backward()
print("mean grad", v.grad)
v.grad = None
torch.zeros(n).scatter_reduce(0, keys, v, "amax", include_self=False).sum().backward()
print("amax grad", v.grad)
v.grad = None
torch.ones(n).index_reduce(0, keys, v, "prod").sum().backward()
print("prod grad", v.grad)
try:
    torch.zeros(3).scatter_reduce(0, keys, vals, reduce="max")
except RuntimeError as e:
    print("RuntimeError", e)
