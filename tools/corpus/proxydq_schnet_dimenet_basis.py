"""SchNet / DimeNet radial bases: Gaussian smearing, Bessel basis with the polynomial envelope
(frequencies set by torch.arange(..., out=param) under no_grad), cosine cutoff, shifted softplus,
cdist radius graph, continuous-filter messages and forces by autograd.grad(create_graph=True)."""
import math
import torch
import torch.nn as nn


def fixed_init_(module, scale=0.3):
    """Deterministic parameters (a fixed sine pattern), so the printout does not depend on the
    random stream."""
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_((torch.sin(torch.arange(p.numel(), dtype=p.dtype) * 0.7 + i) * scale).view_as(p))


def fixed_tensor(*shape, seed=0):
    n = 1
    for s in shape:
        n *= s
    return torch.sin(torch.arange(n, dtype=torch.float32) * 1.3 + seed).view(*shape) * 1.5

torch.manual_seed(2)

class GaussianSmearing(nn.Module):
    def __init__(self, start=0.0, stop=5.0, num_gaussians=50):
        super().__init__()
        offset = torch.linspace(start, stop, num_gaussians)
        self.coeff = -0.5 / (offset[1] - offset[0]).item() ** 2
        self.register_buffer('offset', offset)
    def forward(self, dist):
        dist = dist.view(-1, 1) - self.offset.view(1, -1)
        return torch.exp(self.coeff * torch.pow(dist, 2))

class Envelope(nn.Module):
    def __init__(self, exponent):
        super().__init__()
        self.p = exponent + 1
        self.a = -(self.p + 1) * (self.p + 2) / 2
        self.b = self.p * (self.p + 2)
        self.c = -self.p * (self.p + 1) / 2
    def forward(self, x):
        p, a, b, c = self.p, self.a, self.b, self.c
        x_pow_p0 = x.pow(p - 1)
        x_pow_p1 = x_pow_p0 * x
        x_pow_p2 = x_pow_p1 * x
        return (1. / x + a * x_pow_p0 + b * x_pow_p1 + c * x_pow_p2) * (x < 1.0).to(x.dtype)

class BesselBasisLayer(nn.Module):
    def __init__(self, num_radial, cutoff=5.0, envelope_exponent=5):
        super().__init__()
        self.cutoff = cutoff
        self.envelope = Envelope(envelope_exponent)
        self.freq = nn.Parameter(torch.Tensor(num_radial))
        with torch.no_grad():
            torch.arange(1, self.freq.numel() + 1, out=self.freq).mul_(math.pi)
    def forward(self, dist):
        dist = dist.unsqueeze(-1) / self.cutoff
        return self.envelope(dist) * (self.freq * dist).sin()

def cosine_cutoff(d, rc):
    return 0.5 * (torch.cos(d * math.pi / rc) + 1.0) * (d < rc).float()

class ShiftedSoftplus(nn.Module):
    def __init__(self):
        super().__init__()
        self.shift = torch.log(torch.tensor(2.0)).item()
    def forward(self, x):
        return nn.functional.softplus(x) - self.shift

pos = fixed_tensor(6, 3) + torch.tensor([[0.5, -0.3, 0.1]]) * torch.arange(6).view(-1, 1)
pos.requires_grad_(True)
dist = torch.cdist(pos, pos)
mask = (dist < 4.0) & ~torch.eye(6, dtype=torch.bool)
row, col = mask.nonzero(as_tuple=True)
print("edges:", row.numel(), row.dtype)
d = (pos[row] - pos[col]).norm(dim=-1)
rbf = GaussianSmearing(0.0, 4.0, 16)(d)
print(rbf.shape, rbf.dtype, round(rbf.sum().item(), 3))
bessel = BesselBasisLayer(6, cutoff=4.0)
print(bessel.freq)
b = bessel(d)
print(b.shape, round(b.abs().sum().item(), 3))
fc = cosine_cutoff(d, 4.0)
print(fc.min().item() >= 0, fc.max().item() <= 1)
ssp = ShiftedSoftplus()
print(ssp(torch.zeros(3)))
filt = nn.Sequential(nn.Linear(16, 32), ShiftedSoftplus(), nn.Linear(32, 32))
fixed_init_(filt)
W = filt(rbf) * fc.unsqueeze(-1)
hfeat = fixed_tensor(6, 32)
msg = hfeat[col] * W
agg = torch.zeros(6, 32).index_add(0, row, msg)
energy = agg.sum()
forces = -torch.autograd.grad(energy, pos, create_graph=True)[0]
print("forces:", forces.shape, round(forces.sum().item(), 4))
print("net force small:", forces.sum(0).abs().max().item() < 1e-3)
loss = forces.pow(2).sum()
loss.backward()
print(bessel.freq.grad is None, filt[0].weight.grad.shape)
print(torch.sinc(torch.tensor([0.0, 0.5, 1.0])))
