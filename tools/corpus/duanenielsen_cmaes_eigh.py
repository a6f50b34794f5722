"""Hand-written (mu/mu_w, lambda)-CMA-ES on vectorised benchmark functions (Rastrigin, Ackley,
Rosenbrock): log-weights, evolution paths, the rank-one and rank-mu covariance updates, the
step-size control through ||p_sigma||, C^(-1/2) from torch.linalg.eigh, sampling as
mean + sigma * z @ C^(1/2) with C^(1/2) = B diag(D) B^T, selection with argsort, a Cholesky sampler (randn @ L.T) as
a cross-check, and a covariance guard: a NaN covariance makes torch.linalg.cholesky raise
LinAlgError (cholesky_ex reports the failing minor) and the run restarts from the identity.

Inspired by DuaneNielsen/cma-es (cma_es.py: a top-25% Gaussian update on Rastrigin) and
hypercube-ai-dev/simple_ne (simple_es/cma_es_torch.py: ask/tell with cholesky(cov).T);
written anew.  Every random draw comes from numpy, so the output does not depend on torch's
random stream.
"""
import math

import numpy as np
import torch

rng = np.random.RandomState(7)


def randn(*shape):
    return torch.tensor(rng.standard_normal(shape), dtype=torch.float64)


def rastrigin(x):
    return 10 * x.shape[-1] + (x ** 2 - 10 * torch.cos(2 * math.pi * x)).sum(-1)


def ackley(x):
    n = x.shape[-1]
    return (-20 * torch.exp(-0.2 * torch.sqrt((x ** 2).sum(-1) / n))
            - torch.exp(torch.cos(2 * math.pi * x).sum(-1) / n) + 20 + math.e)


def rosenbrock(x):
    return (100 * (x[..., 1:] - x[..., :-1] ** 2) ** 2 + (1 - x[..., :-1]) ** 2).sum(-1)


class CMAES:
    def __init__(self, mean, sigma):
        self.n = n = mean.numel()
        self.mean, self.sigma = mean.clone(), sigma
        self.lam = 4 + int(3 * math.log(n))
        self.mu = self.lam // 2
        w = math.log(self.mu + 0.5) - torch.log(torch.arange(1, self.mu + 1, dtype=torch.float64))
        self.w = w / w.sum()
        self.mueff = float(self.w.sum() ** 2 / (self.w ** 2).sum())
        self.cc = (4 + self.mueff / n) / (n + 4 + 2 * self.mueff / n)
        self.cs = (self.mueff + 2) / (n + self.mueff + 5)
        self.c1 = 2 / ((n + 1.3) ** 2 + self.mueff)
        self.cmu = min(1 - self.c1, 2 * (self.mueff - 2 + 1 / self.mueff) / ((n + 2) ** 2 + self.mueff))
        self.damps = 1 + 2 * max(0.0, math.sqrt((self.mueff - 1) / (n + 1)) - 1) + self.cs
        self.chiN = math.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n ** 2))
        self.reset_covariance()
        self.gen = 0

    def reset_covariance(self):
        self.pc = torch.zeros(self.n, dtype=torch.float64)
        self.ps = torch.zeros(self.n, dtype=torch.float64)
        self.C = torch.eye(self.n, dtype=torch.float64)
        self.B = torch.eye(self.n, dtype=torch.float64)
        self.D = torch.ones(self.n, dtype=torch.float64)

    def ask(self):
        z = randn(self.lam, self.n)
        # C^(1/2) = B diag(D) B^T: the symmetric root does not depend on the eigenvectors'
        # signs, which LAPACK builds choose differently (B diag(D) alone would)
        y = z @ (self.B @ torch.diag(self.D) @ self.B.T)
        return self.mean + self.sigma * y, y

    def tell(self, x, y, fitness):
        order = torch.argsort(fitness)
        y_sel = y[order[: self.mu]]
        y_w = self.w @ y_sel
        self.mean = self.mean + self.sigma * y_w
        invsqrtC = self.B @ torch.diag(1 / self.D) @ self.B.T
        self.ps = (1 - self.cs) * self.ps + math.sqrt(self.cs * (2 - self.cs) * self.mueff) * (invsqrtC @ y_w)
        self.gen += 1
        hsig = (torch.linalg.norm(self.ps) / math.sqrt(1 - (1 - self.cs) ** (2 * self.gen))
                < (1.4 + 2 / (self.n + 1)) * self.chiN).to(torch.float64)
        self.pc = (1 - self.cc) * self.pc + hsig * math.sqrt(self.cc * (2 - self.cc) * self.mueff) * y_w
        rank_mu = (y_sel.T * self.w) @ y_sel
        self.C = ((1 - self.c1 - self.cmu) * self.C
                  + self.c1 * (torch.outer(self.pc, self.pc) + (1 - hsig) * self.cc * (2 - self.cc) * self.C)
                  + self.cmu * rank_mu)
        self.sigma *= math.exp((self.cs / self.damps) * (torch.linalg.norm(self.ps).item() / self.chiN - 1))
        self.C = torch.triu(self.C) + torch.triu(self.C, 1).T
        D2, self.B = torch.linalg.eigh(self.C)
        self.D = torch.sqrt(torch.clamp(D2, min=1e-20))
        return fitness[order[0]].item(), x[order[0]]


for name, f, start in [("rastrigin", rastrigin, 2.0), ("ackley", ackley, 1.5), ("rosenbrock", rosenbrock, 0.0)]:
    es = CMAES(torch.full((4,), start, dtype=torch.float64), 0.5)
    print(name, "lambda", es.lam, "mu", es.mu, "mueff %.4f" % es.mueff, "weights", es.w.numpy().round(4))
    for g in range(12):
        x, y = es.ask()
        fit = f(x)
        best, xbest = es.tell(x, y, fit)
        if g % 4 == 3:
            print(f"  gen {g + 1:2d} best {best:.5f} sigma {es.sigma:.5f} "
                  f"cond {(es.D.max() / es.D.min()).item() ** 2:.4f} mean {es.mean.numpy().round(4)}")
    # the eigen-decomposition reconstructs C; a Cholesky sampler gives the same covariance law
    print("  eigh reconstructs C:", torch.allclose(es.B @ torch.diag(es.D ** 2) @ es.B.T, es.C))
    L = torch.linalg.cholesky(es.C)
    z = randn(2000, 4)
    samples = z @ L.T
    print("  cholesky sampler cov err %.3f" % (torch.cov(samples.T) - es.C).abs().max().item(),
          "L lower:", torch.equal(L, L.tril()))

# a covariance that went NaN (e.g. an overflowed fitness) must be caught, not sampled from
bad = es.C.clone()
bad[1, 1] = float("nan")
info = torch.linalg.cholesky_ex(bad).info
print("cholesky_ex info on NaN covariance:", info.item(), info.dtype)
try:
    torch.linalg.cholesky(bad)
    print("factored a NaN covariance")
except torch.linalg.LinAlgError as err:
    print("LinAlgError:", str(err).split("(")[1].rstrip(").").strip())
    es.reset_covariance()
print("after reset:", torch.linalg.cholesky(es.C).diagonal().numpy())
# the upper triangle is not read: a NaN there leaves the lower factor intact
upper_nan = es.C.clone()
upper_nan[0, 3] = float("nan")
print("upper-triangle NaN ignored:", torch.linalg.cholesky(upper_nan).isnan().any().item())
