"""Mass-spring systems integrated by autograd, in the style of juniorrojas' springs-integration
and hookean-springs repositories (written anew): an incidence matrix built with item assignment,
Hookean and StVK spring energies, symplectic Euler (force = -x.grad after energy.backward(),
state advanced with .data.add_ on buffers, a float32 velocity buffer fed float64 forces), backward
Euler as gradient descent with a backtracking line search, the Hamiltonian over time, a
Hessian-vector product of the energy (torch.autograd.functional.hvp), and system identification:
LBFGS fitting the spring stiffness to a simulated trajectory through the differentiable loop.
Prints are seed-independent (all initial data is fixed)."""
import torch
import torch.nn as nn


def make_incidence(pairs, n, dtype):
    inc = torch.zeros(len(pairs), n, dtype=dtype)
    for s, (a, b) in enumerate(pairs):
        inc[s, a] = 1
        inc[s, b] = -1
    return inc


class Springs(nn.Module):
    def __init__(self, pairs, rest, k, n, kind="hookean"):
        super().__init__()
        self.kind = kind
        self.register_buffer("inc", make_incidence(pairs, n, rest.dtype))
        self.register_buffer("rest", rest)
        self.register_buffer("k", k)

    def energy(self, x, k=None):
        k = self.k if k is None else k
        d = self.inc.mm(x)
        if self.kind == "hookean":
            length = (d.pow(2).sum(1) + 1e-9).sqrt()
            return 0.5 * (k * (length - self.rest).pow(2)).sum()
        q = d.pow(2).sum(1)
        return 0.5 * (k * (q - self.rest.pow(2)).pow(2)).sum()


class SymplecticEuler(nn.Module):
    def __init__(self, x, m, springs, h=0.03):
        super().__init__()
        self.h = h
        self.springs = springs
        self.register_buffer("x", x.detach().clone())
        self.x.requires_grad_()
        self.register_buffer("v", torch.zeros(x.shape, dtype=torch.float32))
        self.register_buffer("m_inv", 1 / m)

    def step(self):
        if self.x.grad is not None:
            self.x.grad.zero_()
        self.springs.energy(self.x).backward()
        force = -self.x.grad
        self.v.data.add_(self.m_inv.unsqueeze(-1) * force * self.h)
        self.x.data.add_(self.v * self.h)

    def hamiltonian(self):
        return self.springs.energy(self.x).item() + 0.5 * (self.v.double() ** 2).sum().item()


def line_search(x, direction, loss0, f, shrink=0.3, iters=60):
    step = 1.0
    for _ in range(iters):
        if f(x + step * direction) < loss0:
            return step
        step *= shrink
    return 0.0


def backward_euler_step(x, v, springs, h=0.03, tol=1e-10):
    y = (x + h * v).detach()
    x1 = y.clone().requires_grad_(True)

    def objective(z):
        return h * h * springs.energy(z) + 0.5 * (z - y).pow(2).sum()

    for it in range(200):
        loss = objective(x1)
        g, = torch.autograd.grad(loss, x1)
        if g.pow(2).sum() < tol:
            break
        with torch.no_grad():
            step = line_search(x1, -g, loss, objective)
            if step == 0.0:
                break
            x1 -= step * g
    x1 = x1.detach()
    return x1, (x1 - x) / h, it


pairs = [(0, 1), (1, 2), (2, 0), (2, 3), (3, 1)]
x0 = torch.tensor([[0.0, 0.0], [1.1, 0.0], [0.4, 0.9], [1.6, 1.0]], dtype=torch.float64)
rest = torch.tensor([1.0, 1.0, 1.0, 0.9, 1.2], dtype=torch.float64)
k = torch.full((5,), 6.0, dtype=torch.float64)
m = torch.ones(4, dtype=torch.float64)

for kind in ("hookean", "stvk"):
    springs = Springs(pairs, rest, k, 4, kind)
    print(kind, sorted(n for n, _ in springs.named_buffers()), springs.inc.dtype)
    sim = SymplecticEuler(x0, m, springs)
    for i in range(6):
        sim.step()
        print(f"  SE step {i}: H={sim.hamiltonian():.6f}")
    print("  dtypes", sim.x.dtype, sim.v.dtype, sim.x.grad.dtype, sim.x.requires_grad)
    x, v = x0.clone(), torch.zeros_like(x0)
    for i in range(4):
        x, v, iters = backward_euler_step(x, v, springs)
        e = springs.energy(x).item() + 0.5 * v.pow(2).sum().item()
        print(f"  BE step {i}: H={e:.6f} iters>0={iters > 0}")

springs = Springs(pairs, rest, k, 4)
vec = torch.tensor([[1.0, 0.0], [0.0, -1.0], [0.5, 0.5], [-1.0, 0.2]], dtype=torch.float64)
hv = torch.autograd.functional.hvp(lambda z: springs.energy(z), x0, vec)
print("energy", hv[0].item(), "hvp", hv[1])
H = torch.autograd.functional.hessian(lambda z: springs.energy(z), x0)
print("hessian", H.shape, torch.allclose(H.reshape(8, 8) @ vec.reshape(8), hv[1].reshape(8)))
w = torch.linalg.eigvalsh(H.reshape(8, 8))
print("zero modes", int((w.abs() < 1e-8).sum()), "max", w.max().item())


x_start = x0 * torch.tensor([1.3, 0.8], dtype=torch.float64)


def rollout(kk, steps=25, h=0.02):
    x = x_start.clone()
    v = torch.zeros_like(x0)
    traj = []
    for _ in range(steps):
        xg = x if x.requires_grad else x.requires_grad_(True)
        f, = torch.autograd.grad(springs.energy(xg, kk), xg, create_graph=True)
        v = v - h * f
        x = x + h * v
        traj.append(x)
    return torch.stack(traj)


target = rollout(torch.tensor([4.0, 6.0, 8.0, 5.0, 7.0], dtype=torch.float64)).detach()
kk = torch.full((5,), 5.0, dtype=torch.float64, requires_grad=True)
opt = torch.optim.LBFGS([kk], lr=1.0, max_iter=15, line_search_fn="strong_wolfe")


def closure():
    opt.zero_grad()
    loss = (rollout(kk) - target).pow(2).mean()
    loss.backward()
    return loss


for epoch in range(3):
    loss = opt.step(closure)
    shown = f"{loss.item():.3e}" if loss.item() > 1e-8 else "<1e-8"
    print(f"LBFGS {epoch}: loss={shown} k={[round(v, 2) for v in kk.tolist()]}")
