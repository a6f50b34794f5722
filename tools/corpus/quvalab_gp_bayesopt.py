"""Bayesian optimisation with a hand-written Gaussian process: an RBF kernel from torch.cdist,
the exact marginal likelihood through MultivariateNormal(covariance_matrix=K).log_prob whose
lengthscale and noise are fitted with Adam (log-parametrised), a jitter-retry loop around the
MultivariateNormal constructor (validate_args=False: a kernel that is not positive-definite
raises torch.linalg.LinAlgError at construction), the posterior through cholesky and
cholesky_solve / solve_triangular, and expected improvement from
torch.distributions.Normal(0, 1).cdf / log_prob, maximised over a grid (argmax) and refined by
gradient ascent on the candidate with clamp_ under no_grad.

Inspired by QUVA-Lab/COMBO (GraphDecompositionBO/acquisition/acquisition_functions.py: the
expected_improvement formula with Normal.cdf and log_prob().exp()); written anew.  The initial
design comes from numpy, so the output does not depend on torch's random stream.
"""
import math

import numpy as np
import torch
from torch.distributions import MultivariateNormal, Normal

torch.set_default_dtype(torch.float64)
rng = np.random.RandomState(3)


def objective(x):
    # Branin-like 2-d test function on [0, 1]^2 (minimised)
    a, b = 15 * x[..., 0] - 5, 15 * x[..., 1]
    return ((b - 5.1 / (4 * math.pi ** 2) * a ** 2 + 5 / math.pi * a - 6) ** 2
            + 10 * (1 - 1 / (8 * math.pi)) * torch.cos(a) + 10) / 50


def kernel(a, b, log_ls, log_sf):
    return torch.exp(2 * log_sf) * torch.exp(-0.5 * torch.cdist(a, b) ** 2 / torch.exp(2 * log_ls))


def fit_gp(X, y, steps=30):
    log_ls = torch.tensor(math.log(0.3), requires_grad=True)
    log_sf = torch.tensor(0.0, requires_grad=True)
    log_sn = torch.tensor(math.log(0.1), requires_grad=True)
    opt = torch.optim.Adam([log_ls, log_sf, log_sn], lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        K = kernel(X, X, log_ls, log_sf) + torch.exp(2 * log_sn) * torch.eye(len(X))
        nll = -MultivariateNormal(torch.zeros(len(X)), covariance_matrix=K).log_prob(y) / len(X)
        nll.backward()
        opt.step()
    return log_ls.detach(), log_sf.detach(), log_sn.detach(), nll.item()


def posterior(Xs, X, y, hyp):
    log_ls, log_sf, log_sn = hyp
    K = kernel(X, X, log_ls, log_sf) + torch.exp(2 * log_sn) * torch.eye(len(X))
    L = torch.linalg.cholesky(K)
    alpha = torch.cholesky_solve(y.unsqueeze(-1), L)
    Ks = kernel(Xs, X, log_ls, log_sf)
    mu = (Ks @ alpha).squeeze(-1)
    v = torch.linalg.solve_triangular(L, Ks.T, upper=False)
    var = (torch.exp(2 * log_sf) - (v ** 2).sum(0)).clamp_min(1e-12)
    return mu, var


def expected_improvement(mu, var, best):
    std = var.sqrt()
    z = (best - mu) / std
    n = Normal(torch.zeros_like(z), torch.ones_like(z))
    return std * (z * n.cdf(z) + n.log_prob(z).exp())


# the jitter loop: a duplicated design point makes the noiseless kernel singular
X_dup = torch.tensor([[0.2, 0.3], [0.2, 0.3], [0.7, 0.1]])
K_dup = kernel(X_dup, X_dup, torch.tensor(math.log(0.3)), torch.tensor(0.0))
for jitter in [0.0, 1e-10, 1e-6, 1e-3]:
    try:
        mvn = MultivariateNormal(torch.zeros(3), covariance_matrix=K_dup - 1e-9 * torch.eye(3) + jitter * torch.eye(3),
                                 validate_args=False)
        break
    except torch.linalg.LinAlgError as err:
        print(f"jitter {jitter:g}: LinAlgError ({'positive-definite' in str(err)})")
print(f"jitter {jitter:g}: factored, log_prob {mvn.log_prob(torch.tensor([0.1, 0.1, -0.2])).item():.4f}")

X = torch.tensor(rng.uniform(size=(6, 2)))
y = objective(X)
g = torch.linspace(0, 1, 21)
grid = torch.stack(torch.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
for it in range(5):
    hyp = fit_gp(X, (y - y.mean()) / y.std())
    ys = (y - y.mean()) / y.std()
    mu, var = posterior(grid, X, ys, hyp[:3])
    ei = expected_improvement(mu, var, ys.min())
    k = int(torch.argmax(ei))
    # refine the best grid point by gradient ascent on EI
    cand = grid[k].clone().unsqueeze(0).requires_grad_(True)
    copt = torch.optim.Adam([cand], lr=0.02)
    for _ in range(10):
        copt.zero_grad()
        m, v = posterior(cand, X, ys, hyp[:3])
        (-expected_improvement(m, v, ys.min())).sum().backward()
        copt.step()
        with torch.no_grad():
            cand.clamp_(0, 1)
    x_new = cand.detach()
    y_new = objective(x_new)
    print(f"iter {it}: ls {hyp[0].exp().item():.4f} sf {hyp[1].exp().item():.4f} sn {hyp[2].exp().item():.4f} "
          f"nll {hyp[3]:.4f} ei_max {ei.max().item():.5f} grid_k {k} x_new {x_new.numpy().round(4)} "
          f"y_new {y_new.item():.5f}")
    X = torch.cat([X, x_new])
    y = torch.cat([y, y_new])
print("best found", y.min().item().__round__(5), "at", X[y.argmin()].numpy().round(4), "evaluations", len(y))
