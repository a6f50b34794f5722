"""T5 relative position buckets (log-spaced, causal and bidirectional) through nn.Embedding,
x-transformers dynamic position bias MLP, cosine-sim attention with a learned log scale and causal
mask; bucketize/searchsorted, tril_indices, roll."""
import math
import torch
import torch.nn.functional as F
from torch import nn, einsum
from einops import rearrange, repeat

class RelativePositionBias(nn.Module):
    def __init__(self, scale, causal=False, num_buckets=8, max_distance=16, heads=2):
        super().__init__()
        self.scale = scale
        self.causal = causal
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.relative_attention_bias = nn.Embedding(num_buckets, heads)

    @staticmethod
    def _relative_position_bucket(relative_position, causal=True, num_buckets=32, max_distance=128):
        ret = 0
        n = -relative_position
        if not causal:
            num_buckets //= 2
            ret += (n < 0).long() * num_buckets
            n = torch.abs(n)
        else:
            n = torch.max(n, torch.zeros_like(n))
        max_exact = num_buckets // 2
        is_small = n < max_exact
        val_if_large = max_exact + (
            torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
        ).long()
        val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
        ret += torch.where(is_small, n, val_if_large)
        return ret

    def forward(self, i, j):
        q_pos = torch.arange(j - i, j, dtype=torch.long)
        k_pos = torch.arange(j, dtype=torch.long)
        rel_pos = k_pos[None, :] - q_pos[:, None]
        rp_bucket = self._relative_position_bucket(rel_pos, causal=self.causal, num_buckets=self.num_buckets, max_distance=self.max_distance)
        values = self.relative_attention_bias(rp_bucket)
        bias = rearrange(values, 'i j h -> h i j')
        return bias * self.scale

class DynamicPositionBias(nn.Module):
    def __init__(self, dim, heads, depth=2, log_distance=False):
        super().__init__()
        self.log_distance = log_distance
        self.mlp = nn.ModuleList([nn.Sequential(nn.Linear(1, dim), nn.SiLU())])
        for _ in range(depth - 1):
            self.mlp.append(nn.Sequential(nn.Linear(dim, dim), nn.SiLU()))
        self.mlp.append(nn.Linear(dim, heads))

    def forward(self, i, j):
        n = j
        seq_arange = torch.arange(n)
        context_arange = torch.arange(n)
        indices = rearrange(seq_arange, 'i -> i 1') - rearrange(context_arange, 'j -> 1 j')
        indices += (n - 1)
        pos = torch.arange(-n + 1, n).float()
        pos = rearrange(pos, '... -> ... 1')
        if self.log_distance:
            pos = torch.sign(pos) * torch.log(pos.abs() + 1)
        for layer in self.mlp:
            pos = layer(pos)
        bias = pos[indices]
        bias = rearrange(bias, 'i j h -> h i j')
        return bias

def init_det(m):
    with torch.no_grad():
        for k, p in enumerate(m.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (0.21 + 0.1 * k)).reshape(p.shape))

for causal in (False, True):
    rpb = RelativePositionBias(scale=8 ** -0.5, causal=causal)
    init_det(rpb)
    b = rpb(4, 6)
    print(causal, b.shape, b[0].round(decimals=3).tolist())
    rel = torch.arange(-20, 21)
    print(RelativePositionBias._relative_position_bucket(rel, causal=causal, num_buckets=8, max_distance=16).tolist())
    b.sum().backward()
    print(rpb.relative_attention_bias.weight.grad.round(decimals=3).tolist())
for log_distance in (False, True):
    dpb = DynamicPositionBias(dim=8, heads=2, log_distance=log_distance)
    init_det(dpb)
    out = dpb(5, 5)
    print(out.shape, round(out.sum().item(), 4))
    out.pow(2).mean().backward()
    print(round(dpb.mlp[0][0].weight.grad.norm().item(), 5))
q = torch.sin(torch.arange(2 * 2 * 5 * 4, dtype=torch.float32)).reshape(2, 2, 5, 4).requires_grad_()
k = torch.cos(torch.arange(2 * 2 * 5 * 4, dtype=torch.float32)).reshape(2, 2, 5, 4)
q_n, k_n = map(lambda t: F.normalize(t, dim=-1), (q, k))
scale = nn.Parameter(torch.full((1, 2, 1, 1), math.log(10.)))
sim = einsum('b h i d, b h j d -> b h i j', q_n, k_n) * scale.exp()
sim = sim + dpb(5, 5)
causal_mask = torch.ones(5, 5, dtype=torch.bool).triu(1)
sim = sim.masked_fill(causal_mask, -torch.finfo(sim.dtype).max)
sim = sim - sim.amax(dim=-1, keepdim=True).detach()
attn = sim.softmax(dim=-1)
print(attn[0, 0].round(decimals=3).tolist())
attn.max(dim=-1).values.sum().backward()
print(round(q.grad.abs().sum().item(), 4), round(scale.grad.sum().item(), 5))
print(torch.bucketize(torch.tensor([0.5, 2.0, 7.0]), torch.tensor([1.0, 2.0, 4.0])), torch.searchsorted(torch.tensor([1.0, 2.0, 4.0]), torch.tensor([2.0]), right=True))
print(torch.tril_indices(3, 3, offset=-1).tolist(), torch.roll(torch.arange(5), 2).tolist())
