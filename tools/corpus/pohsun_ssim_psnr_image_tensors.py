"""Image metrics and augmentations written as tensor ops: SSIM with a separable Gaussian window
(outer product, expand + contiguous, depthwise conv2d with groups) used as a loss and as a
metric, PSNR, uint8 images resized with F.interpolate (bilinear, bicubic, antialias: PyTorch's
fixed-point uint8 kernels), flips, crops, rot90, F.pad modes, affine_grid + grid_sample
rotation, pixel_shuffle / unfold / fold round trips, mixup and cutmix.

Inspired by Po-Hsun-Su/pytorch-ssim (its gaussian window and _ssim); the code is our own.
Everything random comes from numpy, so the output does not depend on torch's generator.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F

rs = np.random.RandomState(5)


def gaussian_window(size, sigma, channels):
    coords = torch.arange(size, dtype=torch.float32) - size // 2
    g = torch.exp(-coords ** 2 / (2 * sigma ** 2))
    g = (g / g.sum()).unsqueeze(1)
    w2d = g.mm(g.t()).unsqueeze(0).unsqueeze(0)
    return w2d.expand(channels, 1, size, size).contiguous()


def ssim(a, b, size=7, sigma=1.5, data_range=1.0, per_image=False):
    c = a.shape[1]
    w = gaussian_window(size, sigma, c).to(a.dtype)
    mu_a = F.conv2d(a, w, padding=size // 2, groups=c)
    mu_b = F.conv2d(b, w, padding=size // 2, groups=c)
    var_a = F.conv2d(a * a, w, padding=size // 2, groups=c) - mu_a ** 2
    var_b = F.conv2d(b * b, w, padding=size // 2, groups=c) - mu_b ** 2
    cov = F.conv2d(a * b, w, padding=size // 2, groups=c) - mu_a * mu_b
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    m = ((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / ((mu_a ** 2 + mu_b ** 2 + c1) * (var_a + var_b + c2))
    return m.flatten(1).mean(1) if per_image else m.mean()


def psnr(a, b, data_range=1.0):
    mse = F.mse_loss(a, b, reduction="none").flatten(1).mean(1)
    return 10 * torch.log10(data_range ** 2 / mse)


def r4(t):
    return [round(v, 4) for v in t.flatten().tolist()]


clean = torch.from_numpy(rs.uniform(0, 1, (2, 3, 16, 16)).astype(np.float32))
noisy = (clean + torch.from_numpy(rs.normal(0, 0.1, clean.shape).astype(np.float32))).clamp(0, 1)
print("window", gaussian_window(7, 1.5, 3).shape, round(gaussian_window(7, 1.5, 1).sum().item(), 5))
print("ssim", round(ssim(clean, clean).item(), 5), r4(ssim(clean, noisy, per_image=True)))
print("psnr", r4(psnr(clean, noisy)), psnr(clean, noisy).dtype)
print("ssim f64", round(ssim(clean.double(), noisy.double()).item(), 6))

# SSIM as a loss: recover the clean image from the noisy one
img = noisy.clone().requires_grad_(True)
opt = torch.optim.Adam([img], lr=0.02)
for step in range(4):
    loss = 1 - ssim(img, clean) + 0.1 * F.l1_loss(img, clean)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        img.clamp_(0, 1)
    print("restore", step, round(loss.item(), 5), round(img.grad.abs().mean().item(), 6))

# uint8 images, as read from disk, resized
u8 = torch.from_numpy(rs.randint(0, 256, (1, 3, 9, 7)).astype(np.uint8))
for mode, kw in (("bilinear", {}), ("bilinear", {"align_corners": True}), ("bicubic", {}),
                 ("bilinear", {"antialias": True}), ("bicubic", {"antialias": True})):
    for size in ((14, 11), (4, 3)):
        out = F.interpolate(u8, size=size, mode=mode, **kw)
        print("resize", mode, kw, size, out.dtype, out.sum().item(), out[0, 0, 0].tolist())
print("nearest", F.interpolate(u8, scale_factor=2, mode="nearest")[0, 1, :2, :4].tolist())
as_float = u8.permute(0, 2, 3, 1).float().div(255)
print("to float", as_float.shape, round(as_float.mean().item(), 5))

# geometric augmentations
x = clean[:1]
print("hflip", torch.equal(x.flip(-1)[..., 0], x[..., -1]), "rot90", torch.equal(torch.rot90(x, 2, (2, 3)), x.flip(2).flip(3)))
crop = x[..., 3:13, 2:12]
for mode in ("constant", "reflect", "replicate", "circular"):
    p = F.pad(crop, (2, 1, 3, 0), mode=mode)
    print("pad", mode, p.shape, round(p.sum().item(), 4))
theta = torch.tensor([[[math.cos(0.3), -math.sin(0.3), 0.1], [math.sin(0.3), math.cos(0.3), -0.05]]])
grid = F.affine_grid(theta, list(x.shape), align_corners=False)
for pm in ("zeros", "border", "reflection"):
    rot = F.grid_sample(x, grid, mode="bilinear", padding_mode=pm, align_corners=False)
    print("rotate", pm, round(rot.sum().item(), 4))
theta_req = theta.clone().requires_grad_(True)
F.grid_sample(x, F.affine_grid(theta_req, list(x.shape), align_corners=False),
              align_corners=False).pow(2).mean().backward()
print("d theta", r4(theta_req.grad))

up = F.pixel_shuffle(torch.arange(2 * 8 * 2 * 2, dtype=torch.float32).reshape(2, 8, 2, 2), 2)
print("pixel_shuffle", up.shape, up[0, 0].tolist(), torch.equal(F.pixel_unshuffle(up, 2).flatten(), torch.arange(64.)))
patches = F.unfold(clean, kernel_size=4, stride=4)
print("patches", patches.shape, torch.equal(F.fold(patches, (16, 16), kernel_size=4, stride=4), clean))
overlap = F.unfold(clean, kernel_size=3, padding=1)
count = F.fold(torch.ones_like(overlap), (16, 16), kernel_size=3, padding=1)
print("overlap", count[0, 0, :2, :3].tolist(), torch.allclose(F.fold(overlap, (16, 16), kernel_size=3, padding=1) / count, clean))

# mixup and cutmix with a fixed permutation and lambda
y = torch.tensor([1, 4])
perm = torch.tensor([1, 0])
lam = 0.7
mixed = lam * clean + (1 - lam) * clean[perm]
soft = lam * F.one_hot(y, 5).float() + (1 - lam) * F.one_hot(y[perm], 5).float()
print("mixup", round(mixed.sum().item(), 4), soft.tolist())
cut = clean.clone()
cut[:, :, 4:12, 2:8] = clean[perm, :, 4:12, 2:8]
lam_cut = 1 - (8 * 6) / (16 * 16)
logits = torch.from_numpy(rs.normal(0, 1, (2, 5)).astype(np.float32))
loss = lam_cut * F.cross_entropy(logits, y) + (1 - lam_cut) * F.cross_entropy(logits, y[perm])
print("cutmix", round(cut.sum().item(), 4), lam_cut, round(loss.item(), 5),
      round(F.cross_entropy(logits, soft).item(), 5))
