"""Finite-horizon control by hand, after vroulet/ilqc: a pendulum's controls optimised by an
iLQR-style step (a backward Riccati recursion on the linear-quadratic model of the rollout,
built with torch.autograd.grad / torch.func.jacrev, then a forward pass of the gains) checked
against a plain Newton step on the flattened controls (the Hessian by double backward and
torch.linalg.solve); then a batched LQR (Riccati iterations on stacked systems with @, .mT and
torch.linalg.solve), and a gradient-based MPC (Adam over an action sequence, torch.clamp on
the controls)."""
import math

import torch
from torch.func import jacrev, vmap

torch.set_default_dtype(torch.float64)

DT, HORIZON = 0.05, 12


def pendulum(x, u):
    th, om = x[..., 0], x[..., 1]
    acc = -9.81 * torch.sin(th) - 0.1 * om + u[..., 0]
    return torch.stack([th + DT * om, om + DT * acc], dim=-1)


def rollout(x0, cmd):
    xs = [x0]
    for t in range(cmd.shape[0]):
        xs.append(pendulum(xs[-1], cmd[t]))
    return torch.stack(xs)


def total_cost(x0, cmd):
    xs = rollout(x0, cmd)
    target = torch.tensor([math.pi, 0.0])
    return ((xs[1:] - target) ** 2).sum() + 0.01 * (cmd ** 2).sum()


x0 = torch.tensor([0.2, 0.0])
cmd = 0.3 * torch.sin(torch.arange(HORIZON, dtype=torch.float64)).unsqueeze(-1)

# --- Newton step on the flattened controls ----------------------------------------------------
flat = cmd.reshape(-1).clone().requires_grad_(True)
cost = total_cost(x0, flat.view(HORIZON, 1))
g, = torch.autograd.grad(cost, flat, create_graph=True)
H = torch.stack([torch.autograd.grad(g[i], flat, retain_graph=True)[0] for i in range(g.numel())])
print("cost", round(cost.item(), 6), "grad norm", round(g.norm().item(), 6))
print("hessian symmetric", torch.allclose(H, H.T), "shape", tuple(H.shape))
reg = 0.0
while True:
    try:
        torch.linalg.cholesky(H + reg * torch.eye(H.shape[0]))
        break
    except torch.linalg.LinAlgError:
        reg = 1e-3 if reg == 0.0 else 10 * reg
print("regularisation", reg)
newton_dir = -torch.linalg.solve(H + reg * torch.eye(H.shape[0]), g.detach())
print("newton decrease", round((0.5 * newton_dir @ g.detach()).item(), 6))

# --- the same step by dynamic programming (Riccati recursion on the LQ model) ------------------
xs = rollout(x0, cmd).detach()
A = vmap(jacrev(pendulum, argnums=0))(xs[:-1], cmd)
B = vmap(jacrev(pendulum, argnums=1))(xs[:-1], cmd)
print("A", tuple(A.shape), "B", tuple(B.shape), A[0], B[0].squeeze(-1))
target = torch.tensor([math.pi, 0.0])
qx = 2 * (xs[1:] - target)           # gradient of the state cost at x_{t+1}
P = torch.zeros(2, 2)
p = torch.zeros(2)
gains = []
for t in reversed(range(HORIZON)):
    Pn, pn = P + 2 * torch.eye(2), p + qx[t]
    Quu = 0.02 * torch.eye(1) + reg * torch.eye(1) + B[t].mT @ Pn @ B[t]
    Qux = B[t].mT @ Pn @ A[t]
    qu = 0.02 * cmd[t] + B[t].mT @ pn
    K = -torch.linalg.solve(Quu, Qux)
    k = -torch.linalg.solve(Quu, qu)
    gains.append((K, k))
    P = A[t].mT @ Pn @ A[t] + Qux.mT @ K
    p = A[t].mT @ pn + Qux.mT @ k
gains.reverse()
dx = torch.zeros(2)
dp_dir = []
for t in range(HORIZON):
    K, k = gains[t]
    du = K @ dx + k
    dp_dir.append(du)
    dx = A[t] @ dx + B[t] @ du
dp_dir = torch.cat(dp_dir)
print("Gauss-Newton direction", dp_dir[:4])
print("Newton direction      ", newton_dir[:4])
print("directions agree to 5%", bool(((dp_dir - newton_dir).norm() / newton_dir.norm()) < 0.05))
new_cost = total_cost(x0, (flat.detach() + newton_dir).view(HORIZON, 1))
print("cost after the step", round(new_cost.item(), 5), new_cost.item() < cost.item())

# --- batched infinite-horizon LQR --------------------------------------------------------------
thetas = torch.tensor([0.0, 0.5, math.pi])
As = vmap(jacrev(pendulum, argnums=0))(torch.stack([thetas, torch.zeros(3)], -1),
                                       torch.zeros(3, 1))
Bs = torch.tensor([[0.0], [DT]]).expand(3, 2, 1)
Q, R = torch.eye(2).expand(3, 2, 2), 0.1 * torch.eye(1).expand(3, 1, 1)
Pk = Q.clone()
for it in range(300):
    Kk = torch.linalg.solve(R + Bs.mT @ Pk @ Bs, Bs.mT @ Pk @ As)
    Pk_new = Q + As.mT @ Pk @ (As - Bs @ Kk)
    if torch.allclose(Pk_new, Pk, atol=1e-10):
        break
    Pk = Pk_new
print("riccati iterations < 300", it < 299)
print("gains", Kk.squeeze(1))
closed = As - Bs @ Kk
print("closed-loop spectral radius", torch.linalg.eigvals(closed).abs().amax(-1))
print("P positive definite", bool((torch.linalg.eigvalsh(Pk) > 0).all()))

# --- gradient MPC with clamped controls ----------------------------------------------------------
actions = torch.zeros(HORIZON, 1, requires_grad=True)
opt = torch.optim.Adam([actions], lr=0.3)
for step in range(40):
    opt.zero_grad()
    u = torch.clamp(actions, -3.0, 3.0)
    loss = total_cost(x0, u)
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print("mpc step", step, round(loss.item(), 4), "saturated", int((actions.abs() > 3).sum()))
final = rollout(x0, actions.detach().clamp(-3, 3))
print("final state", final[-1], "max |u|", actions.detach().clamp(-3, 3).abs().max())
