"""The tensor factories in the forms scripts call them (sizes as ints, a tuple, a torch.Size; dtype=,
requires_grad=, device='cpu'), their dtypes and values, the sizes and dtypes of random draws, the
scalar reads of small tensors, and the errors of bad arguments."""
import numpy as np
import torch

x = torch.ones(2, 3)
print(torch.zeros(2, 3), torch.zeros((2, 3), dtype=torch.float64), torch.zeros(x.shape).dtype)
print(torch.ones(3, dtype=torch.int64), torch.ones([2], requires_grad=True), torch.ones(2, device='cpu'))
print(torch.empty(2, 3).shape, torch.empty((0, 4), dtype=torch.uint8))
print(torch.full((2, 2), 1.5), torch.full((2,), 7), torch.full((2,), True), torch.full((3,), -200, dtype=torch.uint8))
print(torch.arange(5), torch.arange(1, 10, 3), torch.arange(10, 0, -4), torch.arange(4.0), torch.arange(6, dtype=torch.float32))
print(torch.arange(-1, 1, 0.5), torch.arange(0, 1, 0.25, dtype=torch.float64))
print(torch.linspace(0, 1, 5), torch.linspace(-2, 2, 4, dtype=torch.float64), torch.linspace(0, 10, 3))
print(torch.eye(3), torch.eye(2, 3, dtype=torch.int64))
print(torch.tensor(2.5), torch.tensor(3), torch.tensor(True), torch.tensor(2.5, requires_grad=True))
print(torch.tensor([1.0, 2, 3]), torch.tensor([[1, 2], [3, 4]]), torch.tensor([0.1, 0.2], dtype=torch.float64))
print(torch.as_tensor([1.0, 2.0]), torch.as_tensor(np.arange(3.0)), torch.from_numpy(np.ones((2, 2), np.float32)))
print(torch.zeros_like(x), torch.ones_like(x, dtype=torch.int32), torch.full_like(x, 0.5), torch.empty_like(x).shape)

torch.manual_seed(0)
for t in (torch.randn(2, 3), torch.randn((2, 3), dtype=torch.float64), torch.rand(4), torch.rand(2, 2, requires_grad=True),
          torch.randint(0, 10, (3, 3)), torch.randint(5, (4,)), torch.rand_like(x), torch.randn_like(x)):
    print(t.shape, t.dtype, t.requires_grad)
u, k = torch.rand(1000), torch.randint(-3, 4, (1000,))
print(bool((u >= 0).all() and (u < 1).all()), sorted(set(k.tolist())))

s = torch.tensor([[2.75]])
print(float(s), int(s), bool(s), s.item(), s.shape, s.size(), len(x), x.numel(), x.to(torch.float64).dtype, x.to(torch.float32) is x)

for make in (lambda: torch.zeros(2, -1), lambda: torch.ones(2.0), lambda: torch.zeros(2, dtype="float"),
             lambda: torch.ones(2, dtype=torch.int64, requires_grad=True), lambda: torch.full(2, 1.0),
             lambda: torch.randint(10, 0, (2,)), lambda: torch.rand(2, dtype=torch.int64),
             lambda: torch.arange(0, 5, 0), lambda: torch.arange(-3), lambda: torch.linspace(0, 1, -1),
             lambda: torch.eye(-1), lambda: torch.tensor([[1, 2], [3]]), lambda: float(torch.ones(2)),
             lambda: torch.ones(2).item(), lambda: torch.zeros(2, pin_memory=True)):
    try:
        make()
        print("no error")
    except Exception as e:
        print(type(e).__name__, str(e).split("\n")[0][:60])
