"""Divergence estimators for a continuous normalising flow, in the style of
Keigo-Iwakuma/SGM-PyTorch (likelihood.py get_div_fn: the Hutchinson-Skilling estimator),
written anew.

Exercises: the exact Jacobian trace by one autograd.grad per dimension (create_graph=True),
the same trace with is_grads_batched=True, Hutchinson's estimator with Rademacher and Gaussian
probes (grad_outputs=noise) converging to it, requires_grad_ toggled inside enable_grad under
no_grad, an Euler-integrated instantaneous change of variables log-density with
MultivariateNormal.log_prob, and a few Adam steps on the flow's negative log-likelihood.
Noise comes from numpy so both runs draw the same probes.
"""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.RandomState(11)
torch.set_printoptions(precision=5)


class TimeField(nn.Module):
    def __init__(self, dim=2, width=24):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim + 1, width), nn.Softplus(), nn.Linear(width, width),
                                 nn.Tanh(), nn.Linear(width, dim))
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.from_numpy(rng.uniform(-0.4, 0.4, tuple(p.shape))).float())

    def forward(self, t, x):
        tt = torch.full_like(x[:, :1], float(t))
        return self.net(torch.cat([x, tt], dim=1))


def exact_trace(out, x):
    return sum(torch.autograd.grad(out[:, i].sum(), x, create_graph=True)[0][:, i]
               for i in range(x.shape[1]))


def batched_trace(out, x):
    d = x.shape[1]
    probes = torch.eye(d).unsqueeze(1).expand(d, *x.shape)
    rows = torch.autograd.grad(out, x, grad_outputs=probes, is_grads_batched=True, create_graph=True)[0]
    return torch.diagonal(rows, dim1=0, dim2=2).sum(-1)


def hutchinson(fn, x, t, noise):
    with torch.enable_grad():
        x.requires_grad_(True)
        inner = torch.sum(fn(t, x) * noise)
        g = torch.autograd.grad(inner, x)[0]
    x.requires_grad_(False)
    return torch.sum(g * noise, dim=tuple(range(1, x.dim())))


field = TimeField()
x = torch.from_numpy(rng.randn(5, 2)).float().requires_grad_(True)
out = field(0.3, x)
ex = exact_trace(out, x)
bt = batched_trace(out, x)
print("exact", ex, ex.grad_fn is not None)
print("batched == exact", torch.allclose(ex, bt, atol=1e-6))

with torch.no_grad():
    xs = x.detach()
    for kind in ["rademacher", "gaussian"]:
        estimates = []
        for _ in range(300):
            if kind == "rademacher":
                noise = torch.from_numpy(rng.randint(0, 2, xs.shape) * 2.0 - 1.0).float()
            else:
                noise = torch.from_numpy(rng.randn(*xs.shape)).float()
            estimates.append(hutchinson(field, xs, 0.3, noise))
        est = torch.stack(estimates).mean(0)
        print(kind, "requires_grad after", xs.requires_grad, "max error", f"{(est - ex.detach()).abs().max().item():.4f}",
              "close", bool((est - ex.detach()).abs().max() < 0.1))

base = torch.distributions.MultivariateNormal(torch.zeros(2), torch.eye(2))
data = torch.from_numpy(rng.randn(32, 2) * 0.4 + np.array([1.0, -0.5])).float()
opt = torch.optim.Adam(field.parameters(), lr=3e-3)
times = torch.linspace(1.0, 0.0, 6)
for step in range(4):
    opt.zero_grad()
    z, delta = data.clone().requires_grad_(True), torch.zeros(32)
    for t0, t1 in zip(times[:-1], times[1:]):
        dz = field(t0, z)
        div = exact_trace(dz, z)
        z = z + (t1 - t0) * dz
        delta = delta - (t1 - t0) * div
    nll = -(base.log_prob(z) + delta).mean()
    nll.backward()
    opt.step()
    print("step", step, f"nll {nll.item():.6f}", tuple(z.shape))
