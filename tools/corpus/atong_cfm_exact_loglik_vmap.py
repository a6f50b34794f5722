# Exact log-likelihood of a CNF / flow-matching model via torch.func jacrev + vmap + trace
import math
import torch
import torch.nn as nn
from torch.func import jacrev, vmap, functional_call, jacfwd, grad

torch.manual_seed(0)

class VF(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin1 = nn.Linear(3, 16)
        self.lin2 = nn.Linear(16, 2)
    def forward(self, t, x):
        tt = t * torch.ones_like(x[..., :1])
        return self.lin2(torch.tanh(self.lin1(torch.cat([x, tt], dim=-1))))

vf = VF()
with torch.no_grad():
    for i, p in enumerate(vf.parameters()):
        p.copy_(0.5 * torch.sin(torch.arange(p.numel(), dtype=torch.float32) + 2 * i).reshape(p.shape))

x = torch.stack([torch.linspace(-1, 1, 5), torch.linspace(0.5, -0.5, 5)], 1)

def f_single(xi, t):
    return vf(t, xi.unsqueeze(0)).squeeze(0)

J = vmap(jacrev(f_single), in_dims=(0, None))(x, torch.tensor(0.3))
print("jac shape", J.shape)
div = torch.vmap(torch.trace)(J)
print("div", div)
J2 = vmap(jacfwd(f_single), in_dims=(0, None))(x, torch.tensor(0.3))
print("jacfwd==jacrev", torch.allclose(J, J2, atol=1e-6))
print("diagonal sum", torch.diagonal(J, dim1=-2, dim2=-1).sum(-1))
# compare with autograd loop
xr = x.clone().requires_grad_(True)
out = vf(torch.tensor(0.3), xr)
d2 = sum(torch.autograd.grad(out[:, i].sum(), xr, retain_graph=True)[0][:, i] for i in range(2))
print("autograd div", d2)

def odefunc(t, state):
    x, logp = state
    dx = vf(t, x)
    jac = vmap(jacrev(lambda xi: vf(t, xi)))(x)
    dlogp = -jac.diagonal(dim1=-2, dim2=-1).sum(-1)
    return dx, dlogp

def integrate(x1, n_steps=20):
    # integrate from t=1 back to t=0 (data -> noise)
    x = x1
    logp = torch.zeros(x.shape[0])
    dt = -1.0 / n_steps
    for i in range(n_steps):
        t = torch.tensor(1.0 + i * dt)
        dx, dl = odefunc(t, (x, logp))
        x = x + dt * dx
        logp = logp + dt * dl
    return x, logp

with torch.no_grad():
    z, delta = integrate(x)
log_pz = torch.distributions.Normal(0, 1).log_prob(z).sum(-1)
log_px = log_pz - delta
print("log p(x)", log_px)
print("bits/dim", (-log_px / (2 * math.log(2))).mean().item())
std_normal = torch.distributions.MultivariateNormal(torch.zeros(2), torch.eye(2))
print("mvn logp", std_normal.log_prob(z))

# functional_call with parameter dict, per-sample gradients
params = {k: v.detach() for k, v in vf.named_parameters()}
def loss_fn(params, xi):
    out = functional_call(vf, params, (torch.tensor(0.5), xi.unsqueeze(0)))
    return (out ** 2).sum()
per_sample = vmap(grad(loss_fn), in_dims=(None, 0))(params, x)
print({k: tuple(v.shape) for k, v in per_sample.items()})
print(per_sample["lin2.bias"])

# Hutchinson estimate with fixed Rademacher probes vs exact
eps = torch.tensor([[1., -1.], [-1., 1.], [1., 1.], [-1., -1.], [1., -1.]])
xh = x.clone().requires_grad_(True)
fx = vf(torch.tensor(0.3), xh)
vjp = torch.autograd.grad(fx, xh, grad_outputs=eps, create_graph=True)[0]
hutch = (vjp * eps).sum(-1)
print("hutchinson", hutch)
print("hutch requires grad", hutch.requires_grad, hutch.grad_fn is not None)

# discrete change of variables for one Euler step x -> x + h f(x): log|det J| per sample
h = 0.1
step = lambda xi: xi + h * f_single(xi, torch.tensor(0.0))
J_step = vmap(jacrev(step))(x)
sign, logabsdet = torch.linalg.slogdet(J_step)
print("sign", sign, "logabsdet", logabsdet)
print("vmap slogdet", vmap(lambda m: torch.linalg.slogdet(m)[1])(J_step))
print("vmap det", vmap(torch.linalg.det)(J_step))
print("first-order approx h*div", h * vmap(torch.trace)(vmap(jacrev(f_single), in_dims=(0, None))(x, torch.tensor(0.0))))
print("jac row norms", vmap(lambda m: m.norm(dim=-1))(J_step)[:2])
print("normalized fields", vmap(lambda v: torch.nn.functional.normalize(v, dim=0))(vf(torch.tensor(0.0), x))[:2])
