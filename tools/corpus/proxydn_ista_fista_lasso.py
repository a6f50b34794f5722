# LASSO by ISTA and FISTA, the way sparse-coding tutorials write them: a hand-rolled soft
# threshold (sign * clamp(|x| - t, min=0)) next to F.softshrink, the step from the spectral norm.
import math

import torch
import torch.nn.functional as F

torch.manual_seed(0)


def soft_threshold(x, t):
    return torch.sign(x) * torch.clamp(torch.abs(x) - t, min=0)


m, n = 20, 40
A = torch.sin(torch.arange(m * n, dtype=torch.float32).reshape(m, n) * 0.37) / m ** 0.5
x_true = torch.zeros(n)
x_true[[3, 11, 25]] = torch.tensor([1.5, -2.0, 0.7])
y = A @ x_true
L = torch.linalg.matrix_norm(A, ord=2) ** 2
print("L:", L.item())
lam = 0.05
x = torch.zeros(n)
for k in range(200):
    grad = A.T @ (A @ x - y)
    x = soft_threshold(x - grad / L, lam / L)
    if k % 50 == 0:
        obj = 0.5 * torch.sum((A @ x - y) ** 2) + lam * torch.norm(x, p=1)
        print(f"iter {k:3d} obj {obj.item():.6f} nnz {int((x != 0).sum())}")
print("support:", torch.nonzero(x.abs() > 1e-3).flatten().tolist())
print(x[[3, 11, 25]])
print("F.softshrink equal:", torch.allclose(F.softshrink(x_true, 0.8), soft_threshold(x_true, 0.8)))
print(F.softshrink(torch.linspace(-2, 2, 9), lambd=0.5))
print(torch.nn.Softshrink(1.0)(torch.linspace(-2, 2, 5)))


def fista(A, b, lam, n_iter=100):
    L = torch.linalg.norm(A, ord=2) ** 2
    x = torch.zeros(A.shape[1], dtype=A.dtype)
    z = x.clone()
    t = 1.0
    hist = []
    for it in range(n_iter):
        x_old = x
        x = F.softshrink(z - A.t() @ (A @ z - b) / L, lam / L.item())
        t_new = (1 + math.sqrt(1 + 4 * t * t)) / 2
        z = x + ((t - 1) / t_new) * (x - x_old)
        t = t_new
        hist.append((0.5 * (A @ x - b).pow(2).sum() + lam * x.abs().sum()).item())
    return x, hist


A = torch.cos(torch.arange(30 * 50, dtype=torch.float64).view(30, 50) * 0.13 + 0.4)
A = A / A.norm(dim=0, keepdim=True)
xs = torch.zeros(50, dtype=torch.float64)
xs[::10] = torch.arange(1, 6, dtype=torch.float64)
b = A @ xs
x, hist = fista(A, b, 0.01, 300)
print("final obj %.8f" % hist[-1])
print("decreased:", hist[0] > hist[-1])
print("rel err", round((torch.norm(x - xs) / torch.norm(xs)).item(), 8))
print(x.dtype, x.shape)
print(torch.round(x[::10], decimals=3))
print(x[:9])
