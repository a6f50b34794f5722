"""Learning PyTorch with Examples: fit a cubic to sin(x) with tensors and hand-written gradients."""
import math

import torch

dtype = torch.float
device = torch.device("cpu")

x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
y = torch.sin(x)

# Deterministic start so every printed loss can be compared exactly.
a = torch.full((), 0.1, device=device, dtype=dtype)
b = torch.full((), -0.2, device=device, dtype=dtype)
c = torch.full((), 0.3, device=device, dtype=dtype)
d = torch.full((), -0.4, device=device, dtype=dtype)

learning_rate = 1e-6
for t in range(2000):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3
    loss = (y_pred - y).pow(2).sum().item()
    if t % 200 == 199:
        print(t, f"{loss:.3f}")
    grad_y_pred = 2.0 * (y_pred - y)
    grad_a = grad_y_pred.sum()
    grad_b = (grad_y_pred * x).sum()
    grad_c = (grad_y_pred * x ** 2).sum()
    grad_d = (grad_y_pred * x ** 3).sum()
    a -= learning_rate * grad_a
    b -= learning_rate * grad_b
    c -= learning_rate * grad_c
    d -= learning_rate * grad_d

print(f'Result: y = {a.item():.3f} + {b.item():.3f} x + {c.item():.3f} x^2 + {d.item():.3f} x^3')

torch.manual_seed(0)
a = torch.randn((), device=device, dtype=dtype)
print(a.shape, a.dtype, a.dim())
