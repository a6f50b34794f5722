"""Stochastic-gradient Langevin dynamics for Bayesian linear regression, then a check of the samples
with an MMD two-sample statistic and an entropic optimal-transport (Sinkhorn) distance, after the
sgld optimizer of AParayil/AParayil-Distribued-Learning-via-Bayesian-Inferencing
(optimizers/SGLD.py: the old scalar-first p.data.add_(-lr, ...) and d_p.add_(wd, p.data) forms).

Written for the corpus (not a copy): the optimizer subclasses torch.optim.Optimizer with PyTorch's
private _use_grad_for_differentiable decorator (as copies of torch.optim's steps do), its Langevin
noise comes from a numpy stream handed in as tensors, MMD uses torch.cdist with a median-heuristic
bandwidth, Sinkhorn runs in the log domain with torch.logsumexp.
"""
import math
import warnings

import numpy as np
import torch
from torch.optim.optimizer import Optimizer, _use_grad_for_differentiable, required

warnings.simplefilter("ignore")         # (the scalar-first overloads' deprecation)
torch.set_printoptions(precision=4)
rng = np.random.RandomState(11)


class SGLD(Optimizer):
    def __init__(self, params, lr=required, prior_sigma=1.0, num_batches=1, noise_source=None):
        defaults = dict(lr=lr, weight_decay=1.0 / prior_sigma ** 2, batch_weight=num_batches,
                        differentiable=False)
        super().__init__(params, defaults)
        self.noise_source = noise_source

    @_use_grad_for_differentiable
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d_p = group["batch_weight"] * p.grad.data
                d_p.add_(group["weight_decay"], p.data)
                noise = self.noise_source(p.shape) / math.sqrt(group["lr"])
                p.data.add_(-group["lr"], 0.5 * d_p + noise)
        return None


noise = lambda shape: torch.tensor(rng.randn(*shape), dtype=torch.float32)
X = torch.tensor(rng.randn(96, 2), dtype=torch.float32)
w_true = torch.tensor([[1.5], [-0.7]])
y = X @ w_true + 0.3 * torch.tensor(rng.randn(96, 1), dtype=torch.float32)
model = torch.nn.Linear(2, 1, bias=False)
with torch.no_grad():
    model.weight.zero_()
opt = SGLD(model.parameters(), lr=2e-3, prior_sigma=2.0, num_batches=4, noise_source=noise)
print(type(opt).__name__, opt.defaults["weight_decay"], sorted(opt.defaults))
samples = []
for epoch in range(80):
    for b in range(4):
        xb, yb = X[b::4], y[b::4]
        opt.zero_grad()
        loss = 0.5 * ((model(xb) - yb) ** 2).sum() / 0.09
        loss.backward()
        opt.step()
    if epoch >= 30:
        samples.append(model.weight.detach().clone().view(-1))
    if epoch % 20 == 0:
        print(f"epoch {epoch:2d} loss {loss.item():9.3f} w {model.weight.data.view(-1)}")
S = torch.stack(samples)
print("posterior mean", S.mean(0), "posterior std", S.std(0))
print("grad mode after step:", torch.is_grad_enabled(), model.weight.requires_grad)

# exact Gaussian posterior for comparison
prec = X.T @ X / 0.09 + torch.eye(2) / 4.0
cov = torch.linalg.inv(prec)
mean = cov @ X.T @ y / 0.09
print("exact mean", mean.view(-1), "exact std", cov.diagonal().sqrt())
ref = mean.view(1, -1) + torch.tensor(rng.randn(50, 2), dtype=torch.float32) @ torch.linalg.cholesky(cov).T


def mmd2(a, b):
    pooled = torch.cat([a, b])
    d2 = torch.cdist(pooled, pooled) ** 2
    h = d2.flatten().median()
    k = torch.exp(-d2 / h)
    n = a.shape[0]
    return k[:n, :n].mean() + k[n:, n:].mean() - 2 * k[:n, n:].mean(), h


stat, h = mmd2(S, ref)
print("mmd^2", round(stat.item(), 4), "bandwidth", round(h.item(), 5))
far = ref + torch.tensor([1.0, 0.0])
print("mmd^2 against a shifted sample", round(mmd2(S, far)[0].item(), 4))


def sinkhorn(a, b, eps=0.05, iters=200):
    C = torch.cdist(a, b) ** 2
    log_mu = torch.full((a.shape[0],), -math.log(a.shape[0]))
    log_nu = torch.full((b.shape[0],), -math.log(b.shape[0]))
    f, g = torch.zeros_like(log_mu), torch.zeros_like(log_nu)
    for _ in range(iters):
        f = -eps * torch.logsumexp((g[None, :] - C) / eps + log_nu[None, :], dim=1)
        g = -eps * torch.logsumexp((f[:, None] - C) / eps + log_mu[:, None], dim=0)
    P = torch.exp((f[:, None] + g[None, :] - C) / eps + log_mu[:, None] + log_nu[None, :])
    return (P * C).sum(), P


cost, P = sinkhorn(S[:40], ref[:40])
print("sinkhorn cost", round(cost.item(), 5), "marginals", round(P.sum(1)[0].item() * 40, 4), round(P.sum(0)[0].item() * 40, 4))
src = S[:40].clone().requires_grad_()
c2, _ = sinkhorn(src, far[:40], iters=50)
c2.backward()
print("transport gradient norm", round(src.grad.norm().item(), 4), src.grad.shape)
