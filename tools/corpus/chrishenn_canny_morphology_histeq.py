"""Classical image filters written as tensor ops on synthetic images: Sobel and Gaussian kernels
in nn.Conv2d layers with reflect/replicate/circular padding modes and groups, a Canny-style
edge detector (atan2 gradient phase, round/fmod direction bins, neighbour selection by a
one-hot conv and gather, hysteresis by a 3x3 conv), morphology with max_pool2d (erosion,
dilation, opening, closing, top-hat), a median filter with F.unfold + median, histogram
equalisation (bincount, histc, cumsum, a uint8 lookup table read with gather and indexing),
RGB <-> HSV and YCbCr conversions (aminmax, where, fmod, a 3x3 colour matrix), and Harris
corners (structure tensor, det/trace, NMS with max_pool2d).

Inspired by chrishenn/canny_edge (its module layout of fixed-weight convolutions); the code is
our own.  Images come from closed-form patterns, so nothing depends on a random generator.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def synthetic_rgb(n=2, h=24, w=28):
    yy, xx = torch.meshgrid(torch.arange(h, dtype=torch.float32),
                            torch.arange(w, dtype=torch.float32), indexing="ij")
    imgs = []
    for k in range(n):
        disk = (((xx - 12 - 2 * k) ** 2 + (yy - 11) ** 2) < 40 + 10 * k).float()
        stripes = 0.5 + 0.5 * torch.sin(xx * (0.6 + 0.1 * k) + yy * 0.3)
        ramp = (xx + yy) / (h + w)
        imgs.append(torch.stack([0.7 * disk + 0.3 * ramp, stripes * 0.8, 1.0 - ramp * disk], 0))
    return torch.stack(imgs, 0).clamp(0, 1)


class FixedFilters(nn.Module):
    def __init__(self, padding_mode="reflect"):
        super().__init__()
        kx = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]) / 8.0
        self.sobel = nn.Conv2d(1, 2, 3, padding=1, padding_mode=padding_mode, bias=False)
        self.sobel.weight.data = torch.stack([kx, kx.t()], 0).unsqueeze(1)
        g = torch.exp(-torch.linspace(-2, 2, 5) ** 2 / 2.0)
        g2 = torch.outer(g, g)
        self.blur = nn.Conv2d(3, 3, 5, padding=2, groups=3, padding_mode="replicate", bias=False)
        self.blur.weight.data.copy_((g2 / g2.sum()).expand(3, 1, 5, 5))
        self.requires_grad_(False)

    def forward(self, rgb):
        blurred = self.blur(rgb)
        gray = (blurred * torch.tensor([0.299, 0.587, 0.114]).view(1, 3, 1, 1)).sum(1, keepdim=True)
        return blurred, gray, self.sobel(gray)


def canny(gray_grad, low=0.02, high=0.08):
    gx, gy = gray_grad[:, :1], gray_grad[:, 1:]
    mag = torch.sqrt(gx ** 2 + gy ** 2).mul(1e4).round().div(1e4)   # ties stay ties
    phase = torch.atan2(gy, gx + 1e-6)
    bins = phase.div(math.pi / 4).round().add(4).fmod(4).long()        # 4 directions
    offsets = [(0, 1), (1, 1), (1, 0), (1, -1)]
    sel = torch.zeros(8, 1, 3, 3)
    for d, (dy, dx) in enumerate(offsets):
        sel[2 * d, 0, 1 + dy, 1 + dx] = 1.0
        sel[2 * d + 1, 0, 1 - dy, 1 - dx] = 1.0
    neighbours = F.conv2d(mag, sel, padding=1)                           # (N, 8, H, W)
    idx = torch.cat([2 * bins, 2 * bins + 1], 1)
    pair = neighbours.gather(1, idx)
    keep = (mag >= pair[:, :1]) & (mag >= pair[:, 1:])
    thin = torch.where(keep, mag, torch.zeros_like(mag))
    strong = thin > high
    weak = (thin > low) & ~strong
    near_strong = F.conv2d(strong.float(), torch.ones(1, 1, 3, 3), padding=1) > 0
    edges = strong | (weak & near_strong)
    return mag, bins, thin, edges


def erode(x, k=3):
    return -F.max_pool2d(-x, k, stride=1, padding=k // 2)


def dilate(x, k=3):
    return F.max_pool2d(x, k, stride=1, padding=k // 2)


def median_filter(x, k=3):
    n, c, h, w = x.shape
    cols = F.unfold(F.pad(x, (k // 2,) * 4, mode="reflect"), k)
    return cols.view(n, c, k * k, h * w).median(dim=2).values.view(n, c, h, w)


def equalize_uint8(img_u8):
    hist = torch.bincount(img_u8.flatten().long(), minlength=256)
    cdf = hist.cumsum(0)
    cdf_min = cdf[cdf > 0].min()
    lut = ((cdf - cdf_min).float() * 255 / (cdf[-1] - cdf_min).float()).round().clamp(0, 255)
    lut = lut.to(torch.uint8)
    return hist, lut, lut[img_u8.long()], torch.gather(lut, 0, img_u8.flatten().long()).view_as(img_u8)


def rgb_to_hsv(rgb):
    r, g, b = rgb.unbind(-3)
    minc, maxc = torch.aminmax(rgb, dim=-3)
    delta = maxc - minc
    safe = torch.where(delta > 0, delta, torch.ones_like(delta))
    h = torch.where(maxc == r, (g - b) / safe,
                    torch.where(maxc == g, 2.0 + (b - r) / safe, 4.0 + (r - g) / safe))
    h = torch.fmod(h / 6.0 + 1.0, 1.0) * (delta > 0)
    s = torch.where(maxc > 0, delta / torch.where(maxc > 0, maxc, torch.ones_like(maxc)),
                    torch.zeros_like(maxc))
    return torch.stack([h, s, maxc], -3)


def hsv_to_rgb(hsv):
    h, s, v = hsv.unbind(-3)
    k = torch.stack([(5 + h * 6) % 6, (3 + h * 6) % 6, (1 + h * 6) % 6], -3)
    return v.unsqueeze(-3) - (v * s).unsqueeze(-3) * torch.clamp(torch.minimum(k, 4 - k), 0, 1)


def harris(gray, kappa=0.05):
    kx = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]).view(1, 1, 3, 3) / 8
    padded = F.pad(gray, (1, 1, 1, 1), mode="replicate")
    ix, iy = F.conv2d(padded, kx), F.conv2d(padded, kx.transpose(2, 3))
    window = torch.ones(1, 1, 3, 3) / 9
    sxx = F.conv2d(ix * ix, window, padding=1)
    syy = F.conv2d(iy * iy, window, padding=1)
    sxy = F.conv2d(ix * iy, window, padding=1)
    m = torch.stack([torch.cat([sxx, sxy], 1), torch.cat([sxy, syy], 1)], 1).permute(0, 3, 4, 1, 2)
    resp = torch.linalg.det(m) - kappa * torch.diagonal(m, dim1=-2, dim2=-1).sum(-1) ** 2
    peaks = (resp == F.max_pool2d(resp.unsqueeze(1), 5, 1, 2).squeeze(1)) & (resp > 0.2 * resp.max())
    return resp, peaks


rgb = synthetic_rgb()
print("image", rgb.shape, rgb.dtype, round(rgb.mean().item(), 5))

for mode in ["reflect", "replicate", "circular", "zeros"]:
    filt = FixedFilters(mode)
    blurred, gray, grad = filt(rgb)
    print(mode, filt.sobel, grad.shape, round(grad.abs().sum().item(), 4),
          round(grad[1, 0, 0, :4].sum().item(), 5))
print("blur", blurred.shape, round(blurred.std().item(), 5), filt.blur.weight.requires_grad)

mag, bins, thin, edges = canny(grad)
print("canny bins", torch.bincount(bins.flatten(), minlength=4).tolist())
print("canny edges", edges.dtype, edges.sum().item(), edges[0, 0, 11, 2:14].int().tolist())
print("thin", round(thin.sum().item(), 4), (thin > 0).sum().item())

mask = (gray > gray.mean()).float()
opened, closed = dilate(erode(mask)), erode(dilate(mask))
tophat = gray - dilate(erode(gray, 5), 5)
print("morph", mask.sum().item(), opened.sum().item(), closed.sum().item(),
      round(tophat.sum().item(), 4), (dilate(mask) - erode(mask)).sum().item())
pooled, where = F.max_pool2d(gray, 2, return_indices=True)
print("maxpool idx", where[0, 0, 0].tolist(), F.max_unpool2d(pooled, where, 2).count_nonzero().item())

noisy = rgb.clone()
noisy[:, :, ::5, ::7] = 1.0
noisy[:, :, 2::6, 3::5] = 0.0
den = median_filter(noisy)
print("median", den.shape, round((den - rgb).abs().mean().item(), 5), round((noisy - rgb).abs().mean().item(), 5))
vals, pos = F.unfold(noisy[:1, :1], 3).median(dim=1)
print("unfold median", vals.shape, pos[0, :8].tolist())

img_u8 = (gray[0, 0] * 180 + 30).to(torch.uint8)
hist, lut, eq, eq2 = equalize_uint8(img_u8)
print("hist", hist.dtype, hist.nonzero().flatten()[:6].tolist(), hist.max().item())
print("equalised", eq.dtype, eq.min().item(), eq.max().item(), torch.equal(eq, eq2), eq[5, :8].tolist())
print("histc", torch.histc(gray, bins=8, min=0, max=1).tolist())
print("histogram", torch.histogram(gray.flatten(), bins=4, range=(0.0, 1.0)).hist.tolist())

hsv = rgb_to_hsv(rgb)
back = hsv_to_rgb(hsv)
print("hsv", hsv.shape, [round(v, 5) for v in hsv.mean((0, 2, 3)).tolist()],
      round((back - rgb).abs().max().item(), 6))
hue_angle = torch.atan2(math.sqrt(3) * (rgb[:, 1] - rgb[:, 2]), 2 * rgb[:, 0] - rgb[:, 1] - rgb[:, 2])
print("atan2 hue", round(hue_angle.mean().item(), 5), round((hue_angle % (2 * math.pi)).max().item(), 5))
ycc = torch.tensor([[0.299, 0.587, 0.114], [-0.168736, -0.331264, 0.5], [0.5, -0.418688, -0.081312]])
y = torch.einsum("ij,njhw->nihw", ycc, rgb) + torch.tensor([0.0, 0.5, 0.5]).view(1, 3, 1, 1)
rgb_back = torch.einsum("ij,njhw->nihw", torch.linalg.inv(ycc), y - torch.tensor([0.0, 0.5, 0.5]).view(1, 3, 1, 1))
print("ycbcr", [round(v, 5) for v in y.mean((0, 2, 3)).tolist()], round((rgb_back - rgb).abs().max().item(), 5))

resp, peaks = harris(gray)
print("harris", resp.shape, round(resp.max().item(), 7), peaks.sum().item(), peaks.nonzero()[:3].tolist())

x = rgb.clone().requires_grad_(True)
blurred, gray2, grad2 = FixedFilters("reflect")(x)
loss = grad2.pow(2).mean() + median_filter(x).mean()
loss.backward()
print("grad", round(loss.item(), 6), round(x.grad.abs().sum().item(), 5), x.grad.shape)
