"""Neural ODEs with a hand-written solver and a hand-written adjoint, in the style of
msurtsukov/neural-ode (written for this corpus, not a copy): fixed-step Euler and RK4 solvers in
plain tensor code, an ODE function with forward_with_grad (torch.autograd.grad over (z, t) and the
parameters with allow_unused, batch expansion of the parameter and time gradients), a custom
torch.autograd.Function whose backward integrates the augmented adjoint system backwards in time
and returns a batch-shaped gradient for the flat parameters (summed by autograd to their shape) and
one for the time grid, which needs no gradient (autograd drops it), torch.bmm for dL/dt, a
NeuralODE module trained with Adam; the adjoint gradients are checked against backpropagation
through the RK4 solver.  Every random draw comes from one numpy RandomState.
"""
import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

rs = np.random.RandomState(3)


def euler(z0, t0, t1, f, h_max=0.05):
    n_steps = math.ceil((abs(t1 - t0) / h_max).max().item())
    h = (t1 - t0) / n_steps
    t, z = t0, z0
    for _ in range(n_steps):
        z = z + h * f(z, t)
        t = t + h
    return z


def rk4(z0, t0, t1, f, h_max=0.05):
    n_steps = math.ceil((abs(t1 - t0) / h_max).max().item())
    h = (t1 - t0) / n_steps
    t, z = t0, z0
    for _ in range(n_steps):
        k1 = f(z, t)
        k2 = f(z + h / 2 * k1, t + h / 2)
        k3 = f(z + h / 2 * k2, t + h / 2)
        k4 = f(z + h * k3, t + h)
        z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t = t + h
    return z


class ODEFunc(nn.Module):
    def forward_with_grad(self, z, t, grad_outputs):
        batch = z.shape[0]
        out = self.forward(z, t)
        a_dfdz, a_dfdt, *a_dfdp = torch.autograd.grad(
            (out,), (z, t) + tuple(self.parameters()), grad_outputs=grad_outputs,
            allow_unused=True, retain_graph=True)
        a_dfdp = torch.cat([g.flatten() for g in a_dfdp]).unsqueeze(0).expand(batch, -1) / batch
        if a_dfdt is not None:
            a_dfdt = a_dfdt.expand(batch, 1) / batch
        return out, a_dfdz, a_dfdt, a_dfdp

    def flat_parameters(self):
        return torch.cat([p.flatten() for p in self.parameters()])


class Spiral(ODEFunc):
    def __init__(self, hidden=12):
        super().__init__()
        self.l1 = nn.Linear(3, hidden)
        self.l2 = nn.Linear(hidden, 2)

    def forward(self, z, t):
        tt = t.reshape(-1, 1).expand(z.shape[0], 1) if t.dim() else t.expand(z.shape[0], 1)
        return self.l2(torch.tanh(self.l1(torch.cat([z, tt], 1))))


