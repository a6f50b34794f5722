"""Image warping and registration on synthetic images: backward warping by an optical-flow field
(meshgrid/arange base grid, normalisation to [-1, 1], in-place writes into a grid, permute,
grid_sample with every mode and padding mode, a validity mask from warping ones), a
perspective warp whose homogeneous coordinate vanishes on one column (inf/NaN grid points,
clipped by border/reflection padding), affine_grid rotations, affine registration by Adam
through grid_sample, a small Horn-Schunck-style flow estimate optimised with LBFGS (strong
Wolfe), and Gaussian/Laplacian pyramids with avg_pool2d and F.interpolate (bilinear, bicubic,
area, antialias, align_corners).

Inspired by the warp() in duduheihei/notes (its flow-to-grid recipe and mask); the code is our
own.  Everything is built from closed-form patterns: no random generator is used.
"""
import math

import torch
import torch.nn.functional as F


def pattern(n, c, h, w, phase=0.0):
    yy, xx = torch.meshgrid(torch.linspace(0, 1, h), torch.linspace(0, 1, w), indexing="ij")
    chans = [torch.sin(6 * xx + 3 * yy * (k + 1) + phase + k) * torch.cos(4 * yy - xx) for k in range(c)]
    img = 0.5 + 0.5 * torch.stack(chans, 0)
    return img.unsqueeze(0).repeat(n, 1, 1, 1)


def flow_warp(x, flo, **kw):
    b, _, h, w = x.shape
    xx = torch.arange(0, w).view(1, -1).repeat(h, 1)
    yy = torch.arange(0, h).view(-1, 1).repeat(1, w)
    grid = torch.cat((xx.view(1, 1, h, w).repeat(b, 1, 1, 1), yy.view(1, 1, h, w).repeat(b, 1, 1, 1)), 1).float()
    vgrid = grid + flo
    vgrid[:, 0] = 2.0 * vgrid[:, 0].clone() / max(w - 1, 1) - 1.0
    vgrid[:, 1] = 2.0 * vgrid[:, 1].clone() / max(h - 1, 1) - 1.0
    vgrid = vgrid.permute(0, 2, 3, 1)
    out = F.grid_sample(x, vgrid, align_corners=True, **kw)
    mask = F.grid_sample(torch.ones_like(x), vgrid, align_corners=True, **kw)
    mask = (mask > 0.9999).float()
    return out, mask


img = pattern(2, 3, 12, 16)
flow = torch.stack([1.5 * torch.sin(torch.linspace(0, 3, 16)).view(1, 16).expand(12, 16),
                    -0.75 * torch.cos(torch.linspace(0, 2, 12)).view(12, 1).expand(12, 16)], 0)
flow = flow.unsqueeze(0).repeat(2, 1, 1, 1) * torch.tensor([1.0, -1.0]).view(2, 1, 1, 1)
for kw in [dict(), dict(mode="nearest"), dict(mode="bicubic"), dict(padding_mode="border"),
           dict(padding_mode="reflection"), dict(mode="bicubic", padding_mode="reflection")]:
    out, mask = flow_warp(img, flow, **kw)
    print("warp", kw, out.shape, round(out.sum().item(), 4), mask.sum().item())

# a perspective map whose w = 1 + x vanishes on the left column: inf/NaN grid points
h, w = 6, 7
ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
hom = torch.stack([xs, ys, torch.ones_like(xs)], -1) @ torch.tensor([[1.0, 0.2, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 1.0]]).T
grid = (hom[..., :2] / hom[..., 2:]).unsqueeze(0).expand(2, -1, -1, -1)
print("grid non-finite", (~torch.isfinite(grid)).sum().item())
for pm in ["border", "reflection"]:
    for mode in ["bilinear", "nearest"]:
        warped = F.grid_sample(img, grid, mode=mode, padding_mode=pm, align_corners=True)
        print("perspective", pm, mode, torch.isfinite(warped).all().item(), round(warped.sum().item(), 4),
              [round(v, 4) for v in warped[0, 0, :, 0].tolist()])

theta = torch.tensor([[math.cos(0.3), -math.sin(0.3), 0.1], [math.sin(0.3), math.cos(0.3), -0.05]])
g = F.affine_grid(theta.unsqueeze(0).expand(2, 2, 3), img.shape, align_corners=False)
target = F.grid_sample(img, g, align_corners=False, padding_mode="border")
print("affine grid", g.shape, [round(v, 5) for v in g[0, 0, :2].flatten().tolist()])

params = torch.zeros(3, requires_grad=True)               # angle, tx, ty
opt = torch.optim.Adam([params], lr=0.05)
for step in range(60):
    a, tx, ty = params[0], params[1], params[2]
    th = torch.stack([torch.stack([torch.cos(a), -torch.sin(a), tx]),
                      torch.stack([torch.sin(a), torch.cos(a), ty])]).unsqueeze(0)
    moved = F.grid_sample(img[:1], F.affine_grid(th, (1, 3, 12, 16), align_corners=False),
                          align_corners=False, padding_mode="border")
    loss = F.mse_loss(moved, target[:1])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0 or step == 59:
        print("register", step, round(loss.item(), 6), [round(v, 4) for v in params.tolist()])

# Horn-Schunck-style flow between two shifted patterns, by LBFGS
a = pattern(1, 1, 10, 12)
b = pattern(1, 1, 10, 12, phase=0.4)
uv = torch.zeros(1, 2, 10, 12, requires_grad=True)
lbfgs = torch.optim.LBFGS([uv], lr=1, max_iter=25, line_search_fn="strong_wolfe")


def closure():
    lbfgs.zero_grad()
    warped, _ = flow_warp(b, uv)
    smooth = (uv[..., 1:, :] - uv[..., :-1, :]).pow(2).mean() + (uv[..., 1:] - uv[..., :-1]).pow(2).mean()
    loss = (warped - a).pow(2).mean() + 0.05 * smooth
    loss.backward()
    return loss


for it in range(2):
    print("flow lbfgs", it, round(lbfgs.step(closure).item(), 6))
print("flow", round(uv.detach().abs().mean().item(), 4), lbfgs.state_dict()["state"][0]["n_iter"])

gauss = [img]
for _ in range(2):
    gauss.append(F.avg_pool2d(gauss[-1], 2))
lap = [g0 - F.interpolate(g1, size=g0.shape[-2:], mode="bilinear", align_corners=False)
       for g0, g1 in zip(gauss[:-1], gauss[1:])]
recon = gauss[-1]
for l in reversed(lap):
    recon = F.interpolate(recon, scale_factor=2, mode="bilinear", align_corners=False) + l
print("pyramid", [tuple(g.shape[-2:]) for g in gauss], [round(l.abs().mean().item(), 5) for l in lap],
      (recon - img).abs().max().item() < 1e-5)
for kw in [dict(mode="bilinear", antialias=True), dict(mode="bicubic", antialias=True), dict(mode="area"),
           dict(mode="bicubic", align_corners=True), dict(mode="nearest-exact")]:
    small = F.interpolate(img, size=(5, 7), **kw)
    print("resize", kw, small.shape, round(small.sum().item(), 4))
big = F.interpolate(img, scale_factor=(1.5, 2.25), mode="bilinear", align_corners=True, recompute_scale_factor=False)
print("upsample", big.shape, round(big.mean().item(), 5))
