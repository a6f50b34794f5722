"""Idioms of older tutorials and the NumPy bridge: Variable, typed constructors, .data, new_*, formats."""
import numpy as np
import torch
from torch.autograd import Variable

x = torch.Tensor([[1, 2], [3, 4]])
print(x, x.dtype, x.type())
print(torch.Tensor(2, 3).shape, torch.Tensor(2, 3).dtype)
print(torch.FloatTensor([1.5, 2]), torch.DoubleTensor([1]).dtype)
print(torch.LongTensor([1, 2, 3]), torch.IntTensor([4]).dtype, torch.BoolTensor([True, False]))
print(torch.ByteTensor([1, 255]).dtype, torch.LongTensor(3).shape)
print(isinstance(x, torch.FloatTensor), isinstance(x, torch.Tensor), torch.is_tensor(x))

v = Variable(torch.ones(2, 2), requires_grad=True)
y = (v * 3).sum()
y.backward()
print(type(v).__name__, v.grad, v.data)
print(v.data.requires_grad, v.detach().requires_grad)

a = torch.tensor([1.0, 2.0], dtype=torch.float64)
print(a.new_zeros(3), a.new_ones((2,)), a.new_full((2,), 7), a.new_tensor([1, 2]).dtype)
print(a.new_empty(4).shape, torch.empty_like(a).dtype)
print(torch.zeros_like(a, dtype=torch.int32), torch.full_like(a, 0.5))
torch.manual_seed(0)
print(torch.randn_like(a).shape, torch.randint_like(a, 10).dtype, torch.rand_like(a).dtype)

print(torch.get_default_dtype())
torch.set_default_dtype(torch.float64)
print(torch.tensor([1.0]).dtype, torch.zeros(1).dtype, torch.get_default_dtype())
torch.set_default_dtype(torch.float32)
print(torch.is_floating_point(a), a.is_floating_point(), torch.numel(a))

s = torch.tensor(2.4544)
print(f"{s}", "{:.2f}".format(s), f"{s:+.3f}", "%.1f" % s.item(), f"{torch.tensor(7):>4}")
print(float(s), int(torch.tensor(3.9)), bool(torch.tensor([1])), round(s.item(), 1))
try:
    float(torch.tensor([1.0, 2.0]))
except (ValueError, TypeError, RuntimeError) as e:
    print(type(e).__name__)

t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
n = t.numpy()
print(type(n).__name__, n.dtype, n.shape)
n[0, 0] = 100
print(t[0, 0].item())
c = np.array(t)
c[0, 1] = -1
print(t[0, 1].item(), np.asarray(t).sum())
copy = np.array(t, copy=True)
copy[1, 1] = 42
print(t[1, 1].item())
print(torch.from_numpy(np.arange(3)).dtype, torch.as_tensor(np.float32(2.5)).dtype)
print(torch.tensor(np.array([[1, 2]], dtype=np.int16)).dtype, torch.tensor(np.float64(1.5)).dtype)
print(torch.tensor(torch.tensor(3.0)).item(), torch.tensor([torch.tensor(1.0), torch.tensor(2.0)]))
print(np.float32(2.0) * torch.ones(2), (torch.ones(2) + np.ones(2)).dtype)
print(t.tolist(), t[0].tolist(), t.sum().tolist())
d = torch.from_dlpack(np.arange(4.0))
print(d, np.from_dlpack(torch.arange(3)))
print(torch.tensor([1, 2]).cpu().device, x.cuda is not None, x.is_cuda)
