"""lucidrains-style attention: exists/default/cast_tuple helpers, einops rearrange of heads,
torch.einsum similarities, key padding and causal masks filled in place, talking heads (head-mixing
einsums before and after the softmax); losses, gradient norms, finfo limits and mask errors."""
import torch
import torch.nn.functional as F
from torch import nn, einsum
from einops import rearrange, repeat
from typing import Optional

def exists(val):
    return val is not None

def default(val, d):
    return val if exists(val) else d

def cast_tuple(val, length=1):
    return val if isinstance(val, tuple) else ((val,) * length)

def max_neg_value(t):
    return -torch.finfo(t.dtype).max

class Attention(nn.Module):
    def __init__(self, dim, heads=4, dim_head=8, talking_heads=False, causal=False):
        super().__init__()
        inner = heads * dim_head
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.causal = causal
        self.to_qkv = nn.Linear(dim, inner * 3, bias=False)
        self.to_out = nn.Linear(inner, dim)
        self.talking_heads = talking_heads
        if talking_heads:
            self.pre_softmax_proj = nn.Parameter(torch.eye(heads) + 0.1)
            self.post_softmax_proj = nn.Parameter(torch.eye(heads) - 0.05)

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None, context: Optional[torch.Tensor] = None) -> torch.Tensor:
        h = self.heads
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h=h), (q, k, v))
        dots = einsum('b h i d, b h j d -> b h i j', q, k) * self.scale
        if self.talking_heads:
            dots = einsum('b h i j, h k -> b k i j', dots, self.pre_softmax_proj)
        mask_value = max_neg_value(dots)
        if exists(mask):
            mask = rearrange(mask, 'b j -> b () () j')
            dots.masked_fill_(~mask, mask_value)
        if self.causal:
            i, j = dots.shape[-2:]
            causal_mask = torch.ones(i, j, dtype=torch.bool).triu_(j - i + 1)
            dots = dots.masked_fill(causal_mask, mask_value)
        attn = dots.softmax(dim=-1)
        if self.talking_heads:
            attn = einsum('b h i j, h k -> b k i j', attn, self.post_softmax_proj)
        out = einsum('b h i j, b h j d -> b h i d', attn, v)
        out = rearrange(out, 'b h n d -> b n (h d)')
        return self.to_out(out)

def init_det(module):
    with torch.no_grad():
        for i, (name, p) in enumerate(module.named_parameters()):
            if 'proj' in name:
                continue
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=p.dtype) * (0.3 + 0.1 * i)).reshape(p.shape) * 0.3)

x = torch.cos(torch.arange(2 * 6 * 16, dtype=torch.float32) * 0.7).reshape(2, 6, 16)
mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
for th, causal in [(False, False), (True, False), (False, True), (True, True)]:
    attn = Attention(16, talking_heads=th, causal=causal)
    init_det(attn)
    out = attn(x, mask=mask)
    loss = out.pow(2).mean()
    loss.backward()
    gnorm = torch.stack([p.grad.norm() for p in attn.parameters() if p.grad is not None]).norm()
    print(th, causal, out.shape, f'{loss.item():.5f}', f'{gnorm.item():.4f}')
    print(attn.to_qkv.weight.grad.abs().sum().round(decimals=3))
print(cast_tuple(3, 2), cast_tuple((1, 2)), default(None, 5))
print(max_neg_value(torch.zeros(1)), max_neg_value(torch.zeros(1, dtype=torch.float16)))
print(torch.finfo(torch.bfloat16).max, torch.finfo(torch.float32).eps, torch.finfo().tiny)
print(torch.iinfo(torch.int64).max, torch.finfo(torch.float16).min)
t = torch.zeros(2, 3)
try:
    t.masked_fill_(torch.ones(2, 4, dtype=torch.bool), 1.0)
except RuntimeError as e:
    print('RuntimeError')
try:
    t.masked_fill(torch.ones(2, 3), 1.0)
except RuntimeError as e:
    print('RuntimeError', 'Bool' in str(e) or 'bool' in str(e))
