"""Single-image super-resolution on random images, in the style of McCourt/PESR-PyTorch's PSNR
module and the ESPCN/SRCNN training scripts found beside it (written for this corpus, not a
copy): low-resolution inputs made with F.interpolate(mode='lanczos', antialias=True) (PyTorch
2.13's Lanczos-3, PIL's LANCZOS) and compared with antialiased bicubic/bilinear and plain
bicubic, on float and on uint8 images; PSNR by hand (10 * log10(peak ** 2 / mse), with and
without round-and-clamp to 0..255, and via math.log10 of .item()); SSIM with a Gaussian window
built from a list of math.exp values (torch.Tensor([...]), mm of the 1-D window with its
transpose, expand(...).contiguous(), grouped conv2d, window.type_as); an ESPCN (Conv2d + Tanh,
PixelShuffle) with per-group learning rates and an SRCNN with padding_mode='replicate', trained
a few steps with MSE on clamp(0, 1) outputs; the gradient of a PSNR loss through the Lanczos
downsampler.  Every random draw comes from one numpy RandomState.
"""
import math
from math import exp, log10

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.RandomState(11)


class PSNR(nn.Module):
    def __init__(self, r=255):
        super().__init__()
        self.r = r
        self.mse = nn.MSELoss()

    def forward(self, hr, sr, round_clip=True):
        if round_clip:
            hr = torch.clamp(torch.round(hr), 0., 255.)
            sr = torch.clamp(torch.round(sr), 0., 255.)
        return 10 * torch.log10(self.r ** 2 / self.mse(hr, sr))


