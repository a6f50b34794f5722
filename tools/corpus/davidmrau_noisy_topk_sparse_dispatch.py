"""Sparsely-gated mixture of experts, after davidmrau/mixture-of-experts (and the Mod-Squad fork
of it): noisy top-k gating (softplus noise scale, the noise drawn from numpy so both runs agree),
the differentiable load estimate through Normal.cdf and torch.where, a dispatcher built from
torch.nonzero / sort / split / gather that combines expert outputs with index_add in log space,
cv_squared importance/load losses, a few Adam steps; then the fork's compute_gating under
torch.jit.script (scatter, nonzero, div rounding_mode), a Switch-style capacity mask from
one_hot + cumsum, GShard-style combine weights built by einsum without a summed subscript (and
viewed flat), bincount expert counts, and a repeat_interleave count mismatch."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions.normal import Normal

rng = np.random.default_rng(5)
torch.manual_seed(0)


def draw(*shape):
    return torch.tensor(rng.standard_normal(shape), dtype=torch.float32)


class Expert(nn.Module):
    def __init__(self, d_in, d_out, d_hidden):
        super().__init__()
        self.inner = nn.Linear(d_in, d_hidden)
        self.outer = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return torch.log_softmax(self.outer(F.relu(self.inner(x))), dim=1)


class Router:
    """Groups rows by expert: rows with a nonzero gate go to that expert, in expert order."""

    def __init__(self, gates):
        self.gates = gates
        pairs = torch.nonzero(gates)                       # (row, expert), row-major
        ordered, order = pairs.sort(0)
        self.expert_of = ordered[:, 1:2]
        self.rows = pairs[order[:, 1], 0]
        self.counts = (gates > 0).sum(0).tolist()
        self.weights = torch.gather(gates[self.rows], 1, self.expert_of)

    def scatter(self, x):
        return torch.split(x[self.rows], self.counts, dim=0)

    def gather(self, outs):
        probs = torch.cat(outs, 0).exp() * self.weights
        total = torch.zeros(self.gates.size(0), outs[0].size(1)).index_add(0, self.rows, probs)
        total = total.masked_fill(total == 0, torch.finfo(torch.float32).eps)
        return total.log()


class NoisyMoE(nn.Module):
    def __init__(self, d_in, d_out, n_experts, d_hidden, k):
        super().__init__()
        self.k = k
        self.n_experts = n_experts
        self.experts = nn.ModuleList(Expert(d_in, d_out, d_hidden) for _ in range(n_experts))
        self.w_gate = nn.Parameter(0.3 * draw(d_in, n_experts))
        self.w_noise = nn.Parameter(0.3 * draw(d_in, n_experts))
        self.register_buffer("mu", torch.tensor([0.0]))
        self.register_buffer("sigma", torch.tensor([1.0]))

    @staticmethod
    def cv2(x):
        x = x.float()
        return x.var() / (x.mean() ** 2 + 1e-10)

    def load_estimate(self, clean, noisy, scale, top):
        n, m = clean.size(0), top.size(1)
        flat = top.flatten()
        pos_in = torch.arange(n) * m + self.k
        thr_in = flat.gather(0, pos_in).unsqueeze(1)
        thr_out = flat.gather(0, pos_in - 1).unsqueeze(1)
        normal = Normal(self.mu, self.sigma)
        p_in = normal.cdf((clean - thr_in) / scale)
        p_out = normal.cdf((clean - thr_out) / scale)
        return torch.where(noisy > thr_in, p_in, p_out).sum(0)

    def forward(self, x, noise):
        clean = x @ self.w_gate
        if self.training:
            scale = F.softplus(x @ self.w_noise) + 1e-2
            logits = clean + noise * scale
        else:
            logits = clean
        top, top_idx = logits.topk(min(self.k + 1, self.n_experts), dim=1)
        gates_k = torch.softmax(top[:, :self.k], dim=1)
        gates = torch.zeros_like(logits).scatter(1, top_idx[:, :self.k], gates_k)
        if self.training:
            load = self.load_estimate(clean, logits, scale, top)
        else:
            load = (gates > 0).sum(0)
        aux = 0.01 * (self.cv2(gates.sum(0)) + self.cv2(load))
        router = Router(gates)
        parts = router.scatter(x)
        outs = [self.experts[i](parts[i]) for i in range(self.n_experts)]
        return router.gather(outs), aux, router.counts


model = NoisyMoE(12, 5, 6, 8, k=2)
with torch.no_grad():               # (the two libraries' random streams differ: numpy weights)
    for p in model.experts.parameters():
        p.copy_(0.4 * draw(*p.shape))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = draw(10, 12)
y = torch.tensor(rng.integers(0, 5, 10))
for step in range(4):
    logp, aux, counts = model(x, draw(10, 6))
    loss = F.nll_loss(logp, y)
    opt.zero_grad()
    (loss + aux).backward()
    opt.step()
    print(step, f"{loss.item():.4f} {aux.item():.5f}", counts,
          f"{model.w_noise.grad.abs().sum().item():.4f}")
model.eval()
with torch.no_grad():
    logp, aux, counts = model(draw(7, 12), None)
print("eval", logp.shape, f"{logp.exp().sum(1).mean().item():.4f}", f"{aux.item():.5f}", counts)


@torch.jit.script
def sort_by_expert(k: int, probs: torch.Tensor, top_vals: torch.Tensor, top_idx: torch.Tensor):
    gates = torch.zeros_like(probs).scatter(1, top_idx, top_vals)
    flat_vals = top_vals.flatten()
    flat_experts = top_idx.flatten()
    keep = flat_vals.nonzero().squeeze(-1)
    _, order = flat_experts[keep].sort(0)
    slots = keep[order]
    return slots.div(k, rounding_mode="trunc"), flat_vals[slots], (gates > 0).long().sum(0)


probs = torch.softmax(draw(6, 4), dim=1)
vals, idx = probs.topk(2, dim=1)
rows, weights, sizes = sort_by_expert(2, probs, vals, idx)
print("jit gating", rows.tolist(), [round(w, 4) for w in weights.tolist()], sizes.tolist())

# Switch-style routing with a capacity of 2 tokens per expert
S, E, C = 8, 4, 2
router_probs = torch.softmax(draw(S, E), dim=-1)
choice = router_probs.argmax(dim=-1)
onehot = F.one_hot(choice, num_classes=E)
slot = torch.cumsum(onehot, dim=0) - 1
kept = onehot * (slot < C)
print("slots", slot.dtype, kept.sum(0).tolist(), torch.bincount(choice, minlength=E).tolist())
balance = (router_probs.mean(0) * kept.float().mean(0)).sum() * E
print("balance", f"{balance.item():.5f}")
slot_onehot = F.one_hot((slot * kept).sum(1), num_classes=C).float()
gate_w = (router_probs * kept).requires_grad_()
combine = torch.einsum("se,sc->sec", gate_w, slot_onehot)
print("combine", combine.shape, combine.is_contiguous(), type(combine.grad_fn).__name__,
      combine.view(S, -1).shape)
tokens = draw(S, 3)
expert_in = torch.einsum("sec,sm->ecm", combine.bool().type_as(tokens), tokens)
print("expert_in", expert_in.shape, f"{expert_in.sum().item():.4f}")
spread = torch.einsum("se,ec->sec", router_probs, torch.ones(E, C))
print("spread", spread.stride(), spread.view(S, E * C).sum().item())
combine.sum().backward()
print("gate grad", gate_w.grad.sum(0).tolist())

try:
    torch.zeros(2, 3, 4).repeat_interleave(torch.tensor([1, 2]), dim=-1)
except RuntimeError as e:
    print("RuntimeError", e)
