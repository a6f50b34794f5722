"""A tiny Mixtral-style decoder, after edadaltocg/research's MoELayer (topk over gate logits,
softmax in float32, torch.where(selected_experts == i) dispatch with results[batch_idx] +=) and
bin-Deng-666/LLM-Basic-Code's fundamentals (rotate_half RoPE with position ids, GQA by
repeat, RMSNorm, DPO loss).  The rotary cos/sin tables are plain attributes converted by an
overridden _apply, so model.double() must run it; a load-balancing loss uses bincount and
scatter_; a second dispatch with index_add_ must match the first; the DPO loss takes
log-probs gathered from log_softmax; sampling (top-k, top-p with sort/cumsum/scatter) uses
peaked logits so torch.multinomial's draws are deterministic.  The fundamentals' own slips
(torch.sqrt of an int head_dim, torch.softmax without dim) keep their exceptions."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(11)
torch.manual_seed(0)


def init_(module, scale=0.3):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)) * scale, dtype=p.dtype))
    return module


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Rotary(nn.Module):
    def __init__(self, head_dim, max_pos=32):
        super().__init__()
        inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        freqs = torch.einsum("i,j->ij", torch.arange(max_pos, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.cos, self.sin = emb.cos()[None, None], emb.sin()[None, None]

    def _apply(self, fn, recurse=True):
        super()._apply(fn, recurse)
        self.cos, self.sin = fn(self.cos), fn(self.sin)
        return self

    def forward(self, q, k, position_ids):
        cos, sin = self.cos[:, :, position_ids], self.sin[:, :, position_ids]
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps, self.gamma = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.gamma


class GQA(nn.Module):
    def __init__(self, dim, heads, groups):
        super().__init__()
        self.h, self.g, self.hd = heads, groups, dim // heads
        self.q = nn.Linear(dim, dim, bias=False)
        self.kv = nn.Linear(dim, 2 * groups * self.hd, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)
        self.rope = Rotary(self.hd)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.h, self.hd).transpose(1, 2)
        k, v = self.kv(x).view(b, t, 2, self.g, self.hd).permute(2, 0, 3, 1, 4)
        q, k = self.rope(q, k, torch.arange(t))
        k = k.repeat_interleave(self.h // self.g, dim=1)
        v = v.repeat_interleave(self.h // self.g, dim=1)
        mask = torch.full((t, t), float("-inf"), dtype=x.dtype).triu(1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd) + mask
        out = att.softmax(-1) @ v
        return self.o(out.transpose(1, 2).reshape(b, t, -1))


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1, self.w3 = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, dim, n_experts=4, k=2):
        super().__init__()
        self.experts = nn.ModuleList(Expert(dim, 2 * dim) for _ in range(n_experts))
        self.gate = nn.Linear(dim, n_experts, bias=False)
        self.k = k

    def forward(self, x):
        logits = self.gate(x)
        weights, selected = torch.topk(logits, self.k)
        weights = F.softmax(weights, dim=1, dtype=torch.float).to(x.dtype)
        out = torch.zeros_like(x)
        for i, expert in enumerate(self.experts):
            rows, nth = torch.where(selected == i)
            out[rows] += weights[rows, nth, None] * expert(x[rows])
        return out, logits, selected, weights


class Block(nn.Module):
    def __init__(self, dim=8, heads=4, groups=2):
        super().__init__()
        self.n1, self.n2 = RMSNorm(dim), RMSNorm(dim)
        self.attn, self.moe = GQA(dim, heads, groups), MoE(dim)

    def forward(self, x):
        x = x + self.attn(self.n1(x))
        b, t, d = x.shape
        y, logits, selected, weights = self.moe(self.n2(x).reshape(b * t, d))
        return x + y.view(b, t, d), logits, selected, weights


class TinyMixtral(nn.Module):
    def __init__(self, vocab=12, dim=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.block = Block(dim)
        self.norm = RMSNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, idx):
        h, logits, selected, weights = self.block(self.emb(idx))
        return self.head(self.norm(h)), logits, selected, weights


def load_balance(router_logits, selected, n_experts):
    probs = router_logits.softmax(-1)
    with torch.no_grad():
        counts = torch.bincount(selected[:, 0], minlength=n_experts).float() / selected.shape[0]
    usage = torch.zeros_like(probs).scatter_(1, selected, 1.0).mean(0)
    return n_experts * (counts * probs.mean(0)).sum(), usage


model = init_(TinyMixtral())
print("params:", sum(p.numel() for p in model.parameters()), "tied:",
      model.head.weight is model.emb.weight)
idx = torch.tensor([[1, 5, 2, 7, 3], [4, 4, 9, 0, 11]])
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
for step in range(3):
    logits, router_logits, selected, weights = model(idx)
    lm = F.cross_entropy(logits[:, :-1].reshape(-1, 12), idx[:, 1:].reshape(-1))
    aux, usage = load_balance(router_logits, selected, 4)
    z = torch.logsumexp(router_logits, dim=-1).pow(2).mean()
    loss = lm + 0.01 * aux + 1e-3 * z
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} lm {lm.item():.5f} aux {aux.item():.5f} z {z.item():.4f} "
          f"usage {[round(u, 3) for u in usage.tolist()]}")
print("experts chosen:", selected[:4].tolist(), selected.dtype)

# the same routing through index_add_
moe = model.block.moe
xs = torch.tensor(rng.standard_normal((7, 8)), dtype=torch.float32)
with torch.no_grad():
    ref = moe(xs)[0]
    gate_w, chosen = torch.topk(moe.gate(xs), 2)
    gate_w = gate_w.softmax(-1)
    out = torch.zeros_like(xs)
    for e in range(4):
        tok, slot = torch.nonzero(chosen == e, as_tuple=True)
        out.index_add_(0, tok, moe.experts[e](xs[tok]) * gate_w[tok, slot, None])
print("index_add_ dispatch agrees:", torch.allclose(out, ref, atol=1e-6))

# the cos/sin tables follow the module's dtype through the overridden _apply
model.double()
print("rope table dtype:", model.block.attn.rope.cos.dtype, model.head.weight.dtype)
logits64 = model(idx)[0]
print("float64 logits:", logits64.dtype, tuple(logits64.shape))
model.float()

# DPO on sequence log-probs
with torch.no_grad():
    ref_logits = model(idx)[0]
pol_logits = model(idx)[0] + torch.tensor(rng.standard_normal((2, 5, 12)) * 0.1,
                                           dtype=torch.float32)
labels = idx.roll(-1, 1)
mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]], dtype=torch.bool)


def seq_logp(lg):
    lp = torch.gather(lg.log_softmax(-1), 2, labels.unsqueeze(-1)).squeeze(-1)
    return (lp * mask).sum(-1)


pi, rf = seq_logp(pol_logits), seq_logp(ref_logits)
dpo = -F.logsigmoid(0.1 * ((pi[0] - pi[1]) - (rf[0] - rf[1])))
dpo.backward()
print(f"dpo {dpo.item():.6f} grad emb norm {model.emb.weight.grad.norm().item():.6f}")

# sampling on peaked logits
peaked = torch.tensor(rng.standard_normal((3, 12)), dtype=torch.float32)
peaked[0, 4] = peaked[1, 9] = peaked[2, 0] = 30.0
probs = (peaked / 0.7).softmax(-1)
vals, ids = torch.topk(probs, 3)
print("top-k:", ids[:, 0].tolist(), torch.multinomial(vals / vals.sum(-1, keepdim=True), 1)
      .squeeze(-1).tolist())
sp, si = torch.sort(probs, dim=-1, descending=True)
drop = sp.cumsum(-1) - sp > 0.9
sp[drop] = 0.0
filtered = torch.zeros_like(probs).scatter(-1, si, sp)
print("top-p kept:", (filtered > 0).sum(-1).tolist(), torch.multinomial(filtered, 2,
                                                                      replacement=True).tolist())

# the fundamentals' slips
for call in (lambda: torch.sqrt(8), lambda: torch.softmax(peaked)):
    try:
        call()
    except TypeError as e:
        print("TypeError:", str(e).split("\n")[0][:70])
