"""Efficient-attention variants side by side, after aliutkus/favor's FAVOR layer (orthonormal
random features from torch.qr of a float64 draw, ReLU or hyperbolic-exp feature maps, causal
prefix sums of key-value outer products, `out /= norm` in place on a graph tensor) and the
mask snippets of deepnetni/zeta and niujiazhen/happy-llm: a sliding-window band built from
tril/triu, nn.MultiheadAttention with bool masks, key_padding_mask, need_weights and
average_attn_weights, a norm_first GELU TransformerEncoder, and linear attention written with
einsum outer products ('bnd,bne->bnde', no summed subscript) compared with its quadratic form.
Random draws come from numpy so both runs agree."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(21)
torch.manual_seed(0)


def draw(*shape):
    return torch.tensor(rng.standard_normal(shape), dtype=torch.float32)


def init_(module, scale=0.3):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(draw(*p.shape) * scale)
    return module


class RandomFeatureAttention(nn.Module):
    def __init__(self, dim, n_features, causal, maps):
        super().__init__()
        self.causal, self.maps = causal, maps
        self.register_buffer("scale", torch.tensor(1.0 / math.sqrt(n_features)))
        block = draw(n_features, dim).double()
        self.register_buffer("proj", torch.qr(block)[0].float())

    def phi(self, x):
        u = x @ self.proj.T
        damp = torch.exp(-(x ** 2).sum(-1, keepdim=True) / 2)
        return torch.cat([m(u) for m in self.maps], dim=-1) * damp * self.scale

    def forward(self, q, k, v):
        fq, fk = self.phi(q), self.phi(k)
        if self.causal:
            kv = torch.matmul(fk[..., :, None], v[..., None, :]).cumsum(dim=1)
            out = torch.matmul(fq[..., None, :], kv).squeeze(-2)
            norm = torch.matmul(fq[..., None, :], fk.cumsum(dim=1)[..., None]).squeeze(-2)
        else:
            out = fq @ (fk.transpose(1, 2) @ v)
            norm = fq @ fk.sum(dim=1)[..., None]
        out /= norm
        return out


q, k, v = draw(2, 7, 4).requires_grad_(), draw(2, 7, 4).requires_grad_(), draw(2, 7, 3)
for causal in (False, True):
    for maps in ([F.relu], [torch.exp, lambda u: torch.exp(-u)]):
        att = RandomFeatureAttention(4, 6, causal, maps)
        out = att(q, k, v)
        out.square().mean().backward()
        print("favor", causal, len(maps), tuple(out.shape), type(out.grad_fn).__name__,
              f"{out.sum().item():.4f}", f"{q.grad.abs().sum().item():.4f}")
        q.grad = None
print("proj orthonormal", torch.allclose(att.proj.T @ att.proj, torch.eye(4), atol=1e-5),
      att.proj.dtype, sorted(att.state_dict()))

# linear attention (elu + 1 features): outer products by einsum, against the quadratic form
fq, fk = F.elu(q) + 1, F.elu(k) + 1
steps = torch.einsum("bnd,bne->bnde", fk, v)
print("outer", steps.shape, steps.is_contiguous(), type(steps.grad_fn).__name__)
causal_lin = torch.einsum("bnd,bnde->bne", fq, steps.cumsum(1)) / \
    torch.einsum("bnd,bnd->bn", fq, fk.cumsum(1)).unsqueeze(-1)
weights = (fq @ fk.transpose(1, 2)).tril()
quadratic = (weights / weights.sum(-1, keepdim=True)) @ v
print("linear == quadratic", torch.allclose(causal_lin, quadratic, atol=1e-5))

# sliding window of 3 (causal band) and a symmetric band
T, W = 6, 3
band = torch.ones(T, T, dtype=torch.bool).tril() & torch.ones(T, T, dtype=torch.bool).triu(-(W - 1))
print(band.int())
sym = torch.ones(T, T).triu(-1).tril(1).bool()
scores = (q[0, :T] @ k[0, :T].T) / math.sqrt(4)
print(F.softmax(scores.masked_fill(~band, float("-inf")), dim=-1)[3])
x6 = draw(2, T, 8)
sdpa = F.scaled_dot_product_attention(x6, x6, x6, attn_mask=band)
manual = F.softmax((x6 @ x6.transpose(1, 2) / math.sqrt(8)).masked_fill(~band, float("-inf")),
                   -1) @ x6
print("band sdpa", torch.allclose(sdpa, manual, atol=1e-6), f"{sdpa[:, :, :2].sum().item():.4f}")

mha = init_(nn.MultiheadAttention(embed_dim=8, num_heads=4))
seq = draw(T, 2, 8)
out, w = mha(seq, seq, seq, attn_mask=~sym)
print("mha", out.shape, w.shape, f"{w[0, 2].sum().item():.4f}", (w[0] == 0).sum().item())
_, per_head = mha(seq, seq, seq, attn_mask=~band, average_attn_weights=False)
print("per head", per_head.shape, torch.allclose(per_head.mean(1), mha(seq, seq, seq, attn_mask=~band)[1]))
pad = torch.tensor([[False] * T, [False] * 4 + [True] * 2])
out, w = mha(seq, seq, seq, key_padding_mask=pad)
print("padding", w[1, :, 4:].abs().sum().item(), f"{out.sum().item():.4f}")
print("no weights", mha(seq, seq, seq, need_weights=False)[1])

layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0,
                                   activation="gelu", batch_first=True, norm_first=True)
encoder = init_(nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False))
mask = nn.Transformer.generate_square_subsequent_mask(T)
y = encoder(x6, mask=mask, is_causal=True)
print("encoder", y.shape, type(y.grad_fn).__name__, f"{y.sum().item():.4f}")
opt = torch.optim.SGD(encoder.parameters(), lr=0.1)
for step in range(3):
    loss = encoder(x6, mask=mask, is_causal=True).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, f"{loss.item():.5f}")

try:
    RandomFeatureAttention(4, 6, True, [F.relu])(q, k[:, :5], v)
except RuntimeError as e:
    print("RuntimeError", str(e).split(" at ")[0])
