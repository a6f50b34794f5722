"""Edge-aware smoothing, style statistics and block transforms on synthetic images: an O(1) box
filter from cumsum + slicing + torch.cat, the guided filter built on it (differentiable, used
in a loss), AdaIN (var/std/mean over flattened feature maps, expand), Gram-matrix style and
content losses from a small fixed conv feature extractor, optimising the input image itself
with LBFGS and Adam (clamp_ under no_grad), total-variation denoising, and JPEG-style 8x8
block DCT with F.unfold / F.fold, a cosine basis matrix and a straight-through rounding.

Inspired by perrying/guided-filter-pytorch (its cumsum box filter); the code is our own.
Images and weights come from closed-form patterns: no random generator is used.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def pattern(n, c, h, w, f=1.0):
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
    out = [0.5 + 0.5 * torch.tanh(4 * torch.sin(3 * f * xx + (k + 1) * yy) + 2 * torch.cos(5 * yy * f - k))
           for k in range(n * c)]
    return torch.stack(out, 0).view(n, c, h, w)


def box(x, r):
    def along(src, dim):
        cum = src.cumsum(dim)
        n = src.shape[dim]
        left = cum.narrow(dim, r, r + 1)
        middle = cum.narrow(dim, 2 * r + 1, n - 2 * r - 1) - cum.narrow(dim, 0, n - 2 * r - 1)
        right = cum.narrow(dim, n - 1, 1) - cum.narrow(dim, n - 2 * r - 1, r)
        return torch.cat([left, middle, right], dim)
    return along(along(x, -2), -1)


def guided_filter(guide, src, r, eps):
    n = box(torch.ones_like(guide[:1, :1]), r)
    mean_i, mean_p = box(guide, r) / n, box(src, r) / n
    cov_ip = box(guide * src, r) / n - mean_i * mean_p
    var_i = box(guide * guide, r) / n - mean_i ** 2
    a = cov_ip / (var_i + eps)
    b = mean_p - a * mean_i
    return box(a, r) / n * guide + box(b, r) / n


def mean_std(feat, eps=1e-5):
    n, c = feat.shape[:2]
    flat = feat.reshape(n, c, -1)
    return flat.mean(2).view(n, c, 1, 1), (flat.var(dim=2) + eps).sqrt().view(n, c, 1, 1)


def adain(content, style):
    cm, cs = mean_std(content)
    sm, ss = mean_std(style)
    size = content.size()
    return (content - cm.expand(size)) / cs.expand(size) * ss.expand(size) + sm.expand(size)


def gram(feat):
    b, c, h, w = feat.size()
    f = feat.view(b * c, h * w)
    return torch.mm(f, f.t()).div(b * c * h * w)


def tv(x):
    return (x[..., 1:, :] - x[..., :-1, :]).abs().mean() + (x[..., :, 1:] - x[..., :, :-1]).abs().mean()


img = pattern(2, 3, 16, 20)
noisy = (img + 0.15 * torch.sin(torch.arange(img.numel(), dtype=torch.float32) * 12.9898).view_as(img)).clamp(0, 1)
print("box", box(img, 2).shape, round(box(img, 2)[0, 0, :2, :3].sum().item(), 4),
      torch.allclose(box(img, 1)[..., 1:-1, 1:-1], F.avg_pool2d(img, 3, 1) * 9, atol=1e-5))
ref = F.conv2d(img.view(6, 1, 16, 20), torch.ones(1, 1, 5, 5), padding=2).view_as(img)
print("box vs conv", round((box(img, 2) - ref).abs().max().item(), 4))

gray = img.mean(1, keepdim=True)
for r, eps in [(1, 1e-3), (2, 1e-2), (3, 1e-1)]:
    out = guided_filter(gray, noisy, r, eps)
    print("guided", r, eps, out.shape, round(out.mean().item(), 5), round((out - img).abs().mean().item(), 5))

src = noisy.clone().requires_grad_(True)
loss = (guided_filter(gray, src, 2, 1e-2) - img).pow(2).mean()
loss.backward()
print("guided grad", round(loss.item(), 6), round(src.grad.abs().sum().item(), 6))

feats = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1, padding_mode="reflect"),
                      nn.ReLU(), nn.AvgPool2d(2), nn.Conv2d(8, 12, 3, padding=1), nn.Tanh())
with torch.no_grad():
    for i, p in enumerate(feats.parameters()):
        p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * (0.7 + 0.1 * i)).view_as(p) * 0.3)
feats.requires_grad_(False)
content, style = img[:1], pattern(1, 3, 16, 20, f=2.5)
layers = [2, 5, 6]


def features(x):
    outs = []
    for i, layer in enumerate(feats):
        x = layer(x)
        if i in layers:
            outs.append(x)
    return outs


style_grams = [gram(f) for f in features(style)]
content_feat = features(content)[1].detach()
print("style grams", [tuple(g.shape) for g in style_grams], [round(g.trace().item(), 5) for g in style_grams])
t = adain(features(content)[0], features(style)[0])
print("adain", t.shape, [round(v, 4) for v in mean_std(t)[0].flatten()[:4].tolist()])

x = content.clone().requires_grad_(True)
lbfgs = torch.optim.LBFGS([x], max_iter=6)
for rnd in range(2):
    def closure():
        with torch.no_grad():
            x.clamp_(0, 1)
        lbfgs.zero_grad()
        fs = features(x)
        s_loss = sum(F.mse_loss(gram(f), g) for f, g in zip(fs, style_grams)) * 1e3
        c_loss = F.mse_loss(fs[1], content_feat)
        total = s_loss + c_loss + 0.01 * tv(x)
        total.backward()
        return total
    print("style lbfgs", rnd, round(lbfgs.step(closure).item(), 6))
with torch.no_grad():
    x.clamp_(0, 1)
print("stylised", round(x.mean().item(), 5), round((x - content).abs().mean().item(), 5))

den = noisy.clone().requires_grad_(True)
adam = torch.optim.Adam([den], lr=0.02)
for step in range(40):
    adam.zero_grad()
    l = F.mse_loss(den, noisy) + 0.05 * tv(den)
    l.backward()
    adam.step()
print("tv denoise", round(l.item(), 6), round((den.detach() - img).abs().mean().item(), 5), round((noisy - img).abs().mean().item(), 5))

N = 8
k = torch.arange(N, dtype=torch.float32)
basis = torch.cos((2 * k.view(1, N) + 1) * k.view(N, 1) * math.pi / (2 * N)) * math.sqrt(2 / N)
basis[0] /= math.sqrt(2)
print("dct orthonormal", torch.allclose(basis @ basis.T, torch.eye(N), atol=1e-5))
planes = (img * 255 - 128).view(6, 1, 16, 20)[..., :16]
blocks = F.unfold(planes, N, stride=N).transpose(1, 2).reshape(6, -1, N, N)
coef = basis @ blocks @ basis.T
q = torch.tensor([16, 11, 10, 16, 24, 40, 51, 61], dtype=torch.float32).view(1, N) + torch.arange(N).view(N, 1) * 4.0
quant = coef / q
rounded = quant + (torch.round(quant) - quant).detach()
recon_blocks = basis.T @ (rounded * q) @ basis
recon = F.fold(recon_blocks.reshape(6, -1, N * N).transpose(1, 2), (16, 16), N, stride=N)
print("dct", blocks.shape, round(coef[0, 0, 0, 0].item(), 3), (torch.round(quant) == 0).float().mean().item(),
      round((recon - planes).abs().mean().item(), 4))
p = planes.clone().requires_grad_(True)
bl = F.unfold(p, N, stride=N).transpose(1, 2).reshape(6, -1, N, N)
cq = basis @ bl @ basis.T / q
r2 = F.fold((basis.T @ ((cq + (torch.round(cq) - cq).detach()) * q) @ basis).reshape(6, -1, N * N).transpose(1, 2), (16, 16), N, stride=N)
(r2 - 0.5 * planes).pow(2).mean().backward()
print("dct grad", round(p.grad.abs().mean().item(), 6))
