"""Opacus-style per-sample gradients for a small text model (Embedding, Conv1d, GroupNorm,
LayerNorm, MultiheadAttention) with vmap(grad): DP-SGD clipping and aggregation, checked against
a loop of backward passes."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, vmap, grad

torch.manual_seed(0)

class TinyText(nn.Module):
    def __init__(self, vocab=20, d=8, classes=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.conv = nn.Conv1d(d, d, 3, padding=1)
        self.ln = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 2, batch_first=True)
        self.gn = nn.GroupNorm(2, d)
        self.fc = nn.Linear(d, classes)
    def forward(self, tokens):
        h = self.emb(tokens)                      # B, T, d
        h = self.conv(h.transpose(1, 2))          # B, d, T
        h = self.gn(h).transpose(1, 2)
        h = self.ln(F.gelu(h))
        a, _ = self.attn(h, h, h, need_weights=False)
        h = h + a
        return self.fc(h.mean(1))

model = TinyText()
with torch.no_grad():
    for i, (name, p) in enumerate(model.named_parameters()):
        p.copy_(torch.linspace(-1, 1, p.numel()).reshape(p.shape).mul(1.3 + 0.1 * i).sin() * 0.4)
model.eval()
tokens = (torch.arange(6 * 7).reshape(6, 7) * 7) % 20
labels = torch.tensor([0, 1, 2, 0, 1, 2])

params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}
def loss_one(params, buffers, tok, lab):
    out = functional_call(model, (params, buffers), (tok.unsqueeze(0),))
    return F.cross_entropy(out, lab.unsqueeze(0))

per_sample = vmap(grad(loss_one), in_dims=(None, None, 0, 0))(params, buffers, tokens, labels)
print(len(per_sample), per_sample['emb.weight'].shape, per_sample['attn.in_proj_weight'].shape)

loop = []
for i in range(6):
    model.zero_grad()
    loss = F.cross_entropy(model(tokens[i:i + 1]), labels[i:i + 1])
    loss.backward()
    loop.append({k: p.grad.clone() for k, p in model.named_parameters()})
ok = all(torch.allclose(per_sample[k][i], loop[i][k], atol=1e-6) for i in range(6) for k in params)
print('match loop', ok)

# DP-SGD: clip each sample's gradient to norm C, average
C = 0.5
norms = torch.stack([g.reshape(6, -1).norm(dim=1) for g in per_sample.values()]).norm(dim=0)
print('norms', norms)
factor = (C / (norms + 1e-6)).clamp(max=1.0)
clipped = {k: (g * factor.view(-1, *([1] * (g.dim() - 1)))).sum(0) / 6 for k, g in per_sample.items()}
print('clipped norm', torch.stack([g.norm() for g in clipped.values()]).norm().item() <= C + 1e-6)
print(clipped['fc.bias'])
# embedding per-sample gradients are sparse in rows
nz = (per_sample['emb.weight'].abs().sum(-1) > 0).sum(1)
print('rows touched', nz.tolist())
