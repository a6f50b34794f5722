"""Finite-difference PDE solvers on periodic grids, in the style of cics-nd/ar-pde-cnn's PyTorch
Burgers solvers (written anew): circular F.pad + conv1d stencils (central, upwind picked by
torch.where, fourth order), a WENO-like weighted edge flux (stack / sum of weights), RK4 in time
under no_grad, nn.Conv1d / nn.Conv2d with padding_mode='circular' as fixed stencils, a 2-D heat
equation checked against torch.roll, torch.gradient / torch.diff on the result, and system
identification: the viscosity recovered by gradient descent through the unrolled solver, plus
the gradient of the final state with respect to the initial condition.  Seed-independent."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_printoptions(precision=5, sci_mode=False)
N = 32
dx = 2 * math.pi / N
x = torch.arange(N, dtype=torch.float64) * dx


class Stencil1D:
    def __init__(self, weights, scale):
        self.w = torch.tensor(weights, dtype=torch.float64).view(1, 1, -1) / scale
        self.p = (len(weights) - 1) // 2

    def __call__(self, u):
        shape = u.shape
        u = u.reshape(-1, 1, shape[-1])
        out = F.conv1d(F.pad(u, (self.p, self.p), mode="circular"), self.w)
        return out.reshape(shape)


d1 = Stencil1D([-1.0, 0.0, 1.0], 2 * dx)
d1_4 = Stencil1D([1.0, -8.0, 0.0, 8.0, -1.0], 12 * dx)
d2 = Stencil1D([1.0, -2.0, 1.0], dx ** 2)
back = Stencil1D([-1.0, 1.0, 0.0], dx)
fwd = Stencil1D([0.0, -1.0, 1.0], dx)

u0 = torch.sin(x) + 0.5 * torch.cos(2 * x)
print("d/dx err", (d1(u0) - (torch.cos(x) - torch.sin(2 * x))).abs().max().item() < 0.1,
      "4th", (d1_4(u0) - (torch.cos(x) - torch.sin(2 * x))).abs().max().item() < 1e-3)
print("d2", d2(u0)[:4])
print("shape kept", d2(u0.repeat(3, 2, 1)).shape)


def weno_flux_grad(u):
    f = 0.5 * u ** 2
    f = f.view(1, 1, -1)
    e1 = F.conv1d(F.pad(f, (2, 1), mode="circular"), torch.tensor([[[-0.5, 1.5, 0.0]]], dtype=u.dtype))
    e2 = F.conv1d(F.pad(f, (1, 2), mode="circular"), torch.tensor([[[0.0, 0.5, 0.5]]], dtype=u.dtype))
    b1 = F.conv1d(F.pad(f, (2, 1), mode="circular"), torch.tensor([[[-1.0, 1.0, 0.0]]], dtype=u.dtype)) ** 2
    b2 = F.conv1d(F.pad(f, (1, 2), mode="circular"), torch.tensor([[[0.0, -1.0, 1.0]]], dtype=u.dtype)) ** 2
    w = torch.stack([1 / (3 * (1e-6 + b1) ** 2), 2 / (3 * (1e-6 + b2) ** 2)], dim=0)
    w = w / w.sum(dim=0)
    edge = w[0] * e1 + w[1] * e2
    return ((edge[..., 1:] - edge[..., :-1]) / dx).flatten()


print("weno", weno_flux_grad(u0)[:5], weno_flux_grad(u0).shape)


def burgers_rhs(u, nu):
    ux = torch.where(u > 0, back(u), fwd(u))
    return -u * ux + nu * d2(u)


def rk4(f, u, dt):
    k1 = f(u)
    k2 = f(u + 0.5 * dt * k1)
    k3 = f(u + 0.5 * dt * k2)
    k4 = f(u + dt * k3)
    return u + dt * (k1 + 2 * k2 + 2 * k3 + k4) / 6


with torch.no_grad():
    u = u0.clone()
    for step in range(60):
        u = rk4(lambda v: burgers_rhs(v, 0.05), u, 0.01)
    print("burgers no_grad", u.requires_grad, u[:6], "mass", round(u.sum().item() * dx, 6))


def solve(u, nu, steps=30, dt=0.01):
    for _ in range(steps):
        u = rk4(lambda v: burgers_rhs(v, nu), u, dt)
    return u


target = solve(u0, torch.tensor(0.08, dtype=torch.float64)).detach()
nu = torch.tensor(0.02, dtype=torch.float64, requires_grad=True)
opt = torch.optim.Adam([nu], lr=0.01)
for it in range(25):
    opt.zero_grad()
    loss = (solve(u0, nu) - target).pow(2).mean()
    loss.backward()
    opt.step()
    if it % 8 == 0:
        print(f"sysid {it}: loss={loss.item():.4e} nu={nu.item():.5f} grad={nu.grad.item():.4e}")

ui = u0.clone().requires_grad_(True)
uT = solve(ui, torch.tensor(0.05, dtype=torch.float64), steps=10)
g, = torch.autograd.grad(uT[5], ui)
print("dU_T[5]/dU_0", g[:9], "support", int((g.abs() > 1e-12).sum()))

# heat equation, 2-D, nn.Conv2d with circular padding vs torch.roll
M = 12
h = 1.0 / M
lap = nn.Conv2d(1, 1, 3, padding=1, padding_mode="circular", bias=False).double()
with torch.no_grad():
    lap.weight.copy_(torch.tensor([[[[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]]]]) / h ** 2)
lap.weight.requires_grad_(False)
print(lap, lap.weight.requires_grad)
yy, xx = torch.meshgrid(torch.arange(M), torch.arange(M), indexing="ij")
T = torch.exp(-((xx - 5.5) ** 2 + (yy - 4.0) ** 2).double() / 6.0)[None, None]
T_roll = T.clone()
dt = 0.2 * h ** 2
for _ in range(20):
    T = T + dt * lap(T)
    R = T_roll[0, 0]
    T_roll = T_roll + dt * ((R.roll(1, 0) + R.roll(-1, 0) + R.roll(1, 1) + R.roll(-1, 1) - 4 * R) / h ** 2)
print("heat", T.sum().item(), torch.allclose(T, T_roll), T[0, 0, 4, :4])
gy, gx = torch.gradient(T[0, 0], spacing=h)
# (diff's element 0, the wrap-around step of a field symmetric about its middle, is 0 up to
# rounding: its printed sign follows the exponential's last bits)
print("gradient", gx[4, :4], gy.shape, torch.diff(T[0, 0, 4], prepend=T[0, 0, 4, -1:])[1:4])

conv1 = nn.Conv1d(1, 2, 3, padding=1, padding_mode="circular", bias=False).double()
with torch.no_grad():
    conv1.weight.copy_(torch.tensor([[[-1.0, 1.0, 0.0]], [[0.0, -1.0, 1.0]]]) / dx)
uu = u0.view(1, 1, -1).requires_grad_(True)
both = conv1(uu)
print("Conv1d circular", both.shape, torch.allclose(both[0, 0], back(u0)), torch.allclose(both[0, 1], fwd(u0)))
both.pow(2).sum().backward()
print("weight grad", conv1.weight.grad.flatten(), uu.grad[0, 0, :3])
