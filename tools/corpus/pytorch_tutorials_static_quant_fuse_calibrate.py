import torch
import torch.nn as nn
from torch.ao.quantization import QuantStub, DeQuantStub, fuse_modules, fuse_modules_qat, get_default_qconfig, prepare, convert
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = QuantStub()
        self.conv = nn.Conv2d(1, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.fc = nn.Linear(4 * 4 * 4, 3)
        self.dequant = DeQuantStub()
    def forward(self, x):
        x = self.quant(x)
        x = self.relu(self.bn(self.conv(x)))
        x = torch.flatten(x, 1)
        x = self.fc(x)
        return self.dequant(x)
torch.manual_seed(0)
m = M()
with torch.no_grad():
    for i, p in enumerate(m.parameters()):
        p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.7 + i).reshape(p.shape) * 0.3)
m.eval()
print(m)
fused = fuse_modules(m, [['conv', 'bn', 'relu']])
print(fused)
fused.qconfig = get_default_qconfig('x86')
print(fused.qconfig)
prepared = prepare(fused)
print(prepared)
for i in range(4):
    prepared(torch.linspace(-1, 1, 36 * 2).reshape(2, 1, 6, 6) * (i + 1))
q = convert(prepared)
print(q)
out = q(torch.linspace(-1, 1, 36).reshape(1, 1, 6, 6))
print(out)
print(q.conv.scale, q.conv.zero_point)
print(q.fc.weight().int_repr()[0, :8])

# --- a MobileNet-style block: fuse conv/bn/relu inside submodules, then calibrate with the fbgemm qconfig
class ConvBNReLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
    def forward(self, x):
        return self.relu(self.bn(self.conv(x)))
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = QuantStub()
        self.features = nn.Sequential(ConvBNReLU(), nn.Conv2d(8, 4, 3, stride=2), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.dequant = DeQuantStub()
    def forward(self, x):
        x = self.quant(x)
        x = self.features(x)
        x = self.dequant(x)
        return self.pool(x).flatten(1)
net = Net()
with torch.no_grad():
    for i, p in enumerate(net.parameters()):
        p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.3 + i).reshape(p.shape) * 0.5)
try:
    fuse_modules(net, [["features.0.conv", "features.0.bn", "features.0.relu"]])
except AssertionError as e:
    print("AssertionError", e)
qat_fused = fuse_modules_qat(net, [["features.0.conv", "features.0.bn", "features.0.relu"]])
print(qat_fused.features[0])
net.eval()
for name, m in net.named_modules():
    if isinstance(m, ConvBNReLU):
        fuse_modules(m, ["conv", "bn", "relu"], inplace=True)
fuse_modules(net, [["features.1", "features.2"]], inplace=True)
print(net)
net.qconfig = get_default_qconfig("fbgemm")
torch.backends.quantized.engine = "x86"
p = prepare(net)
x = torch.sin(torch.arange(2 * 3 * 8 * 8, dtype=torch.float32)).reshape(2, 3, 8, 8)
p(x)
q = convert(p)
print(q)
print(q.features[0].conv.weight().int_repr()[0, 0])
print(q.features[0].conv.weight().q_per_channel_scales())
out = q(x)
print(out)
ref = net(x)
print((out - ref).abs().max() < 0.05)
try:
    q.features[1](x)
except Exception as e:
    print(type(e).__name__)
try:
    fuse_modules(net, [["pool", "dequant"]])
except Exception as e:
    print(type(e).__name__)
