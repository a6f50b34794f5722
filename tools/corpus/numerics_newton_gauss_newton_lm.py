# Newton / Gauss-Newton / Levenberg-Marquardt with torch.autograd.functional.jacobian
import torch
from torch.autograd.functional import jacobian, hessian

torch.set_printoptions(precision=6)

def F(x):
    return torch.stack([x[0] ** 2 + x[1] ** 2 - 4.0, torch.exp(x[0]) + x[1] - 1.0])

x = torch.tensor([1.0, -1.0], dtype=torch.float64)
for it in range(20):
    J = jacobian(F, x)
    fx = F(x)
    dx = torch.linalg.solve(J, -fx)
    x = x + dx
    if dx.norm() < 1e-12:
        break
print("newton root", x, "iters", it, "residual %.2e" % F(x).norm().item())
print("J shape", J.shape, J.dtype)

# Gauss-Newton curve fit y = a * exp(b t)
t = torch.linspace(0, 1, 12, dtype=torch.float64)
a_true, b_true = 2.0, -1.3
y = a_true * torch.exp(b_true * t) + 0.01 * torch.sin(17 * t)

def resid(p):
    return p[0] * torch.exp(p[1] * t) - y

p = torch.tensor([1.0, 0.0], dtype=torch.float64)
for k in range(15):
    r = resid(p)
    J = jacobian(resid, p)
    step = torch.linalg.lstsq(J, -r.unsqueeze(-1)).solution.squeeze(-1)
    p = p + step
print("gauss-newton params", p)
print("final loss %.6e" % (0.5 * resid(p).pow(2).sum()).item())

# Levenberg-Marquardt on Rosenbrock residuals
def rosen_r(x):
    return torch.stack([10 * (x[1] - x[0] ** 2), 1 - x[0]])

x = torch.tensor([-1.2, 1.0], dtype=torch.float64)
lam = 1e-3
cost = 0.5 * rosen_r(x).square().sum()
history = []
for k in range(100):
    J = jacobian(rosen_r, x)
    r = rosen_r(x)
    A = J.T @ J
    g = J.T @ r
    dx = torch.linalg.solve(A + lam * torch.diag(torch.diagonal(A)), -g)
    x_new = x + dx
    new_cost = 0.5 * rosen_r(x_new).square().sum()
    if new_cost < cost:
        x, cost, lam = x_new, new_cost, lam / 10
    else:
        lam *= 10
    history.append(cost.item())
    if cost < 1e-20:
        break
print("LM solution", x, "cost<1e-12:", bool(cost < 1e-12))
print("monotone:", all(a >= b for a, b in zip(history, history[1:])))

# Newton minimisation with the Hessian
def f(x):
    return (x[0] - 1) ** 4 + (x[0] - 2 * x[1]) ** 2

x = torch.tensor([0.0, 3.0], dtype=torch.float64)
for k in range(30):
    g = torch.autograd.grad(f(x.requires_grad_()), x)[0]
    H = hessian(f, x.detach())
    x = (x.detach() - torch.linalg.solve(H, g)).detach()
print("newton min", x.round(decimals=3))
print("H", hessian(f, torch.tensor([1.0, 0.5], dtype=torch.float64)))

# jacobian of a function with two inputs, vectorize
def g2(a, b):
    return a * b.sum() + b[:2] ** 2
ja, jb = jacobian(g2, (torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0, 5.0])), vectorize=True)
print(ja)
print(jb)
jac, = torch.autograd.functional.jvp(lambda z: z ** 3, torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0]))[1:]
print("jvp", jac)
print(torch.autograd.functional.vjp(lambda z: z.sin().sum(), torch.tensor([0.0, 1.0]))[1])
