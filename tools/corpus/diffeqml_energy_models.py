"""Energy-based vector fields in the style of DiffEqML/torchdyn (torchdyn/models/energy.py:
Stable, HNN, LNN), written anew.

Exercises: torch.autograd.grad(create_graph=True) inside set_grad_enabled, requires_grad_ on
inputs, torch.autograd.functional.jacobian / hessian per sample (create_graph=True) against the
torch.func route (jacrev, hessian, vmap, functional_call), pinverse / linalg.solve of the
velocity Hessian, an RK4 rollout and a leapfrog integrator whose energy drift is printed, a few
Adam steps through the second-order graph.  Weights come from numpy so both runs start alike.
"""
import numpy as np
import torch
import torch.nn as nn
from torch.autograd.functional import jacobian, hessian
from torch.func import functional_call, hessian as fhessian, jacrev, vmap

rng = np.random.RandomState(7)
torch.set_printoptions(precision=5)


def numpy_init_(module, scale=0.6):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-scale, scale, tuple(p.shape))))
    return module


def mlp(width=12):
    return numpy_init_(nn.Sequential(nn.Linear(2, width), nn.Softplus(), nn.Linear(width, width),
                                     nn.Tanh(), nn.Linear(width, 1)).double())


class GradientField(nn.Module):
    """dx/dt = -grad E(x): a dissipative field from a learned energy."""

    def __init__(self, energy):
        super().__init__()
        self.energy = energy

    def forward(self, x):
        with torch.set_grad_enabled(True):
            x = x.requires_grad_(True)
            e = self.energy(x).sum()
            return -torch.autograd.grad(e, x, create_graph=True)[0]


class Hamiltonian(nn.Module):
    """dq/dt = dH/dp, dp/dt = -dH/dq."""

    def __init__(self, h):
        super().__init__()
        self.h = h

    def forward(self, x):
        with torch.enable_grad():
            x = x.requires_grad_(True)
            half = x.shape[1] // 2
            dh = torch.autograd.grad(self.h(x).sum(), x, create_graph=True)[0]
        return torch.cat([dh[:, half:], -dh[:, :half]], dim=1)


class Lagrangian(nn.Module):
    """Euler-Lagrange accelerations from a learned L(q, qdot), one sample at a time."""

    def __init__(self, lag):
        super().__init__()
        self.lag = lag

    def scalar(self, state):
        return self.lag(state).sum()

    def forward(self, x):
        x = x.detach().requires_grad_(True)
        n = x.shape[1] // 2
        accs = []
        for row in x.unbind(0):
            g = jacobian(self.scalar, row, create_graph=True)
            h = hessian(self.scalar, row, create_graph=True)
            accs.append(torch.linalg.pinv(h[n:, n:]) @ (g[:n] - h[n:, :n] @ row[n:]))
        return torch.cat([x[:, n:], torch.stack(accs)], dim=1)


def rk4(field, x, dt, steps):
    states = [x]
    for _ in range(steps):
        k1 = field(x)
        k2 = field(x + 0.5 * dt * k1)
        k3 = field(x + 0.5 * dt * k2)
        k4 = field(x + dt * k3)
        x = x + dt * (k1 + 2 * k2 + 2 * k3 + k4) / 6
        states.append(x)
    return torch.stack(states)


x0 = torch.from_numpy(rng.uniform(-1, 1, (6, 2)))
target = torch.stack([x0[:, 1], -torch.sin(x0[:, 0])], dim=1)     # pendulum field

for name, cls in [("gradient", GradientField), ("hamiltonian", Hamiltonian), ("lagrangian", Lagrangian)]:
    model = cls(mlp())
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    for step in range(4):
        opt.zero_grad()
        pred = model(x0.clone())
        loss = (pred - target).pow(2).mean()
        loss.backward()
        opt.step()
        print(f"{name:12s} step {step} loss {loss.item():.8f} grad_fn {type(pred.grad_fn).__name__}")
    traj = rk4(model, x0.clone(), 0.05, 4).detach()
    print(f"{name:12s} rollout {tuple(traj.shape)} {[round(v, 8) for v in traj[-1, :2].flatten().tolist()]}")

# The same Lagrangian accelerations through torch.func, batched with vmap.
lag = mlp()
params = {k: v.detach() for k, v in lag.named_parameters()}


def lagrangian_value(p, state):
    return functional_call(lag, p, (state,)).squeeze(-1)


def acceleration(p, state):
    g = jacrev(lagrangian_value, argnums=1)(p, state)
    h = fhessian(lagrangian_value, argnums=1)(p, state)
    return torch.linalg.solve(h[1:, 1:], g[:1] - h[1:, :1] @ state[1:])


acc = vmap(acceleration, in_dims=(None, 0))(params, x0)
loop = Lagrangian(lag)(x0.clone())[:, 1:].detach()
print("func acc", tuple(acc.shape), acc.dtype, torch.allclose(acc, loop))

# Leapfrog on the true pendulum Hamiltonian, forces from autograd.
def force(q):
    q = q.detach().requires_grad_(True)
    potential = (1 - torch.cos(q)).sum()
    return -torch.autograd.grad(potential, q)[0]


q, p = torch.tensor([1.2], dtype=torch.float64), torch.tensor([0.0], dtype=torch.float64)
energies = []
for _ in range(200):
    p = p + 0.05 * force(q)
    q = q + 0.1 * p
    p = p + 0.05 * force(q)
    energies.append(0.5 * p.pow(2) + 1 - torch.cos(q))
energies = torch.cat(energies)
print("leapfrog", f"{q.item():.6f} {p.item():.6f}", f"drift {(energies.max() - energies.min()).item():.3e}")
