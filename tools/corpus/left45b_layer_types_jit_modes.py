"""Tutorial idioms around classes and dispatch: printing the type names of a model's layers, walking
modules by type, a TorchFunctionMode that logs and forwards calls on a bfloat16 model, saved-
tensor hooks that record what autograd keeps, and the torch.jit helpers older code calls."""
from typing import Dict, List, Optional

import torch
from torch import nn

torch.manual_seed(0)

model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                      nn.Linear(4 * 4 * 4, 10), nn.LogSoftmax(dim=1))
for name, layer in model.named_children():
    print(name, type(layer).__name__)
print(type(model).__name__)
counts = {}
for m in model.modules():
    counts[type(m).__name__] = counts.get(type(m).__name__, 0) + 1
print(sorted(counts.items()))
print([type(m).__name__ for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))])


class Logger(torch.overrides.TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.append(torch.overrides.resolve_name(func) or func.__name__)
        return func(*args, **(kwargs or {}))


small = nn.Linear(4, 3)
with torch.no_grad():       # (exact starting values: the layer's dtype is what is on show)
    small.weight.copy_(torch.arange(12.0).reshape(3, 4) / 16 - 0.25)
    small.bias.fill_(0.125)
small = small.to(torch.bfloat16)
x = (torch.arange(8.0).reshape(2, 4) / 8).to(torch.bfloat16)
with Logger() as log:
    y = small(x)
    first = y[0]
    kept = y.detach()
    flat = y.T.reshape(-1)
print(y.dtype, first.dtype, kept.dtype, flat.dtype, y.float().sum().item())
print(sorted(set(log.names)))

saved = []


def pack(t):
    saved.append((str(t.dtype), tuple(t.shape)))
    return t


w = torch.tensor([0.5, -1.25, 2.0], requires_grad=True).to(torch.bfloat16)
c = torch.tensor([1.5, 0.75, -0.5]).to(torch.bfloat16)
with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    z = (w * c).sum()
z.backward()
print(saved)

print(torch.jit.isinstance([1, 2], List[int]), torch.jit.isinstance({"a": [1.0]}, Dict[str, List[float]]),
      torch.jit.isinstance(None, Optional[torch.Tensor]), torch.jit.isinstance(["a"], List[int]))
attr = torch.jit.Attribute(0.5, float)
print(attr, attr.value)
try:
    raise torch.jit.Error("scripted check failed")
except torch.jit.Error as e:
    print(type(e).__name__, e)
with torch.jit.fuser("fuser1"):
    print(torch._C._jit_texpr_fuser_enabled(), torch._C._jit_can_fuse_on_cpu())
print(torch._C._jit_set_profiling_executor(False), torch._C._jit_set_profiling_executor(True))
