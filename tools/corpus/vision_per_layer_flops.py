"""A per-layer FLOP breakdown of two vision models as benchmarking notebooks print it: a small
CNN (strided conv with bias, a grouped conv, a depthwise-separable pair, batch norm, pooling, a
linear head) and a ViT-style model (patch embedding conv, nn.TransformerEncoderLayer blocks in
training mode, a classifier).  FlopCounterMode's get_flop_counts() is walked by module name, down
to a chosen depth, with each module's share and its ops by their printed names; forward alone,
forward+backward, and inference under no_grad in eval mode (where PyTorch's fused encoder-layer
fast path is not one of the ops its counter has a formula for)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode


def fill(module, scale=0.1):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            k = torch.arange(p.numel(), dtype=torch.float32)
            p.copy_((torch.cos(k * 0.53 + 0.7 * i) * scale).reshape(p.shape))
    return module


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16),
                                  nn.ReLU())
        self.grouped = nn.Conv2d(16, 32, 3, padding=1, groups=4)
        self.separable = nn.Sequential(
            nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False),       # depthwise
            nn.Conv2d(32, 48, 1))                                          # pointwise
        self.head = nn.Linear(48, 10)

    def forward(self, x):
        x = self.stem(x)
        x = F.max_pool2d(F.relu(self.grouped(x)), 2)
        x = F.relu(self.separable(x))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


class TinyViT(nn.Module):
    def __init__(self, dim=32, depth=2, patch=4):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.blocks = nn.ModuleList([
            nn.TransformerEncoderLayer(dim, 4, 2 * dim, dropout=0.0, batch_first=True,
                                       norm_first=True) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.cls = nn.Linear(dim, 10)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        for block in self.blocks:
            x = block(x)
        return self.cls(self.norm(x).mean(1))


def report(title, counter, depth):
    counts = counter.get_flop_counts()
    total = counter.get_total_flops()
    print(f"-- {title}: {total} FLOPs")
    for name in sorted(counts):
        if name == "Global" or name.count(".") + 1 > depth:
            continue
        flops = sum(counts[name].values())
        ops = ", ".join(f"{op}={n}" for op, n in counts[name].items())
        print(f"{'  ' * name.count('.')}{name}: {flops} ({flops / total:.2%}) [{ops}]")


x = torch.linspace(-1, 1, 2 * 3 * 16 * 16).view(2, 3, 16, 16)
for model in (fill(SmallCNN()), fill(TinyViT())):
    with FlopCounterMode(display=False) as forward:
        model(x)
    report(f"{type(model).__name__} forward", forward, depth=2)
    with FlopCounterMode(display=False) as step:
        out = model(x)
        (out ** 2).mean().backward()
    report(f"{type(model).__name__} forward+backward", step, depth=3)
    print("output checksum:", round(out.sum().item(), 4))
    model.eval()
    with torch.no_grad(), FlopCounterMode(display=False) as inference:
        model(x)
    report(f"{type(model).__name__} eval inference", inference, depth=2)
