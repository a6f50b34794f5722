"""ARENA-style activation patching of the residual stream, with forward hooks and
functools.partial, on a small MLP-transformer whose weights are filled deterministically: the
clean/corrupt logit difference, the patching map per (layer, position), and its best cell."""
import torch
import torch.nn as nn
from functools import partial

torch.manual_seed(0)

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
    def forward(self, x):
        return x + self.mlp(self.ln(x))

class Model(nn.Module):
    def __init__(self, vocab=10, d=8, n_layers=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(5, d))
        self.blocks = nn.ModuleList([Block(d) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d)
        self.unembed = nn.Linear(d, vocab, bias=False)
    def forward(self, toks):
        x = self.embed(toks) + self.pos[: toks.shape[-1]]
        for b in self.blocks:
            x = b(x)
        return self.unembed(self.ln_f(x))

model = Model().eval()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        vals = torch.cos(torch.linspace(0, 7 + i, p.numel()))
        p.copy_(vals.view_as(p) * (0.6 if p.dim() > 1 else 0.1))

clean = torch.tensor([[1, 4, 2, 7, 3]])
corrupt = torch.tensor([[1, 4, 9, 7, 3]])
answer, wrong = 3, 5

def logit_diff(logits):
    return (logits[0, -1, answer] - logits[0, -1, wrong]).item()

clean_cache = {}
def save_hook(module, inp, out, name):
    clean_cache[name] = out.detach().clone()

hs = [b.register_forward_hook(partial(save_hook, name=f"blocks.{i}")) for i, b in enumerate(model.blocks)]
with torch.no_grad():
    clean_logits = model(clean)
for h in hs:
    h.remove()
with torch.no_grad():
    corrupt_logits = model(corrupt)
clean_ld, corrupt_ld = logit_diff(clean_logits), logit_diff(corrupt_logits)
print(f"clean logit diff: {clean_ld:.4f}")
print(f"corrupt logit diff: {corrupt_ld:.4f}")

def patch_hook(module, inp, out, pos, layer):
    out = out.clone()
    out[:, pos] = clean_cache[f"blocks.{layer}"][:, pos]
    return out

results = torch.zeros(len(model.blocks), clean.shape[1])
for layer in range(len(model.blocks)):
    for pos in range(clean.shape[1]):
        h = model.blocks[layer].register_forward_hook(partial(patch_hook, pos=pos, layer=layer))
        with torch.no_grad():
            patched = model(corrupt)
        h.remove()
        results[layer, pos] = (logit_diff(patched) - corrupt_ld) / (clean_ld - corrupt_ld + 1e-12)
print(results.round(decimals=3))
best = results.flatten().argmax()
print("best (layer, pos):", divmod(best.item(), clean.shape[1]))
print(torch.unravel_index(best, results.shape))
print("patching pos 2 at layer 0 recovers", f"{results[0, 2].item():.3f}")
print(results.abs().max(dim=1))
