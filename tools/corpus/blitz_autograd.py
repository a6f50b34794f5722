"""60-minute blitz, part 2: autograd (gradients, vector-Jacobian products, freezing parameters)."""
import torch
from torch import nn, optim

torch.manual_seed(0)


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU())
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        return self.fc(self.body(x))


model = SmallNet()
data = torch.rand(1, 8)
labels = torch.rand(1, 5)

prediction = model(data)
loss = (prediction - labels).sum()
loss.backward()
print("every parameter has a grad:", all(p.grad is not None for p in model.parameters()))

optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
before = [p.detach().clone() for p in model.parameters()]
optimizer.step()
print("step changed every parameter:",
      all(not torch.equal(b, p) for b, p in zip(before, model.parameters())))

a = torch.tensor([2., 3.], requires_grad=True)
b = torch.tensor([6., 4.], requires_grad=True)
Q = 3 * a**3 - b**2
external_grad = torch.tensor([1., 1.])
Q.backward(gradient=external_grad)
print(a.grad)
print(b.grad)
print(9 * a**2 == a.grad)
print(-2 * b == b.grad)

x = torch.rand(5, 5)
y = torch.rand(5, 5)
z = torch.rand((5, 5), requires_grad=True)
a = x + y
print(f"Does `a` require gradients?: {a.requires_grad}")
b = x + z
print(f"Does `b` require gradients?: {b.requires_grad}")

model.zero_grad()
for param in model.parameters():
    param.requires_grad = False
model.fc = nn.Linear(16, 3)
optimizer = optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
out = model(torch.rand(4, 8))
out.sum().backward()
print("frozen grads:", [p.grad is None for p in model.body.parameters()])
print("trainable:", [name for name, p in model.named_parameters() if p.requires_grad])
print(out.shape, out.requires_grad)
