"""A preprocessing pipeline of nn.Module transforms on a uint8 image tensor (Compose, ToFloat,
reflect Pad, CenterCrop, horizontal flip, Normalize with registered mean/std buffers), then every
padding mode of F.pad (constant, reflect, replicate, circular; 1-d, 2-d and 3-d, negative pads),
the nn padding layers, the gradient of reflect padding, and torch.roll."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import random
torch.manual_seed(0); random.seed(0)
class Compose:
    def __init__(self, ts): self.ts = ts
    def __call__(self, x):
        for t in self.ts:
            x = t(x)
        return x
class ToFloat(nn.Module):
    def forward(self, x): return x.float().div(255.0)
class Normalize(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.as_tensor(mean).view(-1, 1, 1))
        self.register_buffer("std", torch.as_tensor(std).view(-1, 1, 1))
    def forward(self, x): return (x - self.mean) / self.std
class RandomHFlip(nn.Module):
    def __init__(self, p=0.5): super().__init__(); self.p = p
    def forward(self, x):
        return x.flip(-1) if torch.rand(1).item() < self.p else x
class CenterCrop(nn.Module):
    def __init__(self, s): super().__init__(); self.s = s
    def forward(self, x):
        h, w = x.shape[-2:]
        t = (h - self.s) // 2; l = (w - self.s) // 2
        return x[..., t:t + self.s, l:l + self.s]
class Pad(nn.Module):
    def __init__(self, p, mode): super().__init__(); self.p, self.mode = p, mode
    def forward(self, x):
        return F.pad(x.unsqueeze(0), [self.p] * 4, mode=self.mode).squeeze(0)
u8 = (torch.arange(3 * 10 * 10) * 7 % 256).to(torch.uint8).view(3, 10, 10)
tf = Compose([ToFloat(), Pad(2, 'reflect'), CenterCrop(8), RandomHFlip(1.0), Normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25])])
out = tf(u8)
print(out.shape, out.dtype, out[0, 0].round(decimals=3))
seq = nn.Sequential(ToFloat(), Normalize((0.4, 0.5, 0.6), (0.2, 0.2, 0.2)))
print(seq(u8).mean(dim=(1, 2)))
print(list(dict(seq.named_buffers()).keys()))
print(seq.state_dict()["1.mean"].shape)
x = torch.rand(4, 3, 8, 8)
for mode in ['constant', 'reflect', 'replicate', 'circular']:
    y = F.pad(x, (1, 2, 3, 0), mode=mode)
    print(mode, y.shape)
z = torch.arange(9.).view(1, 1, 3, 3)
print(F.pad(z, (1, 1, 1, 1), mode='reflect')[0, 0])
print(F.pad(z, (2, 0, 0, 2), mode='replicate')[0, 0])
print(F.pad(z, (1, 1, 1, 1), mode='circular')[0, 0])
print(nn.ReflectionPad2d(1)(z).shape, nn.ReplicationPad2d((1, 0, 0, 1))(z)[0, 0], nn.ZeroPad2d(1)(z).sum(), nn.ConstantPad2d(1, 3.5)(z)[0, 0, 0])
print(nn.CircularPad2d(1)(z)[0,0,0] if hasattr(nn, 'CircularPad2d') else None)
zz = z.double().requires_grad_()
F.pad(zz, (2, 2, 2, 2), mode='reflect').sum().backward()
print(zz.grad)
z3 = torch.arange(8.).view(1, 1, 2, 2, 2)
print(F.pad(z3, (1, 1, 1, 1, 1, 1), mode='replicate').shape, F.pad(z3, (1,)*6, mode='circular').sum())
print(torch.roll(torch.arange(6).view(2, 3), shifts=1, dims=1), torch.roll(torch.arange(4), 2))
print(F.pad(torch.arange(6.).view(2,3), (1, 1), mode='reflect'))
try:
    F.pad(torch.arange(6.).view(1, 2, 3), (1, 1, 1, 1, 1, 1), mode='reflect')
except (RuntimeError, NotImplementedError) as e:
    print(type(e).__name__, str(e)[:80])
print(F.pad(x, (-1, -1, 0, 0)).shape)
