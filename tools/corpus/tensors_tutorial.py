"""Learn-the-basics 'Tensors': exact results of deterministic tensor operations and their printing."""
import numpy as np
import torch

data = [[1, 2], [3, 4]]
x_data = torch.tensor(data)
x_np = torch.from_numpy(np.array(data))
print(x_data.dtype, x_np.dtype, torch.equal(x_data, x_np))

x_ones = torch.ones_like(x_data)
print(f"Ones Tensor: \n {x_ones} \n")
x_full = torch.full_like(x_data, 7)
print(x_full)

shape = (2, 3,)
print(torch.ones(shape))
print(torch.zeros(shape, dtype=torch.int64))
print(torch.empty(shape).shape)

tensor = torch.arange(12, dtype=torch.float32).reshape(3, 4)
print(f"Shape of tensor: {tensor.shape}")
print(f"Datatype of tensor: {tensor.dtype}")
print(f"Device tensor is stored on: {tensor.device}")
print(tensor.ndim, tensor.dim(), tensor.numel(), tensor.nelement(), tensor.element_size())
print(tensor.is_cuda, tensor.requires_grad, tensor.is_leaf, tensor.is_contiguous())

if torch.accelerator.is_available():
    tensor = tensor.to(torch.accelerator.current_accelerator())

print(f"First row: {tensor[0]}")
print(f"First column: {tensor[:, 0]}")
print(f"Last column: {tensor[..., -1]}")
tensor[:, 1] = 0
print(tensor)
print(torch.cat([tensor, tensor], dim=1))
print(torch.stack([tensor[0], tensor[1]]))

y1 = tensor @ tensor.T
print(y1)
z1 = tensor * tensor
print(z1)
print(tensor.sum(), tensor.sum().item(), tensor.mean(dim=0))
print(tensor.max(), tensor.argmax(), tensor.max(dim=1))
print(tensor.min(dim=0).values, tensor.min(dim=0).indices)

print(f"{tensor} \n")
tensor.add_(5)
print(tensor)
print(tensor.t().contiguous().view(-1))
print(tensor.T.shape, tensor.mT.shape)

t = torch.ones(5)
n = t.numpy()
t.add_(1)
print(f"t: {t}")
print(f"n: {n}")
n = np.ones(5)
t = torch.from_numpy(n)
np.add(n, 1, out=n)
print(f"t: {t}")

print(torch.tensor(3.5), torch.tensor(True), torch.tensor([1.5, 2.25], dtype=torch.float64))
print(torch.tensor([[1e-5, 1.0], [100.0, 12345.678]]))
print(torch.tensor([1e10, 1.0]))
print(torch.linspace(0, 1, steps=5), torch.logspace(0, 2, steps=3))
print(torch.zeros(2, 3, dtype=torch.bool), torch.tensor([], dtype=torch.float32))
print(torch.eye(3, dtype=torch.int32))
print(repr(torch.tensor(2)), str(torch.tensor([2, 3], dtype=torch.int16)))
