"""Model FLOPs utilisation as LLM training scripts estimate it: a small GPT (token and position
embeddings, pre-norm blocks with causal attention, either F.scaled_dot_product_attention or the
explicit q @ k^T / softmax / @ v, a GELU MLP, a tied head) counted with
torch.utils.flop_counter.FlopCounterMode over one forward and one forward+backward step, then
compared with the 6 * N * T rule of thumb and turned into an MFU for an assumed step time and
peak.  Per-op totals are read by the ops' printed names (aten.mm, aten.addmm, aten.bmm); the
per-block share comes from the module names the counter reports."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode


def fill(module, scale=0.08):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            k = torch.arange(p.numel(), dtype=torch.float32)
            p.copy_((torch.sin(k * 0.37 + 0.9 * i) * scale).reshape(p.shape))
    return module


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, flash):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head, self.flash = n_head, flash

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        if self.flash:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
            y = att.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, flash):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, flash)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(),
                                 nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab=64, block_size=16, n_layer=2, n_embd=32, n_head=4, flash=True):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, n_embd), wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([Block(n_embd, n_head, flash) for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(n_embd)))
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight      # weight tying

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.size(1))
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        if targets is None:
            return logits
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    def num_params(self, non_embedding=True):
        n = sum(p.numel() for p in self.parameters())
        return n - self.transformer.wpe.weight.numel() if non_embedding else n


def by_op(counter, module="Global"):
    counts = counter.get_flop_counts().get(module, {})
    return {str(op): n for op, n in sorted(counts.items(), key=lambda kv: str(kv[0]))}


B, T = 4, 16
idx = (torch.arange(B * T) * 7 % 64).view(B, T)
targets = (idx * 3 + 1) % 64
assumed_step_s, peak_flops = 0.02, 5e11

for flash in (True, False):
    torch.manual_seed(0)
    model = fill(GPT(flash=flash))
    print(f"== attention via {'scaled_dot_product_attention' if flash else 'explicit matmuls'}")
    print("non-embedding params:", model.num_params())

    with FlopCounterMode(display=False) as fwd:
        with torch.no_grad():
            model(idx)
    print("forward FLOPs:", fwd.get_total_flops(), by_op(fwd))

    with FlopCounterMode(display=False, depth=3) as step:
        loss = model(idx, targets)
        loss.backward()
    total = step.get_total_flops()
    print("train step FLOPs:", total, by_op(step))
    print("backward / forward:", round((total - fwd.get_total_flops()) / fwd.get_total_flops(), 4))
    rule = 6 * model.num_params() * B * T
    print("6*N*T:", rule, "measured / rule:", round(total / rule, 4))
    print(f"MFU at {assumed_step_s}s per step on {peak_flops:.0e} FLOP/s:",
          f"{total / assumed_step_s / peak_flops:.4%}")
    for name in sorted(step.get_flop_counts()):
        if name.count(".") == 2 or name in ("GPT", "GPT.lm_head"):
            share = sum(step.get_flop_counts()[name].values()) / total
            print(f"  {name:28s} {share:7.2%}", by_op(step, name))
    print("loss:", round(loss.item(), 4))
    print("head grad norm:", round(model.lm_head.weight.grad.norm().item(), 4))
