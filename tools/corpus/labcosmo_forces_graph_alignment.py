"""Inspired by lab-cosmo/torch_spex's compute_forces (forces as -autograd.grad of the energy with
grad_outputs=ones_like and create_graph while training) and hand-written molecular GNNs:
a Lennard-Jones cluster through torch.cdist / triu_indices with forces, a force-matching step
that backpropagates through the forces (pair distances written out, since PyTorch has no
double backward of cdist), velocity-Verlet steps under no_grad, a message-passing network over
a bond list (index_select gather, index_add_ / scatter_add_ sums, degree normalisation with
bincount, per-molecule segment pooling with scatter_reduce), and a Needleman-Wunsch score as a
dynamic-programming loop on tensors, hard (max) and soft (logsumexp) with its gradient."""
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
rng = np.random.RandomState(7)


def compute_forces(energy, positions, is_training=True):
    gradient = torch.autograd.grad(outputs=energy, inputs=positions,
                                   grad_outputs=torch.ones_like(energy),
                                   retain_graph=is_training, create_graph=is_training)[0]
    return -1 * gradient


# ---- Lennard-Jones cluster -----------------------------------------------------------------
grid = np.array([[i, j, 0.0] for i in range(3) for j in range(2)]) * 1.15
pos = torch.tensor(grid + rng.uniform(-0.05, 0.05, grid.shape), dtype=torch.float64,
                   requires_grad=True)
d = torch.cdist(pos, pos)
iu = torch.triu_indices(6, 6, offset=1)
r = d[iu[0], iu[1]]
energy = (4 * ((1 / r) ** 12 - (1 / r) ** 6)).sum()
forces = compute_forces(energy, pos, is_training=False)
print("E", round(energy.item(), 6), "net force", forces.sum(0).abs().max().item() < 1e-6)
print("pdist == cdist pairs:", torch.allclose(torch.pdist(pos.detach()), r.detach()))

# a tiny pair-potential network fitted to energies and forces (needs force gradients)
net = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1)).double()
with torch.no_grad():
    for i, p in enumerate(net.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float64).view(p.shape) + i) * 0.5)
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
ref_f = forces.detach()
ref_e = energy.detach()
for step in range(3):
    p = pos.detach().clone().requires_grad_(True)
    diff = p[iu[0]] - p[iu[1]]
    rr = diff.pow(2).sum(-1).sqrt()
    e = net(rr.unsqueeze(-1)).sum()
    f = compute_forces(e, p)
    loss = (e - ref_e) ** 2 + (f - ref_f).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"fit {step} loss {loss.item():.6e} |f| {f.norm().item():.6f}")

# velocity Verlet with forces recomputed each step
x = pos.detach().clone()
v = torch.zeros_like(x)
dt, m = 1e-4, 1.0


def lj_forces(x):
    x = x.detach().requires_grad_(True)
    rr = torch.pdist(x)
    return compute_forces((4 * (rr ** -12 - rr ** -6)).sum(), x, is_training=False)


f = lj_forces(x)
for _ in range(5):
    with torch.no_grad():
        x = x + v * dt + 0.5 * f / m * dt ** 2
    f_new = lj_forces(x)
    with torch.no_grad():
        v = v + 0.5 * (f + f_new) / m * dt
    f = f_new
print("verlet |v|", v.norm().item() > 0, "momentum ~ 0:", v.sum(0).abs().max().item() < 1e-6)

# ---- message passing over bonds ------------------------------------------------------------
# two molecules: a 5-ring (atoms 0-4) and a 3-chain (atoms 5-7); edges both directions
bonds = torch.tensor([[0, 1], [1, 2], [2, 3], [3, 4], [4, 0], [5, 6], [6, 7]])
edge_index = torch.cat([bonds, bonds.flip(1)]).t().contiguous()
batch = torch.tensor([0, 0, 0, 0, 0, 1, 1, 1])
atom_types = torch.tensor([0, 1, 0, 2, 0, 1, 1, 2])
h0 = nn.functional.one_hot(atom_types, 3).float()
deg = torch.bincount(edge_index[1], minlength=8).float()
print("degree", deg.tolist())


class MPLayer(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.msg = nn.Linear(2 * d_in, d_out)
        self.upd = nn.Linear(d_in + d_out, d_out)

    def forward(self, h, edge_index):
        src, dst = edge_index
        m = torch.relu(self.msg(torch.cat([h.index_select(0, src), h.index_select(0, dst)], 1)))
        agg = torch.zeros(h.shape[0], m.shape[1]).index_add_(0, dst, m) / deg.clamp(min=1)[:, None]
        return torch.tanh(self.upd(torch.cat([h, agg], 1)))


layers = nn.ModuleList([MPLayer(3, 6), MPLayer(6, 6)])
readout = nn.Linear(6, 1)
with torch.no_grad():
    for i, p in enumerate(list(layers.parameters()) + list(readout.parameters())):
        p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32).view(p.shape) * 0.7 + i) * 0.4)
h = h0
for layer in layers:
    h = layer(h, edge_index)
summed = torch.zeros(2, 6).scatter_add_(0, batch[:, None].expand(-1, 6), h)
counts = torch.bincount(batch).unsqueeze(1)
meaned = torch.zeros(2, 6).scatter_reduce(0, batch[:, None].expand(-1, 6), h, "mean",
                                           include_self=False)
maxed = torch.full((2, 6), -float("inf")).scatter_reduce(0, batch[:, None].expand(-1, 6), h, "amax")
print("mean pooling agrees:", torch.allclose(summed / counts, meaned, atol=1e-6))
pred = readout(torch.cat([summed, maxed], 0)[:2] + meaned)
target = torch.tensor([[0.5], [-0.25]])
loss = nn.functional.mse_loss(pred, target)
loss.backward()
print("pred", pred.squeeze(1), "loss", round(loss.item(), 6))
print("grad msg", round(layers[0].msg.weight.grad.abs().sum().item(), 5))

# ---- sequence alignment by dynamic programming -------------------------------------------
alphabet = {c: i for i, c in enumerate("ACGT")}
a = [alphabet[c] for c in "GATTACA"]
b = [alphabet[c] for c in "GCATGCA"]
S = (torch.eye(4) * 3 - 1).requires_grad_(True)
gap = torch.tensor(-2.0, requires_grad=True)


def needleman_wunsch(a, b, S, gap, temperature=None):
    n, m = len(a), len(b)
    D = [[None] * (m + 1) for _ in range(n + 1)]
    D[0][0] = torch.zeros(())
    for i in range(1, n + 1):
        D[i][0] = gap * i
    for j in range(1, m + 1):
        D[0][j] = gap * j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            c = torch.stack([D[i - 1][j - 1] + S[a[i - 1], b[j - 1]], D[i - 1][j] + gap,
                             D[i][j - 1] + gap])
            D[i][j] = c.max() if temperature is None else \
                temperature * torch.logsumexp(c / temperature, 0)
    return D[n][m]


hard = needleman_wunsch(a, b, S, gap)
hard.backward()
print("NW score", hard.item(), "S grad", S.grad.diagonal().tolist(), "gap grad", gap.grad.item())
S.grad = None
gap.grad = None
soft = needleman_wunsch(a, b, S, gap, temperature=0.5)
soft.backward()
print("soft NW", round(soft.item(), 5), "S grad", [round(g, 5) for g in S.grad.diagonal().tolist()],
      "gap grad", round(gap.grad.item(), 5))
