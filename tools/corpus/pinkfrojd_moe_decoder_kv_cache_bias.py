"""A small Mixtral-like decoder, after PinkFrojdSenjak/mini-mixture-of-experts (RMSNorm with
rsqrt, a SwiGLU expert list routed by topk + softmax(dtype=float) and torch.where dispatch) with
the attention of the rope/alibi snippets of GTPlayT/Large-Language-Models and
IfYouGiveMeAAI/LLM_Code: rotary embeddings from torch.polar / view_as_complex / view_as_real,
ALiBi slopes for a non-power-of-two head count, grouped-query attention through
scaled_dot_product_attention(enable_gqa=True) checked against repeat_interleave, and a
preallocated KV cache filled with copy_ and read with narrow, whose decode steps attend with
torch.nn.attention.bias.causal_lower_right (checked against a full causal recompute and the
materialized mask).  Training is a few AdamW steps of next-token loss; greedy generation
follows; weights come from numpy so both runs agree."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right, causal_upper_left

rng = np.random.default_rng(3)
torch.manual_seed(0)
VOCAB, DIM, HEADS, KV_HEADS, CTX = 40, 24, 6, 2, 16
HEAD_DIM = DIM // HEADS


def alibi_slopes(n):
    base = 2 ** math.floor(math.log2(n))
    slopes = torch.pow(2.0 ** (-8.0 / base), torch.arange(1, base + 1))
    if base < n:
        extra = torch.pow(2.0 ** (-4.0 / base), torch.arange(1, 1 + 2 * (n - base), 2))
        slopes = torch.cat([slopes, extra])
    return slopes


def rope_table(dim, length, theta=10000.0):
    inv = 1.0 / theta ** (torch.arange(0, dim, 2)[: dim // 2].float() / dim)
    angles = torch.outer(torch.arange(length), inv).float()
    return torch.polar(torch.ones_like(angles), angles)


def rotate(x, table):
    # x: (B, H, T, D) -> pairs of features as complex numbers, rotated per position
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * table).flatten(-2).type_as(x)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
                ).type_as(x) * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseFFN(nn.Module):
    def __init__(self, dim, hidden, n_experts=4, top=2):
        super().__init__()
        self.top = top
        self.experts = nn.ModuleList(SwiGLU(dim, hidden) for _ in range(n_experts))
        self.gate = nn.Linear(dim, n_experts, bias=False)

    def forward(self, x):
        flat = x.view(-1, x.shape[-1])
        w, chosen = torch.topk(self.gate(flat), self.top)
        w = F.softmax(w, dim=1, dtype=torch.float).type_as(x)
        out = torch.zeros_like(flat)
        for i, expert in enumerate(self.experts):
            rows, slot = torch.where(chosen == i)
            out[rows] += w[rows, slot, None] * expert(flat[rows])
        self.last_counts = torch.bincount(chosen.flatten(), minlength=len(self.experts))
        return out.view_as(x)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(DIM, HEADS * HEAD_DIM, bias=False)
        self.kv = nn.Linear(DIM, 2 * KV_HEADS * HEAD_DIM, bias=False)
        self.o = nn.Linear(DIM, DIM, bias=False)
        self.register_buffer("k_cache", torch.zeros(1, KV_HEADS, CTX, HEAD_DIM), persistent=False)
        self.register_buffer("v_cache", torch.zeros(1, KV_HEADS, CTX, HEAD_DIM), persistent=False)

    def forward(self, x, table, start=None):
        B, T, _ = x.shape
        q = self.q(x).view(B, T, HEADS, HEAD_DIM).transpose(1, 2)
        k, v = self.kv(x).view(B, T, 2, KV_HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)
        q, k = rotate(q, table), rotate(k, table)
        if start is None:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            self.k_cache[:, :, start:start + T].copy_(k)
            self.v_cache[:, :, start:start + T].copy_(v)
            keys = self.k_cache.narrow(2, 0, start + T)
            vals = self.v_cache.narrow(2, 0, start + T)
            out = F.scaled_dot_product_attention(q, keys, vals, enable_gqa=True,
                                                 attn_mask=causal_lower_right(T, start + T))
        return self.o(out.transpose(1, 2).reshape(B, T, DIM))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn, self.ffn = Attention(), SparseFFN(DIM, 32)
        self.n1, self.n2 = RMSNorm(DIM), RMSNorm(DIM)

    def forward(self, x, table, start=None):
        h = x + self.attn(self.n1(x), table, start)
        return h + self.ffn(self.n2(h))


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList(Block() for _ in range(2))
        self.norm = RMSNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB, bias=False)
        self.register_buffer("table", rope_table(HEAD_DIM, CTX), persistent=False)

    def forward(self, ids, start=None):
        T = ids.shape[1]
        table = self.table[:T] if start is None else self.table[start:start + T]
        h = self.emb(ids)
        for block in self.blocks:
            h = block(h, table, start)
        return self.head(self.norm(h))


model = Decoder()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)) * 0.3, dtype=p.dtype))
print("table", model.table.dtype, tuple(model.table.shape), sorted(model.state_dict())[:3])
print("slopes", [round(s, 5) for s in alibi_slopes(HEADS).tolist()])

data = torch.tensor(rng.integers(0, VOCAB, (4, 11)))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for step in range(4):
    logits = model(data[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), data[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, f"{loss.item():.4f}", model.blocks[0].ffn.last_counts.tolist(),
          f"{model.blocks[1].attn.kv.weight.grad.norm().item():.4f}")

# grouped-query attention equals attention over repeated key/value heads
q = torch.tensor(rng.standard_normal((2, HEADS, 5, HEAD_DIM)), dtype=torch.float32)
kv = torch.tensor(rng.standard_normal((2, KV_HEADS, 5, HEAD_DIM)), dtype=torch.float32)
a = F.scaled_dot_product_attention(q, kv, kv, is_causal=True, enable_gqa=True)
b = F.scaled_dot_product_attention(q, kv.repeat_interleave(HEADS // KV_HEADS, dim=1),
                                   kv.repeat_interleave(HEADS // KV_HEADS, dim=1), is_causal=True)
print("gqa", torch.allclose(a, b, atol=1e-6))
alibi = alibi_slopes(HEADS)[:, None, None] * -(torch.arange(5)[:, None] - torch.arange(5)).abs()
c = F.scaled_dot_product_attention(q, kv.repeat_interleave(3, dim=1), kv.repeat_interleave(3, 1),
                                   attn_mask=alibi.float().masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(), float("-inf")))
print("alibi", c.shape, f"{c.sum().item():.4f}")

print(causal_lower_right(3, 5))
print(causal_upper_left(2, 4)._materialize().int())
model.eval()
with torch.no_grad():
    prompt = data[:1, :4]
    full = model(prompt)
    step_logits = model(prompt, start=0)
    print("prefill", torch.allclose(full, step_logits, atol=1e-5))
    ids = prompt
    nxt = step_logits[:, -1].argmax(-1, keepdim=True)
    for pos in range(4, 10):
        ids = torch.cat([ids, nxt], dim=1)
        out = model(nxt, start=pos)
        nxt = out[:, -1].argmax(-1, keepdim=True)
    print("greedy", ids.tolist())
    again = model(ids)
    print("cache == recompute", torch.allclose(again[:, -1], out[:, -1], atol=1e-4))
    chunk = model(ids[:, 6:9], start=6)
    print("chunk", torch.allclose(chunk, again[:, 6:9], atol=1e-4))

try:
    F.scaled_dot_product_attention(q, kv, kv, attn_mask=causal_upper_left(5, 5), is_causal=True)
except ValueError as e:
    print("ValueError", e)
