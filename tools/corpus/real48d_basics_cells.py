"""A "tensor basics" notebook cell by cell: creation, dtype inference, reductions with keepdim,
named-tuple results, masks, integer division, dtype conversion by .type(), truncating assignment
of float rows into an integer tensor, and the error std() raises on integers."""
import torch

x = torch.arange(12).reshape(3, 4)
print(x, x.dtype, x.shape, x.ndim, x.numel())
print(x.float().mean(dim=0, keepdim=True), x.sum(1).dtype)
print(x.max(dim=1))
print(torch.where(x > 5, x, -x))
print(x[x % 2 == 0], x.flatten()[::3], x.T.is_contiguous())
print(torch.tensor([1, 2, 3]) / 2, torch.tensor([1, 2, 3]) // 2, torch.tensor([-3]) % 2)
print(torch.tensor([1, 2, 3]).type(torch.FloatTensor), torch.tensor([1.0, 2.0]).type())
print(torch.unique(torch.tensor([3, 1, 2, 3, 1]), return_counts=True))
print(torch.sort(torch.tensor([3, 1, 2]), descending=True))
print(torch.chunk(torch.arange(7), 3), torch.split(torch.arange(5), 2))
print(torch.tensor([[0.1234567, 100.0]], dtype=torch.float64), torch.tensor([1e-5, 1e5]))
print(torch.tensor([[1, 2], [3, 4]], dtype=torch.float16), torch.arange(0, 1, 0.25))
t = torch.zeros(2, 3, dtype=torch.int64)
t[0] = torch.tensor([1.7, -2.2, 3.9])
print(t)
try:
    x.std()
except RuntimeError as e:
    print("RuntimeError:", e)
print(x.float().std(), torch.var(x.float(), 1, unbiased=False))
print(torch.tensor([[1.0, 2.0], [3.0, 4.0]]).inverse())
