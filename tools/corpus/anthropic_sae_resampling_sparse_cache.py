"""A ReLU sparse autoencoder on cached activations, after Anthropic's "Towards Monosemanticity" and
its open replications: L1 penalty, unit-norm decoder rows with the parallel gradient component
removed, Adam, dead-feature resampling from high-loss inputs (and the Adam state reset), feature
activations cached sparse to disk and loaded back."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
d_in, d_sae, n = 8, 24, 256

class SAE(nn.Module):
    def __init__(self, d_in, d_sae, l1_coeff=3e-3):
        super().__init__()
        self.W_enc = nn.Parameter(torch.nn.init.kaiming_uniform_(torch.empty(d_in, d_sae)))
        self.W_dec = nn.Parameter(torch.nn.init.kaiming_uniform_(torch.empty(d_sae, d_in)))
        self.b_enc = nn.Parameter(torch.zeros(d_sae))
        self.b_dec = nn.Parameter(torch.zeros(d_in))
        self.l1_coeff = l1_coeff
        with torch.no_grad():
            self.W_dec.data[:] = self.W_dec / self.W_dec.norm(dim=-1, keepdim=True)

    def forward(self, x):
        x_cent = x - self.b_dec
        acts = F.relu(x_cent @ self.W_enc + self.b_enc)
        x_rec = acts @ self.W_dec + self.b_dec
        l2 = (x_rec.float() - x.float()).pow(2).sum(-1).mean(0)
        l1 = self.l1_coeff * acts.float().abs().sum()
        return l2 + l1, x_rec, acts, l2, l1

    @torch.no_grad()
    def make_decoder_weights_and_grad_unit_norm(self):
        W_dec_normed = self.W_dec / self.W_dec.norm(dim=-1, keepdim=True)
        W_dec_grad_proj = (self.W_dec.grad * W_dec_normed).sum(-1, keepdim=True) * W_dec_normed
        self.W_dec.grad -= W_dec_grad_proj
        self.W_dec.data = W_dec_normed

sae = SAE(d_in, d_sae)
print({k: tuple(v.shape) for k, v in sae.state_dict().items()})
feats = torch.linspace(0, 1, n)[:, None] * torch.linspace(-1, 1, d_in)[None] + torch.cos(torch.arange(n * d_in).float()).view(n, d_in) * 0.1
opt = torch.optim.Adam(sae.parameters(), lr=1e-3, betas=(0.9, 0.99))
freqs = torch.zeros(d_sae)
for step in range(30):
    loss, x_rec, acts, l2, l1 = sae(feats)
    loss.backward()
    sae.make_decoder_weights_and_grad_unit_norm()
    opt.step()
    opt.zero_grad(set_to_none=True)
    freqs += (acts > 0).float().mean(0)
print("decoder rows unit norm:", torch.allclose(sae.W_dec.norm(dim=-1), torch.ones(d_sae), atol=1e-5))
print("W_dec is leaf", sae.W_dec.is_leaf, sae.W_dec.requires_grad, type(sae.W_dec).__name__)
freqs = freqs / 30
dead = freqs < 1e-3
print("freqs shape", freqs.shape, "dead dtype", dead.dtype, "num dead", int(dead.sum()) >= 0)
with torch.no_grad():
    loss, x_rec, acts, l2, l1 = sae(feats)
    ev = 1 - (feats - x_rec).var() / feats.var()
    print("l0 is a float", isinstance((acts > 0).float().sum(-1).mean().item(), float))
    print("loss finite", torch.isfinite(loss).item(), "ev < 1", (ev < 1).item())

# resampling dead neurons from high-loss inputs, after Anthropic's update
@torch.no_grad()
def resample(sae, x, dead_idx):
    _, x_rec, _, _, _ = sae(x)
    losses = (x - x_rec).pow(2).sum(-1)
    probs = losses.square() / losses.square().sum()
    picks = torch.multinomial(probs, num_samples=len(dead_idx), replacement=False)
    new = F.normalize(x[picks] - sae.b_dec, dim=-1)
    sae.W_dec.data[dead_idx] = new
    sae.W_enc.data[:, dead_idx] = new.T * 0.2
    sae.b_enc.data[dead_idx] = 0.0
    return picks

dead_idx = torch.tensor([1, 5, 7])
picks = resample(sae, feats, dead_idx)
print(picks.shape, picks.dtype)
print(sae.W_dec[dead_idx].norm(dim=-1))
print(sae.b_enc[dead_idx])
state = opt.state[sae.W_enc]
state["exp_avg"][:, dead_idx] = 0.0
state["exp_avg_sq"][:, dead_idx] = 0.0
print(sorted(state.keys()), state["step"])
print(state["exp_avg"][:, dead_idx].abs().sum())

# feature activations cached sparse to disk, as SAE-analysis notebooks do
import io
with torch.no_grad():
    _, _, acts, _, _ = sae(feats)
sparse_acts = acts.to_sparse()
print(sparse_acts.layout, sparse_acts._nnz() == int((acts != 0).sum()))
buf = io.BytesIO()
torch.save({"acts": sparse_acts, "d_sae": d_sae}, buf)
buf.seek(0)
cache = torch.load(buf)
print(cache["d_sae"], cache["acts"].is_sparse, torch.equal(cache["acts"].to_dense(), acts))
top_feats = cache["acts"].to_dense().sum(0).topk(3).indices
print("top features by total activation:", top_feats.shape)
