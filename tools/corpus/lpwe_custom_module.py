"""Learning PyTorch with Examples: a custom nn.Module with nn.Parameter scalars."""
import math

import torch


class Polynomial3(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(()))
        self.b = torch.nn.Parameter(torch.randn(()))
        self.c = torch.nn.Parameter(torch.randn(()))
        self.d = torch.nn.Parameter(torch.randn(()))

    def forward(self, x):
        return self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3

    def string(self):
        return f'y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + {self.d.item()} x^3'


torch.manual_seed(0)
x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)
model = Polynomial3()
print([name for name, _ in model.named_parameters()])
print(type(model.a).__name__, model.a.requires_grad, model.a.shape)

criterion = torch.nn.MSELoss(reduction='sum')
optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
first = None
for t in range(2000):
    y_pred = model(x)
    loss = criterion(y_pred, y)
    first = loss.item() if first is None else first
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss decreased:", loss.item() < first)
print("fit is usable (loss < 1000):", loss.item() < 1000)
print(model.string().startswith('y = '), model.string().count(' x'))

# The same fit from a fixed start: exact numbers.
with torch.no_grad():
    for i, prm in enumerate(model.parameters()):
        prm.fill_(0.1 * (i + 1) * (-1) ** i)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
for t in range(500):
    loss = criterion(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"{loss.item():.3f}", f"{model.b.item():.4f}", f"{model.d.item():.4f}")
