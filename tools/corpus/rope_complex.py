"""Rotary position embeddings as tiny LLaMA-style transformers write them: precompute_freqs_cis
with torch.polar, apply_rotary_emb through view_as_complex / complex multiply / view_as_real
.flatten(3), then one causal attention step, a loss and the gradients of the projections."""
import math

import torch
import torch.nn.functional as F
from torch import nn


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)  # complex64
    return freqs_cis


def reshape_for_broadcast(freqs_cis: torch.Tensor, x: torch.Tensor):
    ndim = x.ndim
    assert 0 <= 1 < ndim
    assert freqs_cis.shape == (x.shape[1], x.shape[-1])
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class Attention(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = dim // n_heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)

    def forward(self, x, freqs_cis, mask):
        bsz, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)
        xq, xk, xv = xq.transpose(1, 2), xk.transpose(1, 2), xv.transpose(1, 2)
        scores = torch.matmul(xq, xk.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores + mask
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        output = torch.matmul(scores, xv)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output)


dim, n_heads, seqlen, bsz = 16, 2, 6, 2
freqs_cis = precompute_freqs_cis(dim // n_heads, seqlen * 2)
print(freqs_cis.shape, freqs_cis.dtype, freqs_cis.is_complex())
print(freqs_cis[1, :3])
print(torch.view_as_real(freqs_cis)[2, :2])
print(freqs_cis.abs().max(), freqs_cis.angle()[3, 0])

attn = Attention(dim, n_heads)
with torch.no_grad():                   # deterministic weights, as a checkpoint would give
    for k, lin in enumerate([attn.wq, attn.wk, attn.wv, attn.wo]):
        n = lin.weight.numel()
        lin.weight.copy_(torch.sin(torch.arange(n, dtype=torch.float32) * (0.37 + 0.1 * k))
                         .reshape(dim, dim) / 2)

x = torch.cos(torch.arange(bsz * seqlen * dim, dtype=torch.float32) * 0.21).reshape(bsz, seqlen,
                                                                                   dim)
mask = torch.full((seqlen, seqlen), float("-inf")).triu(1)
out = attn(x, freqs_cis[:seqlen], mask)
print(out.shape, out.dtype)
print(out[0, :2, :4])

xq = attn.wq(x).view(bsz, seqlen, n_heads, dim // n_heads)
xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
print(xq_.shape, xq_.dtype)
rotated, _ = apply_rotary_emb(xq, xq, freqs_cis[:seqlen])
# rotation keeps each pair's norm
print(torch.allclose(rotated.norm(dim=-1), xq.norm(dim=-1), atol=1e-5))

loss = out.pow(2).sum()
loss.backward()
print(round(loss.item(), 4))
for name, p in attn.named_parameters():
    print(name, p.grad.shape, round(p.grad.norm().item(), 4))

# the same step with the rotation done by hand in real arithmetic gives the same gradient
xq2 = attn.wq(x).view(bsz, seqlen, n_heads, -1, 2)
cos, sin = freqs_cis[:seqlen].real.view(1, seqlen, 1, -1), freqs_cis[:seqlen].imag.view(
    1, seqlen, 1, -1)
real_rot = torch.stack([xq2[..., 0] * cos - xq2[..., 1] * sin,
                        xq2[..., 0] * sin + xq2[..., 1] * cos], -1).flatten(3)
complex_rot = apply_rotary_emb(attn.wq(x).view(bsz, seqlen, n_heads, -1),
                               attn.wq(x).view(bsz, seqlen, n_heads, -1), freqs_cis[:seqlen])[0]
print(torch.allclose(real_rot, complex_rot, atol=1e-6))

# a complex leaf: the gradient of a real loss is dL/dx + i dL/dy
z = torch.view_as_complex(torch.tensor([[1.0, 2.0], [0.5, -1.0]])).clone().requires_grad_()
(z * freqs_cis[3, :2]).real.sum().backward()
print(z.grad)
