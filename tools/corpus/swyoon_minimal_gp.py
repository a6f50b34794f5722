"""Gaussian-process regression with hyperparameters fitted by gradient descent, after
swyoon/pytorch-minimal-gaussian-process (gp.py: GP; demo_gpr.ipynb).

Adapted: the demo's torch.randn data -> the same shapes drawn from numpy (float32, as torch.randn
makes them); plotting and tqdm removed; facts printed instead of plotted.  The GP class is the
repository's: float64 log-parameters (torch.tensor of numpy float64 logs) acting on float32 data,
Cholesky factor, two triangular-by-general solves, log marginal likelihood, SGD.
"""
import numpy as np
import torch
import torch.nn as nn
from torch.optim import SGD


class GP(nn.Module):
    def __init__(self, length_scale=1.0, noise_scale=1.0, amplitude_scale=1.0):
        super().__init__()
        self.length_scale_ = nn.Parameter(torch.tensor(np.log(length_scale)))
        self.noise_scale_ = nn.Parameter(torch.tensor(np.log(noise_scale)))
        self.amplitude_scale_ = nn.Parameter(torch.tensor(np.log(amplitude_scale)))

    @property
    def length_scale(self):
        return torch.exp(self.length_scale_)

    @property
    def noise_scale(self):
        return torch.exp(self.noise_scale_)

    @property
    def amplitude_scale(self):
        return torch.exp(self.amplitude_scale_)

    def forward(self, x):
        """compute prediction. fit() must have been called.
        x: test input data point. N x D tensor for the data dimensionality D."""
        y = self.y
        L = self.L
        alpha = self.alpha
        k = self.kernel_mat(self.X, x)
        v = torch.linalg.solve(L, k)
        mu = k.T.mm(alpha)
        var = self.amplitude_scale + self.noise_scale - torch.diag(v.T.mm(v))
        return mu, var

    def fit(self, X, y):
        """should be called before forward() call.
        X: training input data point. N x D tensor for the data dimensionality D.
        y: training target data point. N x 1 tensor."""
        D = X.shape[1]
        K = self.kernel_mat_self(X)
        L = torch.linalg.cholesky(K)
        alpha = torch.linalg.solve(L.T, torch.linalg.solve(L, y))
        marginal_likelihood = (
            -0.5 * y.T.mm(alpha) - torch.log(torch.diag(L)).sum() - D * 0.5 * np.log(2 * np.pi)
        )
        self.X = X
        self.y = y
        self.L = L
        self.alpha = alpha
        self.K = K
        return marginal_likelihood

    def kernel_mat_self(self, X):
        sq = (X**2).sum(dim=1, keepdim=True)
        sqdist = sq + sq.T - 2 * X.mm(X.T)
        return self.amplitude_scale * torch.exp(
            -0.5 * sqdist / self.length_scale
        ) + self.noise_scale * torch.eye(len(X))

    def kernel_mat(self, X, Z):
        Xsq = (X**2).sum(dim=1, keepdim=True)
        Zsq = (Z**2).sum(dim=1, keepdim=True)
        sqdist = Xsq + Zsq.T - 2 * X.mm(Z.T)
        return self.amplitude_scale * torch.exp(-0.5 * sqdist / self.length_scale)

    def train_step(self, X, y, opt):
        """gradient-based optimization of hyperparameters
        opt: torch.optim.Optimizer object."""
        opt.zero_grad()
        nll = -self.fit(X, y).sum()
        nll.backward()
        opt.step()
        return {
            "loss": nll.item(),
            "length": self.length_scale.detach().cpu(),
            "noise": self.noise_scale.detach().cpu(),
            "amplitude": self.amplitude_scale.detach().cpu(),
        }


rng = np.random.RandomState(0)
X = torch.tensor(rng.standard_normal((60, 1)).astype(np.float32))
f = torch.sin(X * 2 * np.pi / 4).flatten()
y = f + torch.tensor(rng.standard_normal(60).astype(np.float32)) * 0.1
y = y[:, None]
grid = torch.linspace(-5, 5, 11)[:, None]

gp = GP(length_scale=4, amplitude_scale=0.1)
print(gp)
print([(name, p.dtype, tuple(p.shape)) for name, p in gp.named_parameters()])
ml = gp.fit(X, y)
print("marginal likelihood", ml, ml.dtype)
print("K", gp.K.dtype, tuple(gp.K.shape), "L", gp.L.dtype, "alpha", gp.alpha.dtype)
mu, var = gp.forward(grid)
print("before:", mu.dtype, var.dtype, tuple(mu.shape), tuple(var.shape))
print("mu", np.round(mu.detach().numpy().flatten(), 4))
print("std", np.round(torch.sqrt(var).detach().numpy().flatten(), 4))

opt = SGD(gp.parameters(), lr=0.01)
l_loss, l_length, l_noise, l_amp = [], [], [], []
for i in range(40):
    d_train = gp.train_step(X, y, opt)
    l_loss.append(d_train["loss"])
    l_length.append(d_train["length"])
    l_noise.append(d_train["noise"])
    l_amp.append(d_train["amplitude"])
    if i % 8 == 0:
        print(i, "loss %.4f" % d_train["loss"], d_train["length"], d_train["noise"],
              d_train["amplitude"])
print("stacked", torch.stack(l_length).shape, torch.stack(l_noise).dtype)
mu, var = gp.forward(grid)
print("after mu", np.round(mu.detach().numpy().flatten(), 3))
print("after std", np.round(torch.sqrt(var).detach().numpy().flatten(), 3))
print("grads set:", [p.grad is not None for p in gp.parameters()],
      [p.grad.dtype for p in gp.parameters()])
