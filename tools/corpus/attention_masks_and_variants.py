"""Transformer idioms from session 13's held-out proxy (hyunwoongko/transformer's masks,
jadore801120's scaled dot-product attention, pbloem/former's narrow and relative attention),
written afresh: a uint8 causal mask combined with a bool padding mask by `&`, masked_fill with
-1e9 and -inf, heads split with view/transpose and joined with contiguous().view, a relative
position term through the skew (pad-and-reshape) trick, a decoder step trained with Adam
(weight decay), clip_grad_norm_ and ReduceLROnPlateau. Weights and tokens come from numpy."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.RandomState(3)


def numpy_init(module, scale=0.2):
    with torch.no_grad():
        for name, p in module.named_parameters():
            a = rng.standard_normal(tuple(p.shape)) * scale
            p.copy_(torch.from_numpy((a + (1.0 if name.endswith("norm.weight") else 0.0)).astype(np.float32)))


def masks(src, trg, pad):
    src_mask = (src != pad).unsqueeze(1).unsqueeze(2)
    trg_pad = (trg != pad).unsqueeze(1).unsqueeze(3)
    n = trg.shape[1]
    causal = torch.tril(torch.ones(n, n)).type(torch.ByteTensor)
    return src_mask, trg_pad & causal


def skew(scores):
    """(b, h, t, 2t-1) relative scores -> (b, h, t, t) by padding and re-viewing."""
    b, h, t, r = scores.shape
    padded = F.pad(scores, (0, 1))
    flat = padded.view(b, h, t * (r + 1))[:, :, :t * r].view(b, h, t, r)
    return flat[:, :, :, t - 1:]


class Attention(nn.Module):
    def __init__(self, d_model, heads, relative=False, max_len=16):
        super().__init__()
        self.h, self.d = heads, d_model // heads
        self.q, self.k, self.v = (nn.Linear(d_model, d_model, bias=False) for _ in range(3))
        self.out = nn.Linear(d_model, d_model)
        self.norm = nn.LayerNorm(d_model, eps=1e-6)
        self.rel = nn.Embedding(2 * max_len - 1, self.d) if relative else None

    def forward(self, x, mem, mask):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.h, self.d).transpose(1, 2)
        k = self.k(mem).view(b, mem.size(1), self.h, self.d).transpose(1, 2)
        v = self.v(mem).view(b, mem.size(1), self.h, self.d).transpose(1, 2)
        scores = torch.matmul(q / math.sqrt(self.d), k.transpose(2, 3))
        if self.rel is not None:
            pos = self.rel(torch.arange(2 * t - 1))
            scores = scores + skew(torch.einsum("bhtd,rd->bhtr", q, pos))
        scores = scores.masked_fill(mask == 0, -1e9)
        attn = F.softmax(scores, dim=-1)
        y = torch.matmul(attn, v).transpose(1, 2).contiguous().view(b, t, -1)
        return self.norm(x + self.out(y)), attn


class Decoder(nn.Module):
    def __init__(self, vocab, d_model=16, heads=4, relative=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d_model, padding_idx=1)
        self.self_attn = Attention(d_model, heads, relative=relative)
        self.cross = Attention(d_model, heads)
        self.proj = nn.Linear(d_model, vocab)

    def forward(self, src, trg):
        src_mask, trg_mask = masks(src, trg, pad=1)
        mem = self.emb(src) * math.sqrt(16)
        x, a1 = self.self_attn(self.emb(trg), self.emb(trg), trg_mask)
        x, a2 = self.cross(x, mem, src_mask)
        return self.proj(x), a1, a2


src = torch.from_numpy(rng.randint(2, 25, size=(3, 7)).astype(np.int64))
trg = torch.from_numpy(rng.randint(2, 25, size=(3, 6)).astype(np.int64))
src[0, -2:] = 1
trg[2, -3:] = 1
src_mask, trg_mask = masks(src, trg, pad=1)
print(src_mask.dtype, src_mask.shape, trg_mask.dtype, trg_mask.shape)
print(trg_mask[2, 0].int())
print(skew(torch.arange(2 * 3 * 5, dtype=torch.float32).view(1, 2, 3, 5))[0, 0])

for relative in (False, True):
    model = Decoder(vocab=25, relative=relative)
    numpy_init(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4, eps=5e-9)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.9, patience=1)
    criterion = nn.CrossEntropyLoss(ignore_index=1, label_smoothing=0.1)
    for step in range(4):
        logits, a1, a2 = model(src, trg[:, :-1])
        loss = criterion(logits.contiguous().view(-1, logits.shape[-1]), trg[:, 1:].contiguous().view(-1))
        optimizer.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step(loss.item())
        print(relative, step, round(loss.item(), 4), round(norm.item(), 4))
    print(a1[2, 0].masked_fill(trg_mask[2, 0, :5, :5] == 0, float("-inf")).exp().sum(-1))
    print(a2.sum(-1).allclose(torch.ones(3, 4, 5)), logits.argmax(-1)[0].tolist())
