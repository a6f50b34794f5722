"""Bayes by Backprop for a 1-D regression and a 3-class toy problem, written for this corpus
after akarakulev/bnn's Weight-Uncertainty/BayesBackpropagation.py (a BayesianLinear with mu and
rho parameters, sigma = log(1 + exp(rho)), a scale-mixture Gaussian prior, the posterior's
log-density of the sampled weights, and a KL-weighted ELBO).

Exercises: nn.Parameter(torch.Tensor(o, i).normal_/uniform_) re-filled from a sine pattern,
torch.log1p(torch.exp(rho)) and F.softplus agreeing, reparameterised weights with epsilon from
a fixed table (no RNG), torch.clamp of Gaussian densities, log of a mixture, F.linear with
sampled weights, F.nll_loss(reduction="sum") on log_softmax, Normal(...).log_prob and
kl_divergence(Normal, Normal) as the closed-form KL beside the sampled one, Adam, predictive
mean/std over fixed epsilon draws (torch.stack(...).std(0)), and the layer's state_dict keys.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal, kl_divergence

torch.set_printoptions(precision=5)

PI, SIGMA_1, SIGMA_2 = 0.25, math.exp(0.0), math.exp(-6.0)


def gaussian(x, mu, sigma):
    density = torch.exp(-0.5 * (x - mu) ** 2 / sigma ** 2) / np.sqrt(2.0 * np.pi) / sigma
    return torch.clamp(density, 1e-10, 1.0)


def mixture_log_prior(w):
    return torch.log(PI * gaussian(w, 0.0, SIGMA_1) + (1 - PI) * gaussian(w, 0.0, SIGMA_2))


def eps_table(shape, draw):
    n = int(np.prod(shape))
    k = torch.arange(n, dtype=torch.float32)
    return (1.7 * torch.sin(k * 2.399 + 1.1 * draw) * torch.cos(k * 0.31 + draw)).reshape(shape)


class BayesianLinear(nn.Module):
    def __init__(self, i, o, tag):
        super().__init__()
        self.weight_mu = nn.Parameter(torch.Tensor(o, i).normal_(0.0, 0.1))
        self.weight_rho = nn.Parameter(torch.Tensor(o, i).uniform_(-3.0, -3.0))
        self.bias_mu = nn.Parameter(torch.Tensor(o).normal_(0.0, 0.1))
        self.bias_rho = nn.Parameter(torch.Tensor(o).uniform_(-3.0, -3.0))
        with torch.no_grad():
            self.weight_mu.copy_(0.5 * torch.sin(torch.arange(o * i, dtype=torch.float32) * 0.77 + tag).reshape(o, i))
            self.bias_mu.copy_(0.1 * torch.cos(torch.arange(o, dtype=torch.float32) + tag))
        self.log_prior = 0.0
        self.log_post = 0.0

    def sigmas(self):
        return torch.log1p(torch.exp(self.weight_rho)), torch.log1p(torch.exp(self.bias_rho))

    def forward(self, x, draw=None):
        if draw is None:
            return F.linear(x, self.weight_mu, self.bias_mu)
        ws, bs = self.sigmas()
        w = self.weight_mu + ws * eps_table(self.weight_mu.shape, draw)
        b = self.bias_mu + bs * eps_table(self.bias_mu.shape, draw + 0.5)
        self.log_prior = mixture_log_prior(w).sum() + mixture_log_prior(b).sum()
        self.log_post = (torch.log(gaussian(w, self.weight_mu, ws)).sum()
                         + torch.log(gaussian(b, self.bias_mu, bs)).sum())
        return F.linear(x, w, b)

    def closed_form_kl(self):
        ws, bs = self.sigmas()
        prior = Normal(0.0, 1.0)
        return (kl_divergence(Normal(self.weight_mu, ws), prior).sum()
                + kl_divergence(Normal(self.bias_mu, bs), prior).sum())


class BNN(nn.Module):
    def __init__(self, sizes, classes):
        super().__init__()
        self.layers = nn.ModuleList(BayesianLinear(a, b, k) for k, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])))
        self.classes = classes

    def forward(self, x, draw=None):
        for k, layer in enumerate(self.layers):
            x = layer(x, draw)
            if k < len(self.layers) - 1:
                x = F.relu(x)
        return F.log_softmax(x, dim=1) if self.classes > 1 else x

    def kl(self):
        return sum(l.log_post - l.log_prior for l in self.layers)

    def elbo_loss(self, x, y, samples, train_size, step):
        nll, kl = 0.0, 0.0
        for s in range(samples):
            out = self(x, draw=step * samples + s)
            kl = kl + self.kl()
            if self.classes > 1:
                nll = nll + F.nll_loss(out, y, reduction="sum")
            else:
                nll = nll + (0.5 * (y - out) ** 2).sum()
        return (kl / samples + nll / samples * train_size / y.size(0)) * 0.1


x = torch.linspace(-1, 1, 24).reshape(-1, 1)
tasks = {"regression": (torch.sin(3 * x) + 0.1 * torch.cos(11 * x), 1),
         "classes": ((torch.arange(24) * 7) % 3, 3)}
for name, (y, classes) in tasks.items():
    net = BNN([1, 16, 16, classes], classes)
    ws, _ = net.layers[0].sigmas()
    print(name, "sigma", ws[0, 0].item(), torch.allclose(ws, F.softplus(net.layers[0].weight_rho)))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    for step in range(8):
        opt.zero_grad()
        loss = net.elbo_loss(x, y, samples=2, train_size=48, step=step)
        loss.backward()
        opt.step()
        if step % 2 == 0:
            print(f"{name} {step} loss={loss.item():.4f} log_prior={net.layers[0].log_prior.item():.4f} "
                  f"closed_kl={sum(l.closed_form_kl() for l in net.layers).item():.4f}")
    with torch.no_grad():
        draws = torch.stack([net(x, draw=100 + d) for d in range(6)])
        mean, std = draws.mean(0), draws.std(0)
        point = net(x)
    print(name, "predictive", mean.shape, mean[::8].flatten(), std[::8].flatten())
    print(name, "point", point[::8].flatten())
    if classes > 1:
        print(name, "accuracy", (point.argmax(1) == y).float().mean().item())
print(sorted(net.layers[0].state_dict().keys()))
print("grad of rho", net.layers[0].weight_rho.grad.shape, net.layers[0].weight_rho.grad.abs().sum().item() > 0)