def gaussian(size, sigma):
    g = torch.Tensor([exp(-(x - size // 2) ** 2 / float(2 * sigma ** 2)) for x in range(size)])
    return g / g.sum()


def create_window(size, channel):
    w1 = gaussian(size, 1.5).unsqueeze(1)
    w2 = w1.mm(w1.t()).float().unsqueeze(0).unsqueeze(0)
    return w2.expand(channel, 1, size, size).contiguous()


def ssim(img1, img2, size=7):
    channel = img1.size(1)
    window = create_window(size, channel).type_as(img1)
    mu1 = F.conv2d(img1, window, padding=size // 2, groups=channel)
    mu2 = F.conv2d(img2, window, padding=size // 2, groups=channel)
    s11 = F.conv2d(img1 * img1, window, padding=size // 2, groups=channel) - mu1.pow(2)
    s22 = F.conv2d(img2 * img2, window, padding=size // 2, groups=channel) - mu2.pow(2)
    s12 = F.conv2d(img1 * img2, window, padding=size // 2, groups=channel) - mu1 * mu2
    c1, c2 = 0.01 ** 2, 0.03 ** 2
    m = ((2 * mu1 * mu2 + c1) * (2 * s12 + c2)) / ((mu1.pow(2) + mu2.pow(2) + c1) * (s11 + s22 + c2))
    return m.mean()


# smooth-ish "images": low-frequency sums of sines plus a little noise, in [0, 1]
yy, xx = np.meshgrid(np.linspace(0, 1, 24), np.linspace(0, 1, 24), indexing="ij")
hr_np = np.stack([0.5 + 0.25 * np.sin(2 * np.pi * (k + 1) * xx) * np.cos(np.pi * (k + 2) * yy)
                  for k in range(6)]).reshape(2, 3, 24, 24)
hr_np = np.clip(hr_np + 0.03 * rng.randn(*hr_np.shape), 0, 1)
hr = torch.tensor(hr_np.astype(np.float32))

lr = F.interpolate(hr, scale_factor=0.5, mode="lanczos", antialias=True)
print("lr", tuple(lr.shape), lr.dtype, round(lr.mean().item(), 5), round(lr.min().item(), 4),
      round(lr.max().item(), 4))
psnr = PSNR()
for name, kw in [("lanczos", dict(mode="lanczos", antialias=True)),
                 ("bicubic_aa", dict(mode="bicubic", antialias=True, align_corners=False)),
                 ("bilinear_aa", dict(mode="bilinear", antialias=True)),
                 ("bicubic", dict(mode="bicubic", align_corners=False))]:
    up = F.interpolate(lr, size=(24, 24), **kw).clamp(0, 1)
    mse = F.mse_loss(up, hr)
    print("{:12s} psnr {:.3f} rounded {:.3f} ssim {:.4f} grad_fn {}".format(
        name, 10 * log10(1 / mse.item()), psnr(hr * 255, up * 255).item(),
        ssim(up, hr).item(), type(F.interpolate(lr.requires_grad_(), size=(24, 24), **kw).grad_fn).__name__))
    lr.requires_grad_(False)

u8 = (hr * 255).round().to(torch.uint8)
small = F.interpolate(u8, size=(10, 9), mode="lanczos", antialias=True)
print("uint8", small.dtype, tuple(small.shape), small.sum().item(), small[0, 0, 0].tolist())
print("uint8 vs float", (small.float() - (F.interpolate(u8.float(), size=(10, 9), mode="lanczos",
                                                         antialias=True).clamp(0, 255))).abs().max().item() < 1.0)


class ESPCN(nn.Module):
    def __init__(self, scale, channels=3, nf=8):
        super().__init__()
        self.first_part = nn.Sequential(nn.Conv2d(channels, nf, 5, padding=2), nn.Tanh(),
                                        nn.Conv2d(nf, nf // 2, 3, padding=1), nn.Tanh())
        self.last_part = nn.Sequential(nn.Conv2d(nf // 2, channels * scale ** 2, 3, padding=1),
                                       nn.PixelShuffle(scale))

    def forward(self, x):
        return self.last_part(self.first_part(x))


class SRCNN(nn.Module):
    def __init__(self, c=3):
        super().__init__()
        self.conv1 = nn.Conv2d(c, 8, 9, padding=4, padding_mode="replicate")
        self.conv2 = nn.Conv2d(8, 4, 1)
        self.conv3 = nn.Conv2d(4, c, 5, padding=2, padding_mode="replicate")

    def forward(self, x):
        return self.conv3(F.relu(self.conv2(F.relu(self.conv1(x)))))


espcn, srcnn = ESPCN(2), SRCNN()
with torch.no_grad():
    for p in list(espcn.parameters()) + list(srcnn.parameters()):
        p.copy_(torch.tensor(rng.randn(*p.shape).astype(np.float32) * 0.1))
print(espcn.last_part, srcnn.conv1)
opt = torch.optim.Adam([{"params": espcn.first_part.parameters()},
                        {"params": espcn.last_part.parameters(), "lr": 1e-3 * 0.1}], lr=1e-3)
opt2 = torch.optim.SGD(srcnn.parameters(), lr=0.05, momentum=0.9)
up_in = F.interpolate(lr, size=(24, 24), mode="bicubic", align_corners=False)
for step in range(4):
    pred = espcn(lr).clamp(0.0, 1.0)
    loss = F.mse_loss(pred, hr)
    opt.zero_grad()
    loss.backward()
    opt.step()
    loss2 = F.mse_loss(srcnn(up_in), hr)
    opt2.zero_grad()
    loss2.backward()
    opt2.step()
    print(step, "espcn {:.6f} psnr {:.3f} | srcnn {:.6f} psnr {:.3f}".format(
        loss.item(), (10. * torch.log10(1. / loss)).item(), loss2.item(),
        10 * math.log10(1 / loss2.item())))
print([g["lr"] for g in opt.param_groups], len(opt.param_groups[1]["params"]))

# gradient of a PSNR-style loss with respect to the high-resolution image, through the
# Lanczos downsampler (float64)
x = torch.tensor(hr_np[:1], requires_grad=True)
y = F.interpolate(x, size=(9, 11), mode="lanczos", antialias=True)
target = torch.tensor(rng.rand(1, 3, 9, 11))
loss = -10 * torch.log10(1.0 / F.mse_loss(y, target))
loss.backward()
print(y.dtype, tuple(y.shape), round(loss.item(), 6), x.grad.dtype,
      [round(v, 8) for v in x.grad[0, 0, 0, :5].tolist()], round(x.grad.abs().sum().item(), 6))
