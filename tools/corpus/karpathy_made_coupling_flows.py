"""Density estimation with masked autoregressive and coupling flows, in the style of
karpathy/pytorch-normalizing-flows (nflib: MADE, RealNVP/NICE half flows, MAF, a Glow-style
LU-parametrized 1x1 mixing, a logistic prior), written afresh.

Exercises: MADE masks from numpy orderings copied into a registered buffer (copy_ of a uint8
array), F.linear with a masked weight, strided half-splits x[:, ::2] / x[:, 1::2] written back
into a zeros tensor by slice assignment, Tensor.flip, split, torch.lu / lu_unpack (with its
deprecation warning), tril/triu/diag assembly, slogdet-free log-dets as sums of logs,
TransformedDistribution(Uniform, SigmoidTransform().inv) and MultivariateNormal priors, an ActNorm
data-dependent init through .data, Adam with weight decay, and exact inversion of each flow.
Weights are set deterministically from a closed form, so no random stream is printed.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import (MultivariateNormal, SigmoidTransform, TransformedDistribution,
                                 Uniform)

torch.set_printoptions(precision=4)


def fill_deterministic(module, scale=0.2):
    """Every parameter gets scale * sin(1 + 0.37 i) over its flat index i."""
    with torch.no_grad():
        for j, p in enumerate(module.parameters()):
            i = torch.arange(p.numel(), dtype=torch.float32)
            p.copy_((scale * torch.sin(1.0 + 0.37 * i + 0.11 * j)).view_as(p))


class MaskedDense(nn.Linear):
    def __init__(self, n_in, n_out):
        super().__init__(n_in, n_out)
        self.register_buffer("mask", torch.ones(n_out, n_in))

    def set_mask(self, allowed):
        self.mask.copy_(torch.from_numpy(allowed.astype(np.uint8).T))

    def forward(self, x):
        return F.linear(x, self.mask * self.weight, self.bias)


class Made(nn.Module):
    """Outputs (shift, log-scale) per input dim, each depending only on earlier dims."""

    def __init__(self, dim, hidden):
        super().__init__()
        sizes = [dim] + hidden + [2 * dim]
        layers = []
        for a, b in zip(sizes, sizes[1:]):
            layers += [MaskedDense(a, b), nn.ReLU()]
        self.net = nn.Sequential(*layers[:-1])
        degrees = [np.arange(dim)]
        for h in hidden:
            degrees.append(np.arange(h) % max(dim - 1, 1))
        masks = [degrees[i][:, None] <= degrees[i + 1][None, :] for i in range(len(hidden))]
        last = degrees[-1][:, None] < degrees[0][None, :]
        masks.append(np.concatenate([last, last], axis=1))
        dense = [m for m in self.net if isinstance(m, MaskedDense)]
        for layer, m in zip(dense, masks):
            layer.set_mask(m)

    def forward(self, x):
        return self.net(x)


class SmallMLP(nn.Module):
    def __init__(self, n_in, n_out, hidden=16):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_in, hidden), nn.LeakyReLU(0.2),
                                  nn.Linear(hidden, hidden), nn.LeakyReLU(0.2),
                                  nn.Linear(hidden, n_out))

    def forward(self, x):
        return self.body(x)


class HalfCoupling(nn.Module):
    def __init__(self, dim, parity, scale=True):
        super().__init__()
        self.dim, self.parity, self.use_scale = dim, parity, scale
        self.s = SmallMLP(dim // 2, dim // 2)
        self.t = SmallMLP(dim // 2, dim // 2)

    def _halves(self, v):
        a, b = v[:, ::2], v[:, 1::2]
        return (b, a) if self.parity else (a, b)

    def _join(self, a, b, n):
        if self.parity:
            a, b = b, a
        out = torch.zeros((n, self.dim))
        out[:, ::2] = a
        out[:, 1::2] = b
        return out

    def forward(self, x):
        keep, change = self._halves(x)
        s = self.s(keep) if self.use_scale else keep.new_zeros(keep.shape)
        z = change * torch.exp(s) + self.t(keep)
        return self._join(keep, z, x.shape[0]), s.sum(1)

    def inverse(self, z):
        keep, change = self._halves(z)
        s = self.s(keep) if self.use_scale else keep.new_zeros(keep.shape)
        x = (change - self.t(keep)) * torch.exp(-s)
        return self._join(keep, x, z.shape[0]), -s.sum(1)


class Autoregressive(nn.Module):
    def __init__(self, dim, flip):
        super().__init__()
        self.dim, self.flip = dim, flip
        self.made = Made(dim, [12, 12])

    def forward(self, x):
        shift, log_s = self.made(x).split(self.dim, dim=1)
        z = x * torch.exp(log_s) + shift
        return (z.flip(dims=(1,)) if self.flip else z), log_s.sum(1)

    def inverse(self, z):
        z = z.flip(dims=(1,)) if self.flip else z
        x = torch.zeros_like(z)
        log_det = torch.zeros(z.shape[0])
        for i in range(self.dim):
            shift, log_s = self.made(x.clone()).split(self.dim, dim=1)
            x[:, i] = (z[:, i] - shift[:, i]) * torch.exp(-log_s[:, i])
            log_det -= log_s[:, i]
        return x, log_det


class LUMix(nn.Module):
    def __init__(self, angle):
        super().__init__()
        c, s = math.cos(angle), math.sin(angle)
        Q = torch.tensor([[c, -s], [s, c]])
        P, L, U = torch.lu_unpack(*Q.lu())
        self.register_buffer("P", P)
        self.L = nn.Parameter(L)
        self.S = nn.Parameter(U.diag())
        self.U = nn.Parameter(torch.triu(U, diagonal=1))

    def weight(self):
        L = torch.tril(self.L, diagonal=-1) + torch.eye(2)
        return self.P @ L @ (torch.triu(self.U, diagonal=1) + torch.diag(self.S))

    def forward(self, x):
        return x @ self.weight(), torch.log(self.S.abs()).sum().expand(x.shape[0])

    def inverse(self, z):
        return z @ torch.inverse(self.weight()), -torch.log(self.S.abs()).sum().expand(z.shape[0])


class ActNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.log_s = nn.Parameter(torch.zeros(1, dim))
        self.b = nn.Parameter(torch.zeros(1, dim))
        self.ready = False

    def forward(self, x):
        if not self.ready:
            self.log_s.data = -torch.log(x.std(dim=0, keepdim=True)).detach()
            self.b.data = -(x * torch.exp(self.log_s)).mean(dim=0, keepdim=True).detach()
            self.ready = True
        return x * torch.exp(self.log_s) + self.b, self.log_s.sum(1).expand(x.shape[0])

    def inverse(self, z):
        return (z - self.b) * torch.exp(-self.log_s), -self.log_s.sum(1).expand(z.shape[0])


class Flow(nn.Module):
    def __init__(self, prior, layers):
        super().__init__()
        self.prior = prior
        self.layers = nn.ModuleList(layers)

    def forward(self, x):
        total = torch.zeros(x.shape[0])
        for layer in self.layers:
            x, ld = layer(x)
            total += ld
        return x, self.prior.log_prob(x).view(x.shape[0], -1).sum(1), total

    def inverse(self, z):
        for layer in reversed(self.layers):
            z, _ = layer.inverse(z)
        return z


t = torch.linspace(0, 2 * math.pi, 96)
data = torch.stack([torch.cos(t) * (1.5 + 0.2 * torch.sin(5 * t)),
                    torch.sin(t) * (0.8 + 0.1 * torch.cos(3 * t))], dim=1)
logistic = TransformedDistribution(Uniform(torch.zeros(2), torch.ones(2)), SigmoidTransform().inv)
gauss = MultivariateNormal(torch.zeros(2), torch.eye(2))
print("logistic prior", logistic.log_prob(data[:3]))
print("gauss prior", gauss.log_prob(data[:3]))

builders = {
    "nice": (logistic, lambda: [HalfCoupling(2, i % 2, scale=False) for i in range(3)]),
    "realnvp": (gauss, lambda: [HalfCoupling(2, i % 2) for i in range(4)]),
    "maf": (gauss, lambda: [Autoregressive(2, i % 2 == 1) for i in range(3)]),
    "glow": (gauss, lambda: [m for i in range(2)
                             for m in (ActNorm(2), LUMix(0.3 + i), HalfCoupling(2, i % 2))]),
}
made = Made(3, [6])
print("made masks", [tuple(m.mask.shape) for m in made.net if isinstance(m, MaskedDense)],
      made.net[-1].mask.int().tolist())

for name, (prior, build) in builders.items():
    flow = Flow(prior, build())
    fill_deterministic(flow)
    opt = torch.optim.Adam(flow.parameters(), lr=2e-3, weight_decay=1e-5)
    for step in range(6):
        z, prior_lp, log_det = flow(data)
        loss = -(prior_lp + log_det).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 2 == 0:
            print(name, step, f"{loss.item():.4f}", tuple(z.shape))
    with torch.no_grad():
        z, _, ld = flow(data[:5])
        back = flow.inverse(z)
    print(name, "inverse error < 1e-4:", bool((back - data[:5]).abs().max() < 1e-4),
          "log-det", ld)
