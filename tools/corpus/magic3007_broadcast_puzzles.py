"""Tensor-puzzle style one-liners (inspired by magic3007's write-up of the "Tensor Puzzles"):
library functions rebuilt from arange, comparisons, broadcasting, matmul and advanced indexing
only, each printed next to the library function it imitates, on int, float and bool inputs (the
dtypes that broadcasting and `@` produce are part of what is printed)."""
import torch


def arange(n):
    return torch.tensor(range(n))


def where(q, a, b):
    return q * a + ~q * b


def ones(n):
    return where(arange(n) >= 0, 1, 0)


def eye(n):
    return where(arange(n)[:, None] == arange(n), 1, 0)


def cumsum(a):
    n = a.shape[0]
    return (a[:, None] * (arange(n)[:, None] <= arange(n))).sum(0)


def running_max_index(a):
    n = a.shape[0]
    before = arange(n)[:, None] >= arange(n)
    return (a[None, :] * before + (~before) * a.min()).argmax(1)


def compress(g, v):
    n = g.shape[0]
    return v @ where(g[:, None], arange(n) == cumsum(1 * g)[:, None] - 1, 0)


def pad_to(a, j):
    return a @ where(arange(a.shape[0])[:, None] == arange(j), 1, 0)


def sequence_mask(values, lengths):
    return where(lengths[:, None] > arange(values.shape[1]), values, 0)


def bincount(a, j):
    return ones(a.shape[0]) @ eye(j)[a]


def scatter_add(values, link, j):
    return values @ eye(j)[link]


def flatten(a):
    i, j = a.shape
    return a[arange(i * j) // j, arange(i * j) % j]


def bucketize(v, boundaries):
    return (boundaries[:, None] <= v).sum(0)


def one_hot(labels, k):
    return (labels[:, None] == arange(k)).long()


def rank(v):
    return (v[None, :] < v[:, None]).sum(1)


v = torch.tensor([3, -1, 4, 1, 5, -9, 2, 6])
f = torch.tensor([0.5, -1.25, 2.0, 0.0])
m = arange(12).view(3, 4)
print(ones(4), eye(3), cumsum(v), torch.cumsum(v, 0), cumsum(f), torch.cumsum(f, 0))
print(running_max_index(v), compress(v > 0, v), v[v > 0])
print(pad_to(v[:3], 5), pad_to(f.long(), 2), sequence_mask(m, torch.tensor([1, 4, 0])))
print(bincount(torch.tensor([0, 2, 2, 1, 2]), 4), torch.bincount(torch.tensor([0, 2, 2, 1, 2]), minlength=4))
print(scatter_add(torch.tensor([5, 1, 7, 2]), torch.tensor([0, 0, 2, 1]), 3),
      torch.zeros(3, dtype=torch.long).scatter_add(0, torch.tensor([0, 0, 2, 1]), torch.tensor([5, 1, 7, 2])))
print(scatter_add(v[:4], torch.tensor([1, 1, 0, 2]), 3))
print(flatten(m), m.flatten(), bucketize(v, torch.tensor([0, 2, 5])), torch.bucketize(v, torch.tensor([0, 2, 5]), right=True))
print(one_hot(torch.tensor([2, 0, 1]), 4), torch.nn.functional.one_hot(torch.tensor([2, 0, 1]), 4))
print(rank(v), v.argsort().argsort(), rank(f), f.argsort().argsort())
print(where(f > 0, f, 0.0), where(v > 0, 1.5, -1), (v > 0) * (v < 4), (v > 0) & (v < 4))
outer = v[:3, None] @ v[None, 3:6]
print(outer, outer.dtype, (f[:, None] @ f[None, :]).diagonal(), (v[:, None] - v).abs().max())
try:
    print(v @ f)
except RuntimeError as e:
    print(type(e).__name__, e)
