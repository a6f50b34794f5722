"""A fixed Gabor filter-bank front end (kernels built element by element from integer draws cast
with .type(torch.Tensor)), a double-sided threshold activation, a top-coefficient mask, and a
small decoder that resizes with bicubic interpolation; three SGD steps on the decoder.

Written for tapegrad's corpus in the style of metehancekic/pytorch-tutorials (custom_layers
gabor.py, double_sided_relu.py, can_tools.py's resize_decoder); all values drawn with numpy.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(0)


def gabor_bank(out_ch, in_ch, k):
    freq = (math.pi / 2) * math.sqrt(2) ** (-torch.tensor(rng.integers(0, 5, (out_ch, in_ch)))).type(torch.Tensor)
    theta = (math.pi / 8) * torch.tensor(rng.integers(0, 8, (out_ch, in_ch))).type(torch.Tensor)
    sigma = math.pi / freq
    psi = math.pi * torch.tensor(rng.random((out_ch, in_ch)), dtype=torch.float32)
    half = math.ceil(k / 2)
    y, x = torch.meshgrid(torch.linspace(-half + 1, half, k), torch.linspace(-half + 1, half, k), indexing="ij")
    weight = torch.zeros(out_ch, in_ch, k, k)
    for i in range(out_ch):
        for j in range(in_ch):
            rotx = x * torch.cos(theta[i, j]) + y * torch.sin(theta[i, j])
            roty = -x * torch.sin(theta[i, j]) + y * torch.cos(theta[i, j])
            g = torch.exp(-0.5 * (rotx ** 2 + roty ** 2) / (sigma[i, j] + 1e-3) ** 2)
            weight[i, j] = g * torch.cos(freq[i, j] * rotx + psi[i, j]) / (2 * math.pi * sigma[i, j] ** 2)
    return weight / weight.abs().sum(dim=(1, 2, 3), keepdim=True)


def dt_relu(x, filters, eps=8.0 / 255):
    bias = eps * filters.abs().sum(dim=(1, 2, 3)).view(1, -1, 1, 1)
    return F.relu(x - bias) + bias * torch.sign(F.relu(x - bias)) - F.relu(-x - bias) - bias * torch.sign(F.relu(-x - bias))


def take_top(x):
    _, idx = x.abs().max(1, keepdim=True)
    return x * torch.zeros_like(x).scatter_(1, idx, 1.0)


class Decoder(nn.Module):
    def __init__(self, cin):
        super().__init__()
        self.c1 = nn.ConvTranspose2d(cin, 6, 3)
        self.c2 = nn.Conv2d(6, 3, 3, padding=1)
        for p in self.parameters():
            p.data = torch.tensor(rng.normal(0, 0.2, tuple(p.shape)), dtype=torch.float32)

    def forward(self, x):
        out = F.relu(self.c1(x))
        out = F.interpolate(out, size=12, mode="bicubic")
        return self.c2(out)


bank = gabor_bank(8, 3, 5)
print("bank", tuple(bank.shape), bank.dtype, round(bank.sum().item(), 4), round(bank.abs().max().item(), 4))
images = torch.tensor(rng.random((4, 3, 10, 10)), dtype=torch.float32)
coeff = F.conv2d(images, bank, padding=2)
act = take_top(dt_relu(coeff, bank))
print("active per position", (act != 0).sum(1).float().mean().item(), "kept", (act != 0).sum().item())
dec = Decoder(8)
opt = torch.optim.SGD(dec.parameters(), lr=0.05, momentum=0.9)
target = F.interpolate(images, size=(12, 12), mode="bicubic", align_corners=True)
for step in range(3):
    opt.zero_grad()
    loss = F.mse_loss(dec(act), target)
    loss.backward()
    print(step, "loss %.5f" % loss.item(), "grad c1 %.5f" % dec.c1.weight.grad.abs().sum().item())
    opt.step()
x = torch.tensor(rng.standard_normal((1, 2, 4, 5)), requires_grad=True)
up = F.interpolate(x, scale_factor=(1.5, 0.6), mode="bicubic")
up.pow(2).sum().backward()
print("bicubic", tuple(up.shape), up.dtype, np.round(x.grad.numpy().ravel()[:6], 4).tolist())
for bad in [lambda: F.conv2d(images, bank[0, 0]),
            lambda: F.interpolate(images[0], size=4, mode="bicubic"),
            lambda: F.interpolate(images.long(), size=4, mode="bicubic"),
            lambda: images.type(nn.Parameter)]:
    try:
        bad()
    except Exception as e:
        print(type(e).__name__, str(e)[:90])
