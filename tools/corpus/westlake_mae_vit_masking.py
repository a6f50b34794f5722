"""A tiny masked autoencoder on a from-scratch ViT: conv patch embedding, a class token,
fixed 2-d sine-cosine positional embeddings built with numpy and copied into a frozen
Parameter, per-sample random masking by argsort of noise and gather with expanded indices,
mask tokens appended and unshuffled with the restore indices, pre-norm blocks with
nn.MultiheadAttention (key padding masks, per-head weights), a hand-written attention with
unbind, patchify/unpatchify by einsum, the normalized-pixel MSE on masked patches only, a
LayerNorm'd class-token probe, and a few AdamW steps with a warmup/cosine schedule.

Inspired by Audio-WestlakeU/audiossl, audiossl/methods/promptpool/random_masking.py (MAE
masking written from scratch); written for this corpus.  Weights, images and the masking
noise are drawn with numpy.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.RandomState(3)
P, IMG, D = 4, 16, 16
N = (IMG // P) ** 2


def fill_(module, scale=0.2):
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.requires_grad:
                p.copy_(torch.tensor(rng.uniform(-scale, scale, size=tuple(p.shape)),
                                     dtype=p.dtype))


def sincos_1d(dim, pos):
    omega = 1.0 / 10000 ** (np.arange(dim // 2, dtype=np.float64) / (dim / 2.0))
    out = np.einsum("m,d->md", pos.reshape(-1), omega)
    return np.concatenate([np.sin(out), np.cos(out)], axis=1)


def sincos_2d(dim, size):
    grid = np.stack(np.meshgrid(np.arange(size, dtype=np.float32),
                                np.arange(size, dtype=np.float32)), axis=0)
    emb = np.concatenate([sincos_1d(dim // 2, grid[0]), sincos_1d(dim // 2, grid[1])], axis=1)
    return np.concatenate([np.zeros([1, dim]), emb], axis=0)


def patchify(imgs):
    h = imgs.shape[2] // P
    x = imgs.reshape(imgs.shape[0], 3, h, P, h, P)
    return torch.einsum("nchpwq->nhwpqc", x).reshape(imgs.shape[0], h * h, P * P * 3)


def unpatchify(x):
    h = int(x.shape[1] ** 0.5)
    x = torch.einsum("nhwpqc->nchpwq", x.reshape(x.shape[0], h, h, P, P, 3))
    return x.reshape(x.shape[0], 3, h * P, h * P)


class HandAttention(nn.Module):
    def __init__(self, dim, heads=2):
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        attn = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))


class Block(nn.Module):
    def __init__(self, dim, builtin=True):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim, eps=1e-6), nn.LayerNorm(dim, eps=1e-6)
        self.builtin = builtin
        self.attn = nn.MultiheadAttention(dim, 2, batch_first=True) if builtin else HandAttention(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + (self.attn(h, h, h, need_weights=False)[0] if self.builtin else self.attn(h))
        return x + self.mlp(self.norm2(x))


class TinyMAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, D, P, P)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, D))
        self.pos_embed = nn.Parameter(torch.zeros(1, N + 1, D), requires_grad=False)
        self.pos_embed.data.copy_(torch.from_numpy(sincos_2d(D, IMG // P)).float().unsqueeze(0))
        self.encoder = nn.ModuleList([Block(D), Block(D, builtin=False)])
        self.norm = nn.LayerNorm(D)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, D))
        self.decoder_pos = nn.Parameter(self.pos_embed.detach().clone(), requires_grad=False)
        self.decoder = Block(D)
        self.pred = nn.Linear(D, P * P * 3)

    def random_masking(self, x, ratio, noise):
        n, l, d = x.shape
        keep = int(l * (1 - ratio))
        ids_shuffle = torch.argsort(noise, dim=1)
        ids_restore = torch.argsort(ids_shuffle, dim=1)
        x_kept = torch.gather(x, dim=1, index=ids_shuffle[:, :keep].unsqueeze(-1).repeat(1, 1, d))
        mask = torch.ones([n, l])
        mask[:, :keep] = 0
        return x_kept, torch.gather(mask, dim=1, index=ids_restore), ids_restore

    def forward(self, imgs, noise, ratio=0.75):
        x = self.patch_embed(imgs).flatten(2).transpose(1, 2) + self.pos_embed[:, 1:, :]
        x, mask, ids_restore = self.random_masking(x, ratio, noise)
        cls = (self.cls_token + self.pos_embed[:, :1, :]).expand(x.shape[0], -1, -1)
        x = torch.cat((cls, x), dim=1)
        for blk in self.encoder:
            x = blk(x)
        latent = self.norm(x)
        tokens = self.mask_token.repeat(x.shape[0], ids_restore.shape[1] + 1 - x.shape[1], 1)
        y = torch.cat([latent[:, 1:, :], tokens], dim=1)
        y = torch.gather(y, dim=1, index=ids_restore.unsqueeze(-1).repeat(1, 1, D))
        y = torch.cat([latent[:, :1, :], y], dim=1) + self.decoder_pos
        pred = self.pred(self.decoder(y))[:, 1:, :]
        target = patchify(imgs)
        mean, var = target.mean(dim=-1, keepdim=True), target.var(dim=-1, keepdim=True)
        target = (target - mean) / (var + 1.0e-6) ** 0.5
        loss = ((pred - target) ** 2).mean(dim=-1)
        return (loss * mask).sum() / mask.sum(), pred, mask, latent


model = TinyMAE()
fill_(model)
imgs = torch.tensor(rng.rand(4, 3, IMG, IMG), dtype=torch.float32)
print("roundtrip", torch.equal(unpatchify(patchify(imgs)), imgs), tuple(patchify(imgs).shape))
print("trainable", sum(p.numel() for p in model.parameters() if p.requires_grad),
      "frozen", sum(p.numel() for p in model.parameters() if not p.requires_grad))
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-3,
                        betas=(0.9, 0.95), weight_decay=0.05)
steps, warm = 5, 2
sched = torch.optim.lr_scheduler.LambdaLR(
    opt, lambda s: (s + 1) / warm if s < warm else 0.5 * (1 + math.cos(math.pi * (s - warm) / (steps - warm))))
for step in range(steps):
    noise = torch.tensor(rng.rand(4, N), dtype=torch.float32)
    loss, pred, mask, latent = model(imgs, noise)
    opt.zero_grad()
    loss.backward()
    norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    print(f"step {step} loss {loss.item():.5f} grad-norm {norm.item():.4f} "
          f"masked {int(mask.sum().item())} lr {sched.get_last_lr()[0]:.6f}")
print("pred", tuple(pred.shape), "latent", tuple(latent.shape), "mask dtype", mask.dtype)
print("pos frozen", model.pos_embed.grad is None, "mask token grad",
      round(model.mask_token.grad.abs().sum().item(), 5))
recon = unpatchify(pred.detach())
print("recon", tuple(recon.shape), round(recon.mean().item(), 5))

# Inspect attention of the first block: per-head weights and a key padding mask.
blk = model.encoder[0]
with torch.no_grad():
    tokens = model.patch_embed(imgs[:2]).flatten(2).transpose(1, 2)
    h = blk.norm1(tokens)
    pad = torch.zeros(2, N, dtype=torch.bool)
    pad[1, -4:] = True
    out, weights = blk.attn(h, h, h, key_padding_mask=pad, average_attn_weights=False)
print("heads", tuple(weights.shape), "padded columns", weights[1, :, :, -4:].abs().sum().item())
print("row sums", [round(v, 4) for v in weights.sum(-1)[0, 0, :4].tolist()])

# A linear probe on the frozen class token.
probe = nn.Sequential(nn.LayerNorm(D), nn.Linear(D, 3))
fill_(probe)
labels = torch.tensor([0, 1, 2, 1])
with torch.no_grad():
    _, _, _, latent = model(imgs, torch.tensor(rng.rand(4, N), dtype=torch.float32), ratio=0.0)
feats = latent[:, 0]
popt = torch.optim.SGD(probe.parameters(), lr=0.5)
for i in range(3):
    ploss = F.cross_entropy(probe(feats), labels, label_smoothing=0.1)
    popt.zero_grad()
    ploss.backward()
    popt.step()
    print(f"probe {i} {ploss.item():.5f}")
