"""xbresson/CE7454 lab (lecture 03, linear module) style: an nn.Linear's parameters, writing single
weights (refused on a leaf that requires grad, as "a view of a leaf Variable" when the index
takes a view first, "a leaf Variable" for index arrays and whole slices; allowed under no_grad
and through .data), a Linear without bias, and softmax / cross-entropy by hand and by nn."""
import torch
import torch.nn as nn
import torch.nn.functional as F

mod = nn.Linear(5, 3)
print(mod)
with torch.no_grad():
    mod.weight.copy_(torch.arange(15, dtype=torch.float32).view(3, 5) / 10 - 0.7)
    mod.bias.fill_(0.1)

x = torch.linspace(0.2, 1, 5)
print(x, x.size())
y = mod(x)
print(y)
print(mod.weight.size(), mod.bias.size())

for key in [(0, 0), 0, (slice(None), 1), (Ellipsis, 2), slice(1, 3), [0, 2], slice(None),
            (mod.weight > 0), (torch.tensor(1), slice(None)), (slice(None), slice(-5, None))]:
    try:
        mod.weight[key] = 0.5
        print(key, "written")
    except RuntimeError as e:
        print(type(e).__name__, "|", e)

with torch.no_grad():
    mod.weight[0, 0] = 0
    mod.weight[0, 1] = 1
mod.weight.data[0, 2] = 2
print(mod.weight)

mod2 = nn.Linear(5, 3, bias=False)
print(mod2)
print(mod2.bias)
with torch.no_grad():
    mod2.weight.copy_(mod.weight)
print(mod2(x) + mod.bias)

scores = torch.stack([y, y * 2, -y])
labels = torch.tensor([2, 0, 1])
p = F.softmax(scores, dim=1)
print(p)
manual = -torch.log(p[torch.arange(3), labels]).mean()
loss = nn.CrossEntropyLoss()(scores, labels)
print(manual, loss)
loss.backward()
print(mod.weight.grad)
print(mod.bias.grad)
