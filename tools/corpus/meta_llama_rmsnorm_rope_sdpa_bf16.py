import torch
import torch.nn as nn
import torch.nn.functional as F
import math

class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
    def forward(self, x):
        output = self._norm(x.float()).type_as(x)
        return output * self.weight

def precompute_freqs_cis(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)

def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)

def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)

B, T, H, D = 2, 5, 2, 8
x = (torch.arange(B * T * H * D, dtype=torch.float32).reshape(B, T, H, D) % 11 - 5) / 4
xb = x.to(torch.bfloat16)
norm = RMSNorm(D).to(torch.bfloat16)
y = norm(xb)
print(y.dtype, norm.weight.dtype)
print(y[0, 0])
fc = precompute_freqs_cis(D, T)
print(fc.dtype, fc.shape)
q, k = apply_rotary_emb(xb, xb * 0.5, fc)
print(q.dtype, q[1, 3, 1])
inv = 1.0 / (10000 ** (torch.arange(0, D, 2).float() / D))
t = torch.arange(T).type_as(inv)
freqs = torch.einsum("i,j->ij", t, inv)
emb = torch.cat((freqs, freqs), dim=-1)
cos, sin = emb.cos().to(torch.bfloat16), emb.sin().to(torch.bfloat16)
qt = xb.transpose(1, 2)
q2 = qt * cos + rotate_half(qt) * sin
print(q2.dtype, q2[0, 1, 2])
att = F.scaled_dot_product_attention(q2, q2, q2, is_causal=True)
print(att.dtype, att.shape, att[0, 0, -1])
scores = (q2 @ q2.transpose(-2, -1)) / math.sqrt(D)
mask = torch.full((T, T), float("-inf")).triu(1)
scores = scores + mask
print(scores.dtype)
p = F.softmax(scores.float(), dim=-1).type_as(q2)
print(p.dtype, p[0, 0, 2])
out = p @ q2
print((out - att).abs().max())
