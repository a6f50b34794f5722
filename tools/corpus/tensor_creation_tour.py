"""Tensor creation and memory as the 'Tensors' tutorials show it: factories, numpy bridge, views, clones, strides."""
import numpy as np
import torch

print(torch.arange(5), torch.arange(1, 4), torch.arange(0, 1, 0.2), torch.arange(10, 0, -3))
print(torch.linspace(-1, 1, 5), torch.logspace(0, 3, 4), torch.logspace(0, 2, 3, base=2))
print(torch.eye(3, 2), torch.full((2, 2), 3.5), torch.full((2,), 7), torch.full((2,), True))
print(torch.zeros(2, 3).shape, torch.ones(size=(2,)), torch.zeros((2, 1), dtype=torch.int32))
print(torch.empty(3).shape, torch.empty(0).numel(), torch.zeros(0, 4).shape)
print(torch.tensor(5).shape, torch.tensor([5]).shape, torch.tensor([[5]]).shape, torch.tensor(5).ndim)
print(torch.tensor([[1, 2], [3, 4]], dtype=torch.float32), torch.tensor([1.0, 2], dtype=torch.int64))
print(torch.tensor((1, 2, 3)), torch.tensor(np.array([1.5, 2.5])), torch.tensor([np.float32(1.0)]).dtype)
print(torch.tensor([True, 1]).dtype, torch.tensor([1, 2.0]).dtype, torch.tensor([[1], [2.5]]).dtype)

arr = np.array([1.0, 2.0, 3.0])
shared = torch.from_numpy(arr)
copied = torch.tensor(arr)
asis = torch.as_tensor(arr)
arr[0] = 100.0
print(shared, copied, asis, shared.dtype)
shared.mul_(2)
print(arr)
back = shared.numpy()
back[1] = -1
print(shared)
print(torch.as_tensor([1, 2]), torch.as_tensor(shared) is shared, torch.as_tensor(shared, dtype=torch.float32).dtype)
print(torch.from_numpy(np.arange(6, dtype=np.int32).reshape(2, 3)))
print(torch.from_numpy(np.zeros((2, 2), dtype=np.uint8)).dtype, torch.from_numpy(np.array(True)).dtype)

base = torch.arange(12.0).reshape(3, 4)
v = base.view(4, 3)
v[0, 0] = -1
print(base[0, 0], v.data_ptr() == base.data_ptr(), base.is_contiguous(), base.t().is_contiguous())
print(base.stride(), base.t().stride(), base[:, 1].stride(), base[1].storage_offset(), base[:, 1].storage_offset())
c = base.clone()
c[0, 0] = 99
print(base[0, 0], c[0, 0], c.data_ptr() != base.data_ptr())
d = base.detach()
d[0, 1] = 55
print(base[0, 1])
print(base.t().contiguous().stride(), base.t().reshape(-1)[:4], base.nbytes, base.itemsize)
print(torch.zeros_like(base), torch.ones_like(base, dtype=torch.int64)[0], torch.full_like(base, 2)[0], torch.empty_like(base).shape)
print(base.new_zeros(2), base.new_ones((1, 2)), base.new_full((2,), 4.0), base.new_tensor([1, 2]), base.new_empty(3).shape)
print(torch.zeros(3).fill_(2), torch.zeros(2, 2).fill_diagonal_(5), torch.zeros(3).copy_(torch.tensor([1, 2, 3])))
print(torch.tensor([1, 2, 3]).clone().zero_())
print(torch.diag(torch.tensor([1, 2])), torch.diag(torch.tensor([[1, 2], [3, 4]])), torch.diag_embed(torch.tensor([1.0, 2.0])))
print(torch.tril(torch.ones(3, 3)), torch.ones(2, 3).T.shape, torch.ones(2, 3).mT.shape)
print(torch.scalar_tensor(3.5))
print(torch.tensor(3.7).int(), int(torch.tensor(3.7)), float(torch.tensor([2])), bool(torch.tensor([0.0])))
print(torch.tensor([1.5]).__float__(), round(torch.tensor(2.567).item(), 2), '%.2f' % torch.tensor(1.234), torch.tensor(4) + 1)
print(len(torch.zeros(5, 2)), list(torch.arange(3)), [t.item() for t in torch.arange(3)], *torch.tensor([7, 8]))
print(torch.Size([2, 3]), torch.Size([2, 3]).numel(), torch.Size([2, 3]) == (2, 3), tuple(torch.zeros(2, 3).shape), torch.zeros(2, 3).shape[-1])
print(torch.is_tensor(base), torch.is_tensor([1]), torch.numel(base), isinstance(base, torch.Tensor))
