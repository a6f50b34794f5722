"""A sparse variational Gaussian process written by hand, after the SGPR / GPR models of
AlejandroCatalina/gp_pytorch (inducing points, a variational q(u) = N(m, L L^T), an RBF kernel of
log1pe-softened hyperparameters, the ELBO = expected log-likelihood - KL, Adam).

Written for the corpus (not a copy): the kernel uses torch.cdist, the KL and the predictive
posterior use the Cholesky toolbox of hand-written GPs (linalg.cholesky, cholesky_solve,
solve_triangular with left=False, cholesky_inverse, the deprecated triangular_solve, slogdet,
MultivariateNormal and kl_divergence), and the grad_fn names and gradients of those ops are printed.
Data come from numpy.
"""
import math
import warnings

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import MultivariateNormal, kl_divergence

warnings.simplefilter("ignore")         # (triangular_solve's deprecation)
torch.set_default_dtype(torch.float64)
torch.set_printoptions(precision=5)
rng = np.random.RandomState(3)

log1pe = lambda x: torch.log(1 + torch.exp(x))


class RBF(nn.Module):
    def __init__(self):
        super().__init__()
        self.raw_len = nn.Parameter(torch.tensor(0.0))
        self.raw_amp = nn.Parameter(torch.tensor(0.5))

    def forward(self, a, b):
        r2 = torch.cdist(a / log1pe(self.raw_len), b / log1pe(self.raw_len)) ** 2
        return log1pe(self.raw_amp) ** 2 * torch.exp(-0.5 * r2)


class SVGP(nn.Module):
    def __init__(self, z):
        super().__init__()
        self.kernel = RBF()
        self.z = nn.Parameter(z)
        m = z.shape[0]
        self.q_m = nn.Parameter(torch.zeros(m, 1))
        self.q_L = nn.Parameter(torch.eye(m) * 0.5)
        self.raw_noise = nn.Parameter(torch.tensor(-1.0))

    def elbo(self, x, y):
        m = self.z.shape[0]
        Kmm = self.kernel(self.z, self.z) + 1e-6 * torch.eye(m)
        Kmn = self.kernel(self.z, x)
        Lm = torch.linalg.cholesky(Kmm)
        A = torch.linalg.solve_triangular(Lm, Kmn, upper=False)         # Lm^-1 Kmn
        L = torch.tril(self.q_L)
        S = L @ L.T
        mu = Kmn.T @ torch.cholesky_solve(self.q_m, Lm)
        Kmm_inv = torch.cholesky_inverse(Lm)
        var_f = (log1pe(self.kernel.raw_amp) ** 2 - (A ** 2).sum(0)
                 + ((Kmn.T @ Kmm_inv @ S) * (Kmm_inv @ Kmn).T).sum(1))
        noise = log1pe(self.raw_noise) ** 2
        ell = (-0.5 * math.log(2 * math.pi) - 0.5 * torch.log(noise)
               - 0.5 * ((y[:, 0] - mu[:, 0]) ** 2 + var_f) / noise).sum()
        kl = kl_divergence(MultivariateNormal(self.q_m[:, 0], scale_tril=L),
                           MultivariateNormal(torch.zeros(m), scale_tril=Lm))
        return ell - kl, ell, kl


x = torch.tensor(np.sort(rng.uniform(-3, 3, 40))[:, None])
y = torch.sin(2 * x) + 0.1 * torch.tensor(rng.randn(40, 1))
z = torch.linspace(-3, 3, 7)[:, None]
model = SVGP(z)
opt = torch.optim.Adam(model.parameters(), lr=0.05)
for it in range(40):
    opt.zero_grad()
    elbo, ell, kl = model.elbo(x, y)
    (-elbo).backward()
    opt.step()
    if it % 10 == 0:
        print(f"it {it:2d} elbo {elbo.item():10.4f} ell {ell.item():10.4f} kl {kl.item():8.4f}")
print("lengthscale", round(log1pe(model.kernel.raw_len).item(), 4),
      "noise", round(log1pe(model.raw_noise).item(), 4))

# the toolbox, named as PyTorch names its nodes
K = model.kernel(z, z).detach() + 1e-6 * torch.eye(7)
K.requires_grad_()
L = torch.linalg.cholesky(K)
U = torch.linalg.cholesky(K, upper=True)
B = torch.tensor(rng.randn(3, 7))
X_right = torch.linalg.solve_triangular(L, B, upper=False, left=False)      # X L = B
sol, coeff = torch.triangular_solve(B.T, L, upper=False)
for name, t in [("cholesky", L), ("cholesky upper", U), ("solve_triangular right", X_right),
                ("triangular_solve", sol), ("cloned_coefficient", coeff),
                ("cholesky_inverse", torch.cholesky_inverse(L)), ("cholesky_solve", torch.cholesky_solve(B.T, L))]:
    print(f"{name:24s} {type(t.grad_fn).__name__}")
print("solve agreement:", torch.allclose(X_right @ L, B), torch.allclose(L @ sol, B.T))
logdet = 2 * torch.log(torch.diagonal(L)).sum()
print("logdet via cholesky vs slogdet:", round(logdet.item(), 6), round(torch.linalg.slogdet(K)[1].item(), 6))
g, = torch.autograd.grad(logdet, K)
print("d logdet / dK is K^-1:", torch.allclose(g, torch.linalg.inv(K), atol=1e-6))

# squared distances of grid points: whole-number gradients
grid = torch.arange(8.0).view(4, 2).requires_grad_()
d2 = torch.cdist(grid, grid) ** 2
print("cdist^2 grad:", torch.autograd.grad(d2.sum(), grid)[0].tolist())
print("pdist grad:", torch.autograd.grad(torch.nn.functional.pdist(grid).pow(2).sum(), grid)[0].tolist())

# predictive at a few test points
with torch.no_grad():
    xs = torch.tensor([[-2.0], [0.0], [2.5]])
    Kmm = model.kernel(model.z, model.z) + 1e-6 * torch.eye(7)
    Lm = torch.linalg.cholesky(Kmm)
    Ksm = model.kernel(xs, model.z)
    pred = Ksm @ torch.cholesky_solve(model.q_m, Lm)
    print("predictive mean:", pred[:, 0], "truth:", torch.sin(2 * xs)[:, 0])
