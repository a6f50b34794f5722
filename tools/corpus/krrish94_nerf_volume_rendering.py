"""Tiny-NeRF pieces on a synthetic scene: ray bundles from an xy meshgrid, sin/cos positional
encoding with power-of-two bands, volume rendering with an exclusive cumprod (roll + in-place
write), hierarchical sampling by CDF inversion (searchsorted, gather on expanded bins), and a
few Adam steps of a small MLP from fixed weights.  Inspired by krrish94/nerf-pytorch."""
import numpy as np
import torch
import torch.nn.functional as F

torch.set_printoptions(precision=4)


def rays(h, w, focal, c2w):
    ii, jj = torch.meshgrid(torch.arange(w, dtype=c2w.dtype), torch.arange(h, dtype=c2w.dtype), indexing="xy")
    dirs = torch.stack([(ii - 0.5 * w) / focal, -(jj - 0.5 * h) / focal, -torch.ones_like(ii)], -1)
    d = (dirs[..., None, :] * c2w[:3, :3]).sum(-1)
    return c2w[:3, -1].expand(d.shape), d


def encode(x, n_freqs):
    bands = 2.0 ** torch.linspace(0.0, n_freqs - 1, n_freqs)
    parts = [x] + [fn(x * b) for b in bands for fn in (torch.sin, torch.cos)]
    return torch.cat(parts, -1)


def exclusive_cumprod(t):
    out = torch.roll(torch.cumprod(t, -1), 1, -1)
    out[..., 0] = 1.0
    return out


def render(raw, z):
    sigma, rgb = F.relu(raw[..., 3]), torch.sigmoid(raw[..., :3])
    delta = torch.cat([z[..., 1:] - z[..., :-1], torch.full_like(z[..., :1], 1e10)], -1)
    alpha = 1.0 - torch.exp(-sigma * delta)
    weights = alpha * exclusive_cumprod(1.0 - alpha + 1e-10)
    return (weights[..., None] * rgb).sum(-2), (weights * z).sum(-1), weights


def invert_cdf(bins, weights, n, det=True):
    pdf = (weights + 1e-5) / (weights + 1e-5).sum(-1, keepdim=True)
    cdf = torch.cat([torch.zeros_like(pdf[..., :1]), torch.cumsum(pdf, -1)], -1)
    u = torch.linspace(0.0, 1.0, n).expand(*cdf.shape[:-1], n).contiguous()
    idx = torch.searchsorted(cdf, u, right=True)
    lo = torch.clamp(idx - 1, min=0)
    hi = torch.clamp(idx, max=cdf.shape[-1] - 1)
    both = torch.stack([lo, hi], -1)
    shape = (*both.shape[:-1], cdf.shape[-1])
    cdf_g = torch.gather(cdf.unsqueeze(-2).expand(shape), -1, both)
    bins_g = torch.gather(bins.unsqueeze(-2).expand(shape), -1, both)
    span = cdf_g[..., 1] - cdf_g[..., 0]
    span = torch.where(span < 1e-5, torch.ones_like(span), span)
    return bins_g[..., 0] + (u - cdf_g[..., 0]) / span * (bins_g[..., 1] - bins_g[..., 0])


pose = torch.eye(4)
pose[:3, 3] = torch.tensor([0.1, -0.2, 3.0])
ro, rd = rays(4, 5, 6.0, pose)
print(ro.shape, rd.shape, rd[0, :2])
z = torch.linspace(2.0, 4.0, 6).expand(4, 5, 6)
pts = ro[..., None, :] + rd[..., None, :] * z[..., :, None]
enc = encode(pts.reshape(-1, 3), 3)
print(enc.shape, enc[0])

mlp = torch.nn.Sequential(torch.nn.Linear(21, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
with torch.no_grad():
    for k, p in enumerate(mlp.parameters()):
        p.copy_(torch.from_numpy(np.random.RandomState(k).uniform(-0.4, 0.4, tuple(p.shape)).astype(np.float32)))
target = torch.linspace(0, 1, 4 * 5 * 3).reshape(4, 5, 3)
opt = torch.optim.Adam(mlp.parameters(), lr=1e-2)
for step in range(4):
    raw = mlp(enc).reshape(4, 5, 6, 4)
    rgb, depth, w = render(raw, z)
    loss = F.mse_loss(rgb, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, f"{loss.item():.5f}", f"psnr {(-10.0 * torch.log10(loss)).item():.3f}", rgb.grad_fn.name())
print(depth, w.sum(-1).max().item() <= 1.0 + 1e-5)

bins = torch.linspace(2.0, 4.0, 5).expand(3, 5)
wts = torch.tensor([[0.1, 0.6, 0.2, 0.1], [1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]], requires_grad=True)
fine = invert_cdf(bins, wts, 7)
print(fine)
fine.sum().backward()
print(wts.grad)
z_all, order = torch.sort(torch.cat([bins, fine.detach()], -1), -1)
print(z_all[0], order[1])
alpha = torch.tensor([[0.0, 1.0, 0.5], [0.2, 0.2, 0.2]], dtype=torch.float64, requires_grad=True)
trans = exclusive_cumprod(1.0 - alpha)
print(trans, torch.autograd.grad((trans * alpha).sum(), alpha)[0])
