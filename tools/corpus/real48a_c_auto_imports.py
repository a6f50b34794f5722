"""A beginner's regression script whose editor auto-imported names from torch._C (device, dtype,
Size, Node, Value, NoneType: the completions of words typed elsewhere).  The torch._C names are
torch's own objects; the TorchScript classes are imported and never used."""
import torch
import torch.nn as nn
from torch._C import Node, NoneType, Value  # noqa: F401  (editor auto-imports, unused)
from torch._C import Size, device, dtype

torch.manual_seed(0)

dev = device("cpu")
print("device:", dev, type(dev) is torch.device, device is torch.device)
print("dtype:", dtype is torch.dtype, isinstance(torch.float64, dtype))

x = torch.linspace(0, 1, 20, device=dev).unsqueeze(1)
y = 3 * x + 0.5
print("x shape is a Size:", isinstance(x.shape, Size), x.shape == Size([20, 1]))

model = nn.Linear(1, 1).to(dev)
with torch.no_grad():
    model.weight.fill_(0.1)
    model.bias.zero_()
opt = torch.optim.SGD(model.parameters(), lr=0.5)
for epoch in range(60):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if epoch % 20 == 0:
        print(f"epoch {epoch}: loss {loss.item():.6f}")
print("weight", model.weight.item(), "bias", model.bias.item())
print("parameter dtypes:", {p.dtype for p in model.parameters()}, all(isinstance(p.dtype, dtype)
                                                                       for p in model.parameters()))

for cls in (Node, Value, NoneType):
    try:
        cls()
    except TypeError as err:
        print(f"{cls.__name__}(): TypeError: {err}")
print("a tensor is not a Value:", isinstance(x, Value))
print(torch._C.default_generator is torch.default_generator, torch._C.get_default_dtype())
