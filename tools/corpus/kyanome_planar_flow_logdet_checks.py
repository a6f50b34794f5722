"""Planar normalizing flows fitted to an unnormalised 2-D energy (a ring with two lobes), written
for this corpus after kyanome/normalizing-flows (PlanarTransform with torch.mm, the u_hat
reparameterisation written into u.data, an NfLoss with a MultivariateNormal base).

Exercises: nn.Parameter rows, torch.mm with .T, the invertibility condition w.u >= -1 enforced
in forward by rewriting u.data, analytic log|det J| = log|1 + u.psi|, an accumulated log-det
starting from the Python int 0, MultivariateNormal.log_prob, torch.norm(z, 2, dim=1), Adam,
the analytic log-det checked against torch.autograd.functional.jacobian + torch.linalg.slogdet
per sample (and torch.func.jacrev under torch.func.vmap), a meshgrid(indexing="ij") density
grid, and no_grad sampling through the fitted flow.  Base points come from a fixed Halton-like
sequence mapped through Normal.icdf, so the run draws no random numbers.
"""
import math

import torch
import torch.nn as nn
from torch.distributions import MultivariateNormal, Normal

torch.set_printoptions(precision=5)


class Planar(nn.Module):
    def __init__(self, k, dim=2):
        super().__init__()
        base = torch.arange(dim, dtype=torch.float32)
        self.w = nn.Parameter((0.4 * torch.cos(base * 1.3 + k)).reshape(1, dim))
        self.u = nn.Parameter((0.5 * torch.sin(base * 0.7 + 2 * k)).reshape(1, dim))
        self.b = nn.Parameter(torch.tensor([0.1 * (k - 2)]))
        if k == 4:      # starts non-invertible (w.u < -1): the first forward rewrites u
            self.u = nn.Parameter(-20.0 * self.w.detach().clone())
        self.rewrites = 0

    def constrain(self):
        # keep the map invertible: w.u >= -1, by moving u along w
        wu = torch.mm(self.u, self.w.T)
        if wu < -1:
            m = -1 + torch.log1p(torch.exp(wu))
            self.u.data = self.u + (m - wu) * self.w / torch.norm(self.w, p=2, dim=1) ** 2
            self.rewrites += 1

    def forward(self, z):
        self.constrain()
        a = torch.mm(z, self.w.T) + self.b
        out = z + self.u * torch.tanh(a)
        psi = (1 - torch.tanh(a) ** 2) * self.w
        logdet = torch.log(torch.abs(1 + torch.mm(psi, self.u.T)) + 1e-6).squeeze(1)
        return out, logdet


class Flow(nn.Module):
    def __init__(self, length):
        super().__init__()
        self.layers = nn.ModuleList(Planar(k) for k in range(length))

    def forward(self, z):
        total = 0
        for layer in self.layers:
            z, ld = layer(z)
            total += ld
        return z, total


def energy(z):
    ring = 0.5 * ((torch.norm(z, 2, dim=1) - 2.0) / 0.4) ** 2
    lobes = torch.log(torch.exp(-0.5 * ((z[:, 0] - 2.0) / 0.6) ** 2) + torch.exp(-0.5 * ((z[:, 0] + 2.0) / 0.6) ** 2))
    return ring - lobes


def base_points(n, offset):
    k = torch.arange(1, n + 1, dtype=torch.float64) + offset
    u1 = torch.remainder(k * 0.6180339887498949, 1.0)
    u2 = torch.remainder(k * 0.7548776662466927, 1.0)
    std = Normal(torch.tensor(0.0, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64))
    return torch.stack([std.icdf(u1), std.icdf(u2)], 1).float()


flow = Flow(6)
base = MultivariateNormal(torch.zeros(2), torch.eye(2))
print(flow)
print("parameters", sum(p.numel() for p in flow.parameters()))

opt = torch.optim.Adam(flow.parameters(), lr=2e-2)
for step in range(12):
    z0 = base_points(64, 64 * step)
    zk, logdet = flow(z0)
    loss = (base.log_prob(z0) + energy(zk) - logdet).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 3 == 0:
        print(f"step {step:2d} kl={loss.item():.5f} mean logdet={logdet.mean().item():.5f}")
print("u rewrites", [layer.rewrites for layer in flow.layers])
print("w.u", torch.cat([torch.mm(l.u, l.w.T) for l in flow.layers]).flatten().detach())

# the analytic log-determinant against autograd's Jacobian, sample by sample
z0 = base_points(5, 1000)
zk, logdet = flow(z0)
exact = []
for i in range(z0.shape[0]):
    J = torch.autograd.functional.jacobian(lambda p: flow(p.unsqueeze(0))[0].squeeze(0), z0[i])
    sign, logabs = torch.linalg.slogdet(J)
    exact.append(logabs)
exact = torch.stack(exact)
print("analytic", logdet.detach())
print("slogdet ", exact)
print("agree", torch.allclose(logdet.detach(), exact, atol=1e-4))

jac = torch.func.vmap(torch.func.jacrev(lambda p: flow(p.unsqueeze(0))[0].squeeze(0)))(z0)
print("vmap jacrev", jac.shape, torch.allclose(torch.linalg.det(jac).abs().log(), exact, atol=1e-4))

# density of the flow on a small grid, and samples pushed through it
xs = torch.linspace(-3, 3, 4)
gx, gy = torch.meshgrid(xs, xs, indexing="ij")
grid = torch.stack([gx.flatten(), gy.flatten()], 1)
with torch.no_grad():
    zg, ldg = flow(grid)
    log_q = base.log_prob(grid) - ldg
print("log q on grid", log_q.reshape(4, 4))
print("energy on grid", energy(grid).reshape(4, 4))
with torch.no_grad():
    samples, _ = flow(base_points(200, 5000))
print("sample mean", samples.mean(0), "radius", samples.norm(dim=1).mean())
print("requires_grad after no_grad", samples.requires_grad, flow.layers[0].u.requires_grad)
