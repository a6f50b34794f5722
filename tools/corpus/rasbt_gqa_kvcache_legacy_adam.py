"""rasbt/LLMs-from-scratch ch04 bonus (grouped-query attention with a KV cache) at a tiny size:
a GPT whose attention shares key/value heads across query groups, trained a few steps with a
hand-written Adam in the pre-1.5 idiom (p.data.add_(-lr, g), addcmul_(1 - b2, g, g): PyTorch's
deprecated scalar-first overloads), then greedy generation with and without the cache, which
must agree.  Weights drawn with numpy so the printed numbers do not depend on the RNG."""
import warnings

import numpy as np
import torch
import torch.nn as nn

warnings.simplefilter("ignore")          # (the deprecated-overload warning)
torch.manual_seed(0)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, num_heads, num_kv_groups):
        super().__init__()
        self.num_heads, self.num_kv_groups = num_heads, num_kv_groups
        self.head_dim = d_out // num_heads
        self.group_size = num_heads // num_kv_groups
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=False)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=False)
        self.out_proj = nn.Linear(d_out, d_out)
        self.cache_k = self.cache_v = None

    def forward(self, x, use_cache=False, start_pos=0):
        b, n, _ = x.shape
        q = self.W_query(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(b, n, self.num_kv_groups, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(b, n, self.num_kv_groups, self.head_dim).transpose(1, 2)
        if use_cache:
            if self.cache_k is None:
                self.cache_k, self.cache_v = k, v
            else:
                self.cache_k = torch.cat([self.cache_k, k], dim=2)
                self.cache_v = torch.cat([self.cache_v, v], dim=2)
            k, v = self.cache_k, self.cache_v
        k = k.repeat_interleave(self.group_size, dim=1)
        v = v.repeat_interleave(self.group_size, dim=1)
        scores = q @ k.transpose(2, 3)
        n_k = k.shape[2]
        mask = torch.triu(torch.ones(n_k, n_k, dtype=torch.bool), diagonal=1)[start_pos:start_pos + n]
        scores = scores.masked_fill(mask, -torch.inf)
        w = torch.softmax(scores / self.head_dim ** 0.5, dim=-1)
        ctx = (w @ v).transpose(1, 2).reshape(b, n, -1)
        return self.out_proj(ctx)

    def reset_cache(self):
        self.cache_k = self.cache_v = None


class Block(nn.Module):
    def __init__(self, d, heads, groups):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.att = GroupedQueryAttention(d, d, heads, groups)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    def forward(self, x, use_cache=False, start_pos=0):
        x = x + self.att(self.norm1(x), use_cache, start_pos)
        return x + self.ff(self.norm2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab=40, ctx=32, d=16, heads=4, groups=2, layers=2):
        super().__init__()
        self.tok_emb, self.pos_emb = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList([Block(d, heads, groups) for _ in range(layers)])
        self.final_norm = nn.LayerNorm(d)
        self.out_head = nn.Linear(d, vocab, bias=False)
        self.pos = 0

    def forward(self, idx, use_cache=False):
        n = idx.shape[1]
        start = self.pos if use_cache else 0
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(start, start + n))
        for blk in self.blocks:
            x = blk(x, use_cache, start)
        if use_cache:
            self.pos += n
        return self.out_head(self.final_norm(x))

    def reset_kv_cache(self):
        self.pos = 0
        for blk in self.blocks:
            blk.att.reset_cache()


model = TinyGPT()
rng = np.random.default_rng(7)
with torch.no_grad():
    for name, p in model.named_parameters():
        if "norm" not in name:
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)) * 0.2, dtype=torch.float32))
print("parameters:", sum(p.numel() for p in model.parameters()))

data = torch.tensor(rng.integers(0, 40, (4, 13)), dtype=torch.long)
inputs, targets = data[:, :-1], data[:, 1:]
state = {p: (torch.zeros_like(p), torch.zeros_like(p)) for p in model.parameters()}
lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-8
for step in range(1, 9):
    logits = model(inputs)
    loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
    model.zero_grad()
    loss.backward()
    for p in model.parameters():
        g = p.grad.data
        m, v = state[p]
        m.mul_(b1).add_(1 - b1, g)
        v.mul_(b2).addcmul_(1 - b2, g, g)
        denom = (v / (1 - b2 ** step)).sqrt().add_(eps)
        p.data.addcdiv_(-lr / (1 - b1 ** step), m, denom)
    if step % 2 == 0:
        print(f"step {step} loss {loss.item():.4f}")
print("torch.add(a, 2, b):", torch.add(torch.ones(3), 2, torch.arange(3.)).tolist())

model.eval()
with torch.no_grad():
    idx = data[:1, :4]
    plain = idx
    for _ in range(8):
        nxt = model(plain[:, -32:])[:, -1].argmax(-1, keepdim=True)
        plain = torch.cat([plain, nxt], dim=1)
    model.reset_kv_cache()
    cached = idx
    logits = model(idx, use_cache=True)
    for _ in range(8):
        nxt = logits[:, -1].argmax(-1, keepdim=True)
        cached = torch.cat([cached, nxt], dim=1)
        logits = model(nxt, use_cache=True)
print("generated (no cache):", plain[0].tolist())
print("generated (KV cache):", cached[0].tolist())
print("cache shapes:", tuple(model.blocks[0].att.cache_k.shape))

loss_f = nn.CosineEmbeddingLoss(margin=0.1, reduction="none")
x1 = torch.tensor([[0.3, 0.5, 0.7], [0.3, 0.5, 0.7]])
x2 = torch.tensor([[0.1, 0.3, 0.5], [-0.1, 0.3, -0.5]])
print("cosine embedding loss:", [round(v, 4) for v in loss_f(x1, x2, torch.tensor([1., -1.])).tolist()])
try:
    loss_f(x1, x2, torch.tensor([[1., -1.]]))
except RuntimeError as e:
    print("2-D target:", type(e).__name__, str(e)[:40])
