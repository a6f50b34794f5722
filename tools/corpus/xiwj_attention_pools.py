"""Channel and spatial attention blocks over global pools: a CBAM block (shared 1x1-conv MLP on
average- and max-pooled channels, 7x7 conv over the channel-wise mean and max), a
squeeze-and-excitation block on Linear layers with expand_as, CBAM's alternative pool types
(lp_pool2d, a hand-written logsumexp pool), and global average pooling of other ranks as
PyTorch computes it: AdaptiveAvgPool2d(1) per frame of a 5-d clip (B, T, C, H, W), of an
unbatched (C, L) map, and adaptive_avg_pool1d / AdaptiveAvgPool3d(1); gradients of all of it
and a few SGD steps of a small attention network.

Inspired by XiWJ/tricks, Network_Module/CBAM/model/CBAM_module.py (CBAM written from
scratch); written for this corpus.  Every weight and input is drawn with numpy.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.RandomState(7)


def fill_(module, scale=0.3):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.tensor(rng.uniform(-scale, scale, size=tuple(p.shape)), dtype=p.dtype))


class ChannelGate(nn.Module):
    def __init__(self, channels, ratio=4):
        super().__init__()
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.max = nn.AdaptiveMaxPool2d(1)
        self.mlp = nn.Sequential(nn.Conv2d(channels, channels // ratio, 1, bias=False),
                                 nn.ReLU(inplace=True),
                                 nn.Conv2d(channels // ratio, channels, 1, bias=False))

    def forward(self, x):
        return torch.sigmoid(self.mlp(self.avg(x)) + self.mlp(self.max(x)))


class SpatialGate(nn.Module):
    def __init__(self, kernel=7):
        super().__init__()
        self.conv = nn.Conv2d(2, 1, kernel, padding=kernel // 2, bias=False)

    def forward(self, x):
        pooled = torch.cat([x.mean(dim=1, keepdim=True), x.max(dim=1, keepdim=True)[0]], dim=1)
        return torch.sigmoid(self.conv(pooled))


class CBAM(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.ca = ChannelGate(channels)
        self.sa = SpatialGate()

    def forward(self, x):
        x = self.ca(x) * x
        return self.sa(x) * x


class SqueezeExcite(nn.Module):
    def __init__(self, channels, ratio=4):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Sequential(nn.Linear(channels, channels // ratio, bias=False), nn.ReLU(),
                                nn.Linear(channels // ratio, channels, bias=False), nn.Sigmoid())

    def forward(self, x):
        b, c = x.shape[:2]
        w = self.fc(self.pool(x).view(b, c)).view(b, c, 1, 1)
        return x * w.expand_as(x)


def lse_pool(x):
    flat = x.view(x.size(0), x.size(1), -1)
    top, _ = flat.max(dim=2, keepdim=True)
    return top + (flat - top).exp().sum(dim=2, keepdim=True).log()


def summary(name, t):
    v = t.detach().double()
    print(f"{name:14s} {tuple(t.shape)} {str(t.dtype):14s} sum={v.sum().item():+.5f} "
          f"absmax={v.abs().max().item():.5f}")


x = torch.tensor(rng.randn(2, 8, 6, 5), dtype=torch.float32, requires_grad=True)
cbam, se = CBAM(8), SqueezeExcite(8)
fill_(cbam)
fill_(se)
y = cbam(x)
z = se(y)
summary("cbam", y)
summary("se", z)
hw = (x.size(2), x.size(3))
pools = {"avg": F.avg_pool2d(x, hw, stride=hw), "max": F.max_pool2d(x, hw, stride=hw),
         "lp": F.lp_pool2d(x, 2, hw, stride=hw), "lse": lse_pool(x)}
for name, p in pools.items():
    summary("pool_" + name, p)
total = z.pow(2).sum() + sum(p.sum() for p in pools.values())
total.backward()
summary("x.grad", x.grad)
for name, p in cbam.named_parameters():
    summary(name, p.grad)

# Global average pooling of other ranks: PyTorch's adaptive average to size 1 is one mean over
# the pooled dims, whatever comes before them.
clip = torch.tensor(rng.randn(2, 3, 4, 5, 6), dtype=torch.float32, requires_grad=True)
per_frame = nn.AdaptiveAvgPool2d(1)(clip)
print("per-frame", tuple(per_frame.shape), per_frame.grad_fn.name())
seq = torch.tensor(rng.randn(4, 7), dtype=torch.float32, requires_grad=True)
for name, out in [("2d of (C, L)", nn.AdaptiveAvgPool2d(1)(seq)),
                  ("1d of (C, L)", F.adaptive_avg_pool1d(seq, 1)),
                  ("1d of (C, L) to 3", F.adaptive_avg_pool1d(seq, 3)),
                  ("3d of (C,D,H,W)", nn.AdaptiveAvgPool3d(1)(clip[0])),
                  ("3d of (D,H,W)", F.adaptive_avg_pool3d(clip[0, 0], 1))]:
    print(name, tuple(out.shape), out.grad_fn.name(), round(out.sum().item(), 5))
(per_frame.sum() + nn.AdaptiveAvgPool2d(1)(seq).sum() * 3).backward()
summary("clip.grad", clip.grad)
summary("seq.grad", seq.grad)
for bad in [lambda: F.adaptive_avg_pool2d(torch.zeros(5), 1),
            lambda: F.adaptive_avg_pool1d(torch.zeros(5), 1),
            lambda: F.adaptive_avg_pool2d(torch.zeros(4, 5), 2),
            lambda: F.adaptive_avg_pool2d(torch.zeros(4, 5), (1, 1))]:
    try:
        bad()
    except (RuntimeError, IndexError, ValueError) as e:
        print(type(e).__name__, str(e).split("(")[0].strip()[:60])

# A few training steps of a small attention network.
net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), CBAM(8),
                    SqueezeExcite(8), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
fill_(net, 0.4)
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
images = torch.tensor(rng.randn(6, 3, 8, 8), dtype=torch.float32)
labels = torch.tensor([0, 1, 2, 3, 0, 1])
for step in range(4):
    loss = F.cross_entropy(net(images), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.5f}")
net.eval()
with torch.no_grad():
    print("eval argmax", net(images).argmax(dim=1).tolist())
