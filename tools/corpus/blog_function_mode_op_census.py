"""Op census with a TorchFunctionMode (blog-post style): which torch functions each nn layer calls,
op counts around a training step, and a LoggingTensor subclass logging its calls."""
import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode, resolve_name

class Census(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls = []
    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls.append(resolve_name(func) or getattr(func, "__name__", "?"))
        return func(*args, **(kwargs or {}))

x = torch.linspace(-2, 2, 24).reshape(2, 3, 4)
img = torch.linspace(-1, 1, 2 * 3 * 5 * 5).reshape(2, 3, 5, 5)
layers = {
    "ReLU": (nn.ReLU(), x), "Tanh": (nn.Tanh(), x), "Sigmoid": (nn.Sigmoid(), x),
    "GELU": (nn.GELU(), x), "LeakyReLU": (nn.LeakyReLU(0.1), x), "SiLU": (nn.SiLU(), x),
    "Softmax": (nn.Softmax(dim=-1), x), "LogSoftmax": (nn.LogSoftmax(dim=-1), x),
    "ELU": (nn.ELU(), x), "Softplus": (nn.Softplus(), x), "Hardtanh": (nn.Hardtanh(), x),
    "Identity": (nn.Identity(), x), "Flatten": (nn.Flatten(), x),
    "Dropout(eval)": (nn.Dropout(0.5).eval(), x),
    "Linear": (nn.Linear(4, 2), x), "LayerNorm": (nn.LayerNorm(4), x),
    "Conv2d": (nn.Conv2d(3, 2, 3), img), "MaxPool2d": (nn.MaxPool2d(2), img),
    "AvgPool2d": (nn.AvgPool2d(2), img), "AdaptiveAvgPool2d": (nn.AdaptiveAvgPool2d(1), img),
    "BatchNorm2d(eval)": (nn.BatchNorm2d(3).eval(), img),
    "Embedding": (nn.Embedding(10, 3), torch.tensor([[1, 2], [3, 4]])),
    "Mish": (nn.Mish(), x), "PReLU": (nn.PReLU(), x), "Softsign": (nn.Softsign(), x),
    "Hardswish": (nn.Hardswish(), x), "Hardsigmoid": (nn.Hardsigmoid(), x),
    "ReLU6": (nn.ReLU6(), x), "Tanhshrink": (nn.Tanhshrink(), x),
}
for name, (layer, inp) in layers.items():
    with Census() as c:
        out = layer(inp)
    print(f"{name:20s} {tuple(out.shape)} {c.calls}")

mse = nn.MSELoss()
ce = nn.CrossEntropyLoss()
logits = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 0.3]])
with Census() as c:
    l1 = mse(logits, torch.zeros(2, 3))
    l2 = ce(logits, torch.tensor([0, 2]))
print(round(l1.item(), 5), round(l2.item(), 5), c.calls)

import collections

class OpCounter(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.counts = collections.Counter()
    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.counts[resolve_name(func) or repr(func)] += 1
        return func(*args, **(kwargs or {}))

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1))
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (i + 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.linspace(-1, 1, 8).reshape(2, 4)
target = torch.tensor([[0.5], [-0.5]])
counter = OpCounter()
with counter:
    out = model(x)
    loss = nn.functional.mse_loss(out, target)
print(round(loss.item(), 6))
for k in ["torch.nn.functional.linear", "torch.tanh", "torch.nn.functional.mse_loss"]:
    print(k, counter.counts[k])
loss.backward()
opt.step()
print([round(v, 5) for v in model[2].weight.flatten().tolist()])
print(round(model[0].bias.grad.abs().sum().item(), 6))
with OpCounter() as c2:
    opt.zero_grad()
    loss2 = nn.functional.mse_loss(model(x), target)
    loss2.backward()
print(round(loss2.item(), 6))
print(c2.counts["torch.Tensor.backward"])

from torch.overrides import resolve_name

calls = []

class LoggingTensor(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        name = resolve_name(func) or getattr(func, "__name__", str(func))
        calls.append(name)
        return super().__torch_function__(func, types, args, kwargs)

x = torch.arange(6, dtype=torch.float32).reshape(2, 3).as_subclass(LoggingTensor)
y = x * 2 + 1
z = torch.sigmoid(y).sum(dim=1)
w = z.mean()
print(type(w).__name__, round(w.item(), 4))
for c in calls:
    print(c)
calls.clear()
a = torch.ones(3).as_subclass(LoggingTensor).requires_grad_()
b = (a ** 2).sum()
b.backward()
print(calls)
print(type(a.grad).__name__, a.grad)
print(resolve_name(torch.add), resolve_name(torch.Tensor.add), resolve_name(torch.nn.functional.relu))
print(resolve_name(torch.Tensor.__add__), resolve_name(torch.Tensor.shape.__get__))
print(resolve_name(torch.linalg.norm), resolve_name(torch.Tensor.sum))
