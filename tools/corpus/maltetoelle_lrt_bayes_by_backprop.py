"""Bayes by backprop with the local reparameterisation trick on a toy regression, after the
VIModule/LRTLayer pattern of maltetoelle/BayTorch (modules/bbb_layers.py): weight means and
softplus(rho) standard deviations, activations sampled as mean + std * eps, a closed-form Gaussian
KL to the prior (checked against torch.distributions.kl_divergence), Adam on the negative ELBO.

Written for the corpus (not a copy): every random draw comes from numpy, so PyTorch and tapegrad
see the same numbers.  Also exercises a tanh-squashed Normal (TransformedDistribution with
TanhTransform) as the predictive of a bounded target, and F.gaussian_nll_loss.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal, TransformedDistribution, kl_divergence
from torch.distributions.transforms import TanhTransform

rng = np.random.RandomState(7)
torch.set_printoptions(precision=4)


def gauss_kl(mu_q, sig_q, mu_p, sig_p):
    return 0.5 * (2 * torch.log(sig_p / sig_q) - 1 + (sig_q / sig_p).pow(2)
                  + ((mu_p - mu_q) / sig_p).pow(2)).sum()


class LRTLinear(nn.Module):
    def __init__(self, n_in, n_out, prior_sigma=0.5):
        super().__init__()
        self.prior_sigma = prior_sigma
        self.W_mu = nn.Parameter(torch.tensor(rng.normal(0, 0.3, (n_out, n_in)), dtype=torch.float32))
        self.W_rho = nn.Parameter(torch.full((n_out, n_in), -3.0))
        self.b_mu = nn.Parameter(torch.zeros(n_out))
        self.b_rho = nn.Parameter(torch.full((n_out,), -3.0))

    def forward(self, x, eps=None):
        W_sigma, b_sigma = F.softplus(self.W_rho), F.softplus(self.b_rho)
        act_mu = F.linear(x, self.W_mu, self.b_mu)
        act_std = torch.sqrt(1e-16 + F.linear(x ** 2, W_sigma ** 2, b_sigma ** 2))
        self.kl = (gauss_kl(self.W_mu, W_sigma, 0.0, self.prior_sigma)
                   + gauss_kl(self.b_mu, b_sigma, 0.0, self.prior_sigma))
        return act_mu if eps is None else act_mu + act_std * eps


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = LRTLinear(1, 16), LRTLinear(16, 2)

    def forward(self, x, eps1=None, eps2=None):
        out = self.l2(torch.tanh(self.l1(x, eps1)), eps2)
        return out[:, :1], F.softplus(out[:, 1:]) + 1e-3

    def kl(self):
        return self.l1.kl + self.l2.kl


x = torch.tensor(np.linspace(-2, 2, 48)[:, None], dtype=torch.float32)
y = torch.tensor(0.8 * np.sin(2 * x.numpy()) + 0.05 * rng.randn(48, 1), dtype=torch.float32)
net = Net()
opt = torch.optim.Adam(net.parameters(), lr=0.02)
for step in range(60):
    e1 = torch.tensor(rng.randn(48, 16), dtype=torch.float32)
    e2 = torch.tensor(rng.randn(48, 2), dtype=torch.float32)
    mean, var = net(x, e1, e2)
    nll = F.gaussian_nll_loss(mean, y, var, reduction="sum")
    loss = nll + net.kl() / 48
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 15 == 0:
        print(f"step {step:2d} nll {nll.item():9.4f} kl {net.kl().item():9.4f}")

W_sigma = F.softplus(net.l1.W_rho)
closed = gauss_kl(net.l1.W_mu, W_sigma, 0.0, 0.5)
library = kl_divergence(Normal(net.l1.W_mu, W_sigma), Normal(0.0, 0.5)).sum()
print("kl closed form vs library:", round(closed.item(), 3), round(library.item(), 3))
print("W_sigma range:", round(W_sigma.min().item(), 4), round(W_sigma.max().item(), 4))
print("grad of rho is set:", net.l1.W_rho.grad is not None, net.l1.W_rho.grad.shape)

with torch.no_grad():
    draws = []
    for s in range(20):
        e1 = torch.tensor(rng.randn(48, 16), dtype=torch.float32)
        e2 = torch.tensor(rng.randn(48, 2), dtype=torch.float32)
        draws.append(net(x, e1, e2)[0])
    draws = torch.stack(draws)
    print("predictive mean[:4]:", draws.mean(0)[:4, 0])
    print("epistemic std > 0:", bool((draws.std(0) > 0).all()), draws.shape)
    mean, var = net(x)
    print("deterministic mse:", round(F.mse_loss(mean, y).item(), 3))

# a bounded target: a tanh-squashed Gaussian predictive
loc = mean[:5, 0].clone().requires_grad_()
scale = var[:5, 0].sqrt()
squashed = TransformedDistribution(Normal(loc, scale), [TanhTransform()])
targets = torch.tensor([0.1, -0.3, 0.5, 0.7, -0.9])
lp = squashed.log_prob(targets)
print("squashed log_prob:", lp.detach(), type(lp.grad_fn).__name__)
lp.sum().backward()
print("d/dloc:", loc.grad)
print("support:", squashed.support, squashed.batch_shape, squashed.event_shape)
