"""The jagged-layout / SDPA tutorial's idioms: a multi-head attention module whose projections
run on a jagged nested tensor of three sequences, heads split with unflatten + transpose to
(B, H, j, D), F.scaled_dot_product_attention on jagged q/k/v, padding, gradients back to the
nested input and the weights, the same module on each sequence alone, and LayerNorm / GELU /
reductions over the jagged output.  All inputs and weights are fixed (no random stream)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)

class MultiHeadAttention(nn.Module):
    def __init__(self, E, nheads, bias=True, dtype=torch.float64):
        super().__init__()
        self.nheads = nheads
        self.q_proj = nn.Linear(E, E, bias=bias, dtype=dtype)
        self.k_proj = nn.Linear(E, E, bias=bias, dtype=dtype)
        self.v_proj = nn.Linear(E, E, bias=bias, dtype=dtype)
        self.out_proj = nn.Linear(E, E, bias=bias, dtype=dtype)
        self.E_head = E // nheads

    def forward(self, x):
        query, key, value = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        query = query.unflatten(-1, [self.nheads, self.E_head]).transpose(1, 2)
        key = key.unflatten(-1, [self.nheads, self.E_head]).transpose(1, 2)
        value = value.unflatten(-1, [self.nheads, self.E_head]).transpose(1, 2)
        attn = F.scaled_dot_product_attention(query, key, value)
        attn = attn.transpose(1, 2).flatten(-2)
        return self.out_proj(attn)

E, H = 8, 2
seqs = [torch.sin(torch.arange(n * E, dtype=torch.float64).reshape(n, E) * (0.3 + k))
        for k, n in enumerate((3, 5, 2))]
nt = torch.nested.nested_tensor(seqs, layout=torch.jagged, requires_grad=True)
mha = MultiHeadAttention(E, H)
with torch.no_grad():       # deterministic weights: the script's output does not depend on the RNG
    for i, p in enumerate(mha.parameters()):
        p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float64) * (0.7 + i)).reshape(p.shape) / 3)
out = mha(nt)
print(out.shape, out.is_nested, out.layout)
padded = torch.nested.to_padded_tensor(out, 0.0)
print(padded.shape)
print(padded.sum(dim=(1, 2)))
loss = padded.pow(2).sum()
loss.backward()
print(nt.grad.values().sum(0))
print(mha.q_proj.weight.grad.sum(1))
# the same through dense padding-free per-sequence computation
outs = [mha(s.unsqueeze(0)).squeeze(0) for s in seqs]
print(max((o - c).abs().max().item() for o, c in zip(outs, out.unbind())) < 1e-12)
ln = nn.LayerNorm(E, dtype=torch.float64)
y = F.gelu(ln(out)) * 2 + 1
print(torch.nested.to_padded_tensor(y, -1.0)[:, :, 0])
print(y.mean(-1).shape, y.mean(-1).is_nested)
print(y.sum(1))
