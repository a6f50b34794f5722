"""A tour of everyday tensor operations, as the chapter-by-chapter exercise scripts of a
Chinese PyTorch course walk through them (inspired by Xu-smog/Machine-Learning-Notes): creation
and dtypes, view/squeeze/expand/repeat/permute shapes, indexing (index_select, masks, take,
ellipsis), cat/stack/split/chunk, norms and statistics with dim/keepdim, topk/kthvalue, where and
gather, clamp, rounding, and the errors met on the way (masks and views that do not fit)."""
import torch

torch.set_printoptions(precision=3)
a = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4) / 7
print(a.dtype, a.shape, a.stride(), a.dim(), a.numel())
print(a.view(6, 4)[::2])
print(a.unsqueeze(1).shape, a.unsqueeze(-1).shape, a[:, :1].squeeze().shape)
b = torch.tensor([0.5, -1.5, 2.25]).unsqueeze(1)
print(b.expand(3, 4), b.expand(-1, 2).is_contiguous(), b.repeat(2, 3).shape)
print(a.transpose(0, 2).shape, a.permute(2, 0, 1).contiguous().stride(), a.t if False else a.mT.shape)

# indexing
print(a.index_select(2, torch.tensor([3, 0])))
print(a[..., 1], a[1, ..., ::3])
mask = a.ge(1.5)
print(mask.sum(), torch.masked_select(a, mask))
print(torch.take(a, torch.tensor([0, 5, 23])))
print(a[[0, 1], [2, 0]], a[:, [0, 2], [1, 3]])
print(a[0][a[0] > 0.5])

# merge / split
c = torch.cat([a, a * 2], dim=1)
print(c.shape, torch.stack([a, a], dim=2).shape)
p, q = c.split([2, 4], dim=1)
print(p.shape, q.shape, [t.shape for t in c.chunk(4, dim=1)])
print([t.tolist() for t in torch.arange(7).split(3)], torch.arange(7).tensor_split(3))

# statistics
m = torch.tensor([[1., -2., 3., 0.5], [4., 5., -6., 2.]])
print(m.norm(1), m.norm(2), m.norm(1, dim=1), m.norm(2, dim=0))
print(m.min(), m.max(), m.mean(), m.prod(), m.sum(), m.argmax(), m.argmin())
print(m.max(dim=1), m.argmax(dim=1, keepdim=True))
print(m.topk(2, dim=1), m.topk(2, dim=1, largest=False).indices)
print(m.kthvalue(2, dim=1), m.median(), m.median(dim=0))
print(m > 0, torch.gt(m, 0).float().mean(), torch.eq(m, m).all(), torch.equal(m, m.clone()))

# advanced
cond = m > 1
print(torch.where(cond, m, torch.zeros_like(m)), torch.where(cond))
labels = torch.arange(4) + 100
idx = m.topk(3, dim=1).indices
print(torch.gather(labels.expand(2, 4), 1, idx))
g = m * 4
print(g.clamp(0, 10), g.clamp(min=5), g.floor(), g.ceil(), g.trunc(), g.frac(), (g / 3).round())
print(torch.tensor([2.5, 3.5, -0.5]).round(), torch.tensor(3.14159).round(decimals=2))

# errors
for label, fn in [("view", lambda: a.transpose(0, 1).view(-1)),
                  ("mask", lambda: a[torch.tensor([True, False, True])]),
                  ("setmask", lambda: a.__setitem__(torch.tensor([True, False, True]), 0.0)),
                  ("cat", lambda: torch.cat([a, a.transpose(1, 2)])),
                  ("expand", lambda: b.expand(4, 4))]:
    try:
        fn()
    except (RuntimeError, IndexError) as e:
        print(label, type(e).__name__, e)