class Adjoint(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z0, t, flat_params, func):
        with torch.no_grad():
            zs = torch.zeros(t.size(0), *z0.shape).to(z0)
            zs[0] = z0
            for i in range(t.size(0) - 1):
                z0 = euler(z0, t[i], t[i + 1], func)
                zs[i + 1] = z0
        ctx.func = func
        ctx.save_for_backward(t, zs.clone(), flat_params)
        return zs

    @staticmethod
    def backward(ctx, dLdz):
        func = ctx.func
        t, zs, flat_params = ctx.saved_tensors
        T, bs, dim = zs.shape
        n_p = flat_params.numel()

        def augmented(aug, t_i):
            z_i, a = aug[:, :dim], aug[:, dim:2 * dim]
            with torch.enable_grad():
                t_i = t_i.detach().requires_grad_(True)
                z_i = z_i.detach().requires_grad_(True)
                f, a_dfdz, a_dfdt, a_dfdp = func.forward_with_grad(z_i, t_i, grad_outputs=a)
                a_dfdt = a_dfdt.to(z_i) if a_dfdt is not None else torch.zeros(bs, 1)
            return torch.cat((f, -a_dfdz, -a_dfdp, -a_dfdt), dim=1)

        with torch.no_grad():
            adj_z = torch.zeros(bs, dim)
            adj_p = torch.zeros(bs, n_p)
            adj_t = torch.zeros(T, bs, 1)
            for i in range(T - 1, 0, -1):
                f_i = func(zs[i], t[i])
                dLdt_i = torch.bmm(dLdz[i].unsqueeze(1), f_i.unsqueeze(-1))[:, 0]
                adj_z += dLdz[i]
                adj_t[i] = adj_t[i] - dLdt_i
                aug = torch.cat((zs[i], adj_z, torch.zeros(bs, n_p), adj_t[i]), dim=-1)
                back = euler(aug, t[i], t[i - 1], augmented)
                adj_z[:] = back[:, dim:2 * dim]
                adj_p[:] += back[:, 2 * dim:2 * dim + n_p]
                adj_t[i - 1] = back[:, 2 * dim + n_p:]
            adj_z += dLdz[0]
        # adj_p is (batch, n_params): autograd sums it to flat_params' shape; adj_t is
        # (T, batch, 1) for a t of shape (T,) that does not require grad: autograd drops it
        return adj_z, adj_t, adj_p, None


class NeuralODE(nn.Module):
    def __init__(self, func):
        super().__init__()
        self.func = func

    def forward(self, z0, t):
        return Adjoint.apply(z0, t, self.func.flat_parameters(), self.func)


func = Spiral()
with torch.no_grad():
    for p in func.parameters():
        p.copy_(torch.from_numpy(rs.uniform(-0.6, 0.6, tuple(p.shape)).astype(np.float32)))
model = NeuralODE(func)

# a damped spiral observed at 6 times, from 3 starting points
A = torch.tensor([[-0.1, 1.0], [-1.0, -0.1]])
t = torch.linspace(0.0, 1.0, 6)
z0 = torch.from_numpy(rs.uniform(-1, 1, (3, 2)).astype(np.float32))
with torch.no_grad():
    truth = [z0]
    for i in range(5):
        truth.append(rk4(truth[-1], t[i], t[i + 1], lambda z, s: z @ A.T, h_max=0.01))
    truth = torch.stack(truth)
print("trajectory", tuple(truth.shape), truth[-1].round(decimals=4).tolist())

zs = model(z0, t)
loss = F.mse_loss(zs, truth)
loss.backward()
adjoint = [p.grad.clone() for p in func.parameters()]
print("adjoint loss", round(loss.item(), 5), "grad_fn", type(zs.grad_fn).__name__,
      "t.grad", t.grad, "z0 needs grad", z0.requires_grad)

# the same loss, backpropagated through the Euler steps themselves
func.zero_grad()
direct = [z0]
for i in range(5):
    direct.append(euler(direct[-1], t[i], t[i + 1], func))
loss_direct = F.mse_loss(torch.stack(direct), truth)
loss_direct.backward()
for (name, p), g in zip(func.named_parameters(), adjoint):
    rel = ((g - p.grad).norm() / p.grad.norm()).item()
    print(f"  {name:10s} adjoint vs backprop relative difference below 0.1: {rel < 0.1}", tuple(g.shape))

# gradient with respect to the initial state through the adjoint
z0r = z0.clone().requires_grad_()
F.mse_loss(model(z0r, t), truth).backward()
print("dL/dz0", z0r.grad.round(decimals=4).tolist())

opt = torch.optim.Adam(model.parameters(), lr=0.02)
for step in range(6):
    opt.zero_grad()
    loss = F.mse_loss(model(z0, t), truth)
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.5f}")

# RK4 and Euler agree on a linear ODE within the step error
with torch.no_grad():
    e = euler(z0, t[0], t[-1], lambda z, s: z @ A.T, h_max=0.001)
    r = rk4(z0, t[0], t[-1], lambda z, s: z @ A.T, h_max=0.1)
print("euler vs rk4", torch.allclose(e, r, atol=2e-3), r.round(decimals=4).tolist())
