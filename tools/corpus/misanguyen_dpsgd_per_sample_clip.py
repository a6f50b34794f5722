"""DP-SGD by hand on a small classifier with deterministic weights, data and noise: per-sample
gradients three ways (a microbatch loop of backward with .grad clones, torch.func
vmap(grad(...)) over functional_call with detached parameter and buffer dicts, and Opacus-style
forward/full-backward hooks building grad_sample with einsum), per-sample L2 norms and clip
factors, clip_grad_norm_ (L2, inf, 1-norm, foreach, on a tensor without .grad), clip_grad_value_,
Gaussian noise scaled by the noise multiplier (from a numpy generator, so it is deterministic),
the noisy averaged step, and a numpy RDP accountant for the sampled Gaussian mechanism's
epsilon."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap
from torch.nn.utils import clip_grad_norm_, clip_grad_value_

noise_rng = np.random.default_rng(3)
B, MAX_NORM, SIGMA, LR = 6, 1.0, 1.1, 0.1


def fill_(module, scale):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.7 + 2 * i).view_as(p) * scale)


model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
fill_(model, 0.5)
x = torch.sin(torch.arange(B * 5, dtype=torch.float32).view(B, 5) * 0.37) * 2
y = torch.tensor([0, 2, 1, 1, 0, 2])
criterion = nn.CrossEntropyLoss()

# 1. microbatches
loop = {n: [] for n, _ in model.named_parameters()}
for xi, yi in zip(x, y):
    model.zero_grad()
    criterion(model(xi.unsqueeze(0)), yi.unsqueeze(0)).backward()
    for n, p in model.named_parameters():
        loop[n].append(p.grad.detach().clone())
loop = {n: torch.stack(g) for n, g in loop.items()}

# 2. torch.func
params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    predictions = functional_call(model, (params, buffers), (sample.unsqueeze(0),))
    return criterion(predictions, target.unsqueeze(0))


per_sample = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, x, y)
print({k: tuple(v.shape) for k, v in per_sample.items()})
print(all(torch.allclose(per_sample[n], loop[n], atol=1e-6) for n in loop))

# 3. hooks
acts = {}


def fwd_hook(module, inp, out):
    acts[module] = inp[0].detach()


def bwd_hook(module, grad_input, grad_output):
    g = grad_output[0].detach()
    module.weight.grad_sample = torch.einsum("n...i,n...j->nij", g, acts[module])
    module.bias.grad_sample = torch.einsum("n...k->nk", g)


handles = []
for m in model.modules():
    if isinstance(m, nn.Linear):
        handles += [m.register_forward_hook(fwd_hook), m.register_full_backward_hook(bwd_hook)]
model.zero_grad()
F.cross_entropy(model(x), y, reduction="sum").backward()
for h in handles:
    h.remove()
print([torch.allclose(p.grad_sample, per_sample[n], atol=1e-5) for n, p in model.named_parameters()])
print([torch.allclose(p.grad_sample.sum(0), p.grad, atol=1e-5) for p in model.parameters()])

# clipping and noise
flat = torch.cat([g.reshape(B, -1) for g in per_sample.values()], dim=1)
norms = flat.norm(2, dim=1)
print("per-sample norms", norms)
factor = (MAX_NORM / (norms + 1e-6)).clamp(max=1.0)
clipped = {k: v * factor.view(-1, *([1] * (v.dim() - 1))) for k, v in per_sample.items()}
print("clipped norms", torch.cat([v.reshape(B, -1) for v in clipped.values()], 1).norm(dim=1))
with torch.no_grad():
    for n, p in model.named_parameters():
        noise = torch.from_numpy(noise_rng.standard_normal(tuple(p.shape)).astype(np.float32))
        p.grad = (clipped[n].sum(0) + SIGMA * MAX_NORM * noise) / B
        p -= LR * p.grad
print(f"after step {model[0].weight.sum().item():.5f} {model[2].bias.sum().item():.5f}")

# clip_grad_norm_ flavours
g1 = nn.Parameter(torch.ones(2, 2)); g1.grad = torch.tensor([[3.0, 0.0], [0.0, 4.0]])
g2 = nn.Parameter(torch.ones(3)); g2.grad = torch.tensor([1.0, -2.0, 2.0])
total = clip_grad_norm_([g1, g2], max_norm=2.0)
print(total, total.dtype, g1.grad, g2.grad)
g2.grad = torch.tensor([1.0, -2.0, 2.0])
print(clip_grad_norm_(g2, 1.0, norm_type=float("inf")), g2.grad)
g2.grad = torch.tensor([1.0, -2.0, 2.0])
print(clip_grad_norm_([g2], 1.0, norm_type=1, foreach=True), g2.grad)
print(clip_grad_norm_(torch.ones(3), 1.0))
g2.grad = torch.tensor([1.0, -2.0, 2.0])
clip_grad_value_([g2], 0.5)
print(g2.grad)
g2.grad = torch.tensor([float("nan"), 1.0, 1.0])
try:
    clip_grad_norm_([g2], 1.0, error_if_nonfinite=True)
except RuntimeError as e:
    print("RuntimeError", str(e)[:70])


# RDP accountant (numpy) for the sampled Gaussian mechanism, integer orders
def rdp_sgm(q, sigma, alpha):
    terms = [math.lgamma(alpha + 1) - math.lgamma(k + 1) - math.lgamma(alpha - k + 1)
             + k * math.log(q) + (alpha - k) * math.log(1 - q) + (k * k - k) / (2 * sigma ** 2)
             for k in range(alpha + 1)]
    m = max(terms)
    return (m + math.log(sum(math.exp(t - m) for t in terms))) / (alpha - 1)


orders = np.arange(2, 33)
q, steps, delta = B / 600, 500, 1e-5
rdp = np.array([rdp_sgm(q, SIGMA, int(a)) for a in orders]) * steps
eps = rdp - (np.log(delta) + np.log(orders)) / (orders - 1) + np.log((orders - 1) / orders)
print(f"epsilon {eps.min():.4f} at order {orders[eps.argmin()]}")
print(torch.special.gammaln(torch.tensor([3.5, 10.0])), torch.logsumexp(torch.tensor(rdp[:4]), 0).dtype)
