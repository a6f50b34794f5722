"""A tour of how tensors share memory: views, storages, strides and offsets, copies that do not
share, and a model compiled in place (PyTorch 2's Module.compile)."""
import warnings

import torch
import torch.nn as nn

warnings.filterwarnings("ignore", message="TypedStorage is deprecated")

base = torch.arange(12, dtype=torch.float32)
grid = base.view(3, 4)
column = grid[:, 1]
print("grid:", grid)
print("column:", column, "stride", column.stride(), "offset", column.storage_offset())


def same_memory(a, b):
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


print("grid shares base's memory:", same_memory(grid, base))
print("column shares base's memory:", same_memory(column, base))
print("clone shares base's memory:", same_memory(base.clone(), base))
print("contiguous column shares:", same_memory(column.contiguous(), base))
print("transposed is contiguous:", grid.t().is_contiguous(), "same memory:", same_memory(grid.t(), base))

storage = grid.untyped_storage()
print("bytes:", storage.nbytes(), "elements:", len(grid.storage()), "element size:", grid.element_size())
print("one storage object:", grid.untyped_storage() is storage)

typed = column.storage()
print(type(typed).__name__, typed.dtype, typed.size(), typed[5], typed.type())
typed[5] = 100.0
print("after writing through the storage:", base[5].item(), grid[1, 1].item(), column[1].item())

column.mul_(-1)
print("after column.mul_(-1):", base)

small = torch.tensor([1, 2, 3], dtype=torch.int16)
print(small.storage())
print(small.untyped_storage().tolist())

legacy = torch.FloatStorage([0.5, 1.5])
print(legacy, isinstance(legacy, torch.FloatStorage), torch.is_storage(legacy))
shared = torch.Tensor(base[4:].storage())
print("Tensor(storage) has", shared.numel(), "elements, same memory:", same_memory(shared, base))

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
x = torch.randn(16, 4)
y = x.sum(dim=1, keepdim=True).sin()
eager_loss = nn.functional.mse_loss(model(x), y)
print("compile returns:", model.compile())
print("keys unchanged:", list(model.state_dict().keys()))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(30):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    if step == 0:
        print("first compiled loss equals eager:", torch.allclose(loss, eager_loss))
    loss.backward()
    optimizer.step()
print("final loss below the first:", loss.item() < eager_loss.item())
