"""A model converted to float64 between its forward and backward (a gradcheck set up too late):
the gradients keep the dtype the graph was recorded in, a later graph's are float64, and an
Adam step refuses the mixed dtypes while SGD takes them."""
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
with torch.no_grad():               # fixed weights: the output is the same under any seed
    for k, p in enumerate(model.parameters()):
        p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (k + 1) ** 0.5)
x = torch.linspace(-2.0, 2.0, 64).reshape(16, 4)
y = torch.sin(torch.arange(16.0)).reshape(16, 1)

loss = nn.functional.mse_loss(model(x), y)
model.double()
loss.backward()
for name, p in model.named_parameters():
    print(name, p.dtype, p.grad.dtype, p.grad.norm().item())

try:
    torch.autograd.grad(loss, model[0].weight)
except RuntimeError as e:
    print("autograd.grad:", str(e).split(".")[0])

sgd = torch.optim.SGD(model.parameters(), lr=0.1)
sgd.step()
print("after SGD", model[0].weight.dtype, model[0].weight.sum().item())

model.zero_grad()
loss2 = nn.functional.mse_loss(model(x.double()), y.double())
loss2.backward()
print("new graph", [p.grad.dtype for p in model.parameters()], loss2.item())

model.float()
print("float again", [(p.dtype, p.grad.dtype) for p in model.parameters()])
out = model(x)
model.double()
out.sum().backward()           # adds float32 gradients into the float64 .grad
print("accumulated", [p.grad.dtype for p in model.parameters()])

adam = torch.optim.Adam(model.parameters(), lr=1e-3)
model.zero_grad()
out = model(x.double())
model.float()
out.sum().backward()
try:
    adam.step()
except RuntimeError as e:
    print("Adam:", e)
