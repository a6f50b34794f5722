"""channels_last end to end: which ops keep the format, strides, suggest_memory_format checks
as people print them when benchmarking NHWC."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                      nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.GELU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
model = model.to(memory_format=torch.channels_last)
x = torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last)
print(x.stride(), x.is_contiguous())
h = x
for i, layer in enumerate(model):
    h = layer(h)
    print(i, type(layer).__name__, tuple(h.shape), h.stride(), h.is_contiguous(memory_format=torch.channels_last))
y = torch.randn(2, 8, 4, 4).contiguous(memory_format=torch.channels_last)
print((y + 1).stride(), (y * y).stride(), y.relu().stride(), torch.sigmoid(y).stride())
print(y.clone().stride(), y.permute(0, 2, 3, 1).stride(), y.permute(0, 2, 3, 1).is_contiguous())
print(F.interpolate(y, scale_factor=2, mode="nearest").stride())
print(F.avg_pool2d(y, 2).stride())
print(torch.cat([y, y], dim=1).stride())
print(y.sum(1).stride(), y.mean((2, 3), keepdim=True).stride())
print(y.contiguous().stride(), y.reshape(2, -1).stride())
print(y.flatten(1).shape, y.view(2, 8, 16).shape if y.is_contiguous() else "non-contiguous")
try:
    y.view(2, 128)
except RuntimeError as e:
    print("RuntimeError:", str(e)[:80])
try:
    torch.randn(2, 3, 4).to(memory_format=torch.channels_last)
except RuntimeError as e:
    print("RuntimeError:", e)
z = torch.randn(2, 3, 4, 5, 6).to(memory_format=torch.channels_last_3d)
print(z.stride())
ln = nn.LayerNorm(8)
o = ln(y.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
print(o.stride(), o.is_contiguous(), o.is_contiguous(memory_format=torch.channels_last))
print(torch.empty(2, 3, 4, 4, memory_format=torch.channels_last).stride())
print(torch.empty_like(y).stride(), torch.zeros_like(y).stride(), torch.randn_like(y).stride())
print(torch.empty_like(y, memory_format=torch.contiguous_format).stride())
w = model[0].weight
print(w.stride(), w.is_contiguous(memory_format=torch.channels_last))
model[-1](torch.randn(3, 8)).sum().backward()
out = model(x)
out.sum().backward()
print(model[0].weight.grad.stride())
print(x.numpy().strides if hasattr(x, "numpy") else None)
