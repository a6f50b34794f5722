"""torch.func Jacobians and Hessians: vjp under vmap, jacrev/jacfwd with argnums, hessian and its
compositions, batch Jacobians two ways (which agree bit for bit), hvp two ways, per-sample
gradients, vmap's in_dims/out_dims/randomness."""
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, hessian, jacfwd, jacrev, jvp, vjp, vmap


def layer(weight, bias, x):
    return F.linear(x, weight, bias).tanh()


def fixed(*shape, scale=1.0, shift=0.0):
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(n, dtype=torch.float32).reshape(shape) * 0.37 + shift).sin() * scale


D = 6
weight, bias, x = fixed(D, D), fixed(D, shift=1.0), fixed(D, shift=2.0)

# Row by row with autograd.grad, then all rows by vmap of a vjp.
xp = x.clone().requires_grad_()
basis = torch.eye(D)
rows = torch.stack([torch.autograd.grad(layer(weight, bias, xp), xp, e)[0] for e in basis])
print('jacobian', rows.shape)
print('first row', rows[0])
_, vjp_fn = vjp(partial(layer, weight, bias), x)
(by_vmap,) = vmap(vjp_fn)(basis)
print('vmap(vjp) == rows:', torch.allclose(by_vmap, rows))
by_jacrev = jacrev(layer, argnums=2)(weight, bias, x)
print('jacrev == rows:', torch.allclose(by_jacrev, rows))
jw, jb = jacrev(layer, argnums=(0, 1))(weight, bias, x)
print('w.r.t. weight and bias', jw.shape, jb.shape)
print('d out / d bias diagonal', torch.diagonal(jb))

# Tall and wide Jacobians, both modes.
for d_in, d_out in ((4, 12), (12, 4)):
    w, b, v = fixed(d_out, d_in, scale=0.5), fixed(d_out), fixed(d_in, shift=0.3)
    forward_mode = jacfwd(layer, argnums=2)(w, b, v)
    reverse_mode = jacrev(layer, argnums=2)(w, b, v)
    print(d_in, '->', d_out, forward_mode.shape, 'jacfwd == jacrev:',
          torch.allclose(forward_mode, reverse_mode, atol=1e-6))

# Hessians.
w, b, v = fixed(3, 8, scale=0.4), fixed(3), fixed(8, shift=0.5)
hess = hessian(layer, argnums=2)(w, b, v)
fwd_fwd = jacfwd(jacfwd(layer, argnums=2), argnums=2)(w, b, v)
rev_rev = jacrev(jacrev(layer, argnums=2), argnums=2)(w, b, v)
print('hessian', hess.shape, torch.allclose(hess, fwd_fwd, atol=1e-6),
      torch.allclose(hess, rev_rev, atol=1e-6))
print('hessian[0, :2, :2]', hess[0, :2, :2])

# Batch Jacobians: vmap over samples, or the Jacobian of the batch-summed outputs.
w, b, batch = fixed(5, 4), fixed(5), fixed(7, 4, shift=0.9)
per_sample = vmap(jacrev(layer, argnums=2), in_dims=(None, None, 0))(w, b, batch)
summed = jacrev(lambda w, b, x: layer(w, b, x).sum(0), argnums=2)(w, b, batch).movedim(1, 0)
print('batch jacobian', per_sample.shape, 'identical:', torch.equal(per_sample, summed))
batch_hess = vmap(hessian(layer, argnums=2), in_dims=(None, None, 0))(w, b, batch)
print('batch hessian', batch_hess.shape, batch_hess[3, 1, 0])

# Hessian-vector products: forward-over-reverse and reverse-over-reverse.
def energy(t):
    return (t.sin() * t).sum()


point, direction = fixed(10, shift=0.1), fixed(10, shift=1.7)
fwd_over_rev = jvp(grad(energy), (point,), (direction,))[1]
_, vjp_of_grad = vjp(grad(energy), point)
rev_over_rev = vjp_of_grad(direction)[0]
print('hvp', fwd_over_rev[:4], torch.allclose(fwd_over_rev, rev_over_rev, atol=1e-6))

# Per-sample gradients of a small model.
model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(fixed(*p.shape, shift=i))
params = {k: v.detach() for k, v in model.named_parameters()}
targets = torch.tensor([0, 1, 1, 0, 1, 0, 0])


def sample_loss(params, sample, target):
    logits = functional_call(model, params, (sample.unsqueeze(0),))
    return F.cross_entropy(logits, target.unsqueeze(0))


per_sample_grads = vmap(grad(sample_loss), in_dims=(None, 0, 0))(params, batch, targets)
for name, g in per_sample_grads.items():
    print('per-sample grad', name, tuple(g.shape), round(float(g.abs().sum()), 4))
model.zero_grad()
sample_loss(dict(model.named_parameters()), batch[2], targets[2]).backward()
print('sample 2 matches backward:',
      all(torch.allclose(per_sample_grads[k][2], p.grad, atol=1e-6)
          for k, p in model.named_parameters()))

# in_dims, out_dims, nesting, randomness.
m = fixed(3, 4)
print(vmap(lambda col: col.softmax(0), in_dims=1, out_dims=1)(m))
print(vmap(lambda r, s: r * s, in_dims=(0, None))(m, fixed(4)).sum())
print(vmap(vmap(lambda e: e ** 2))(m)[2])
outs = vmap(lambda r: (r.sum(), torch.ones(2)), out_dims=(0, None))(m)
print(outs[0], outs[1])
torch.manual_seed(0)
shared = vmap(lambda r: r + torch.rand(()), randomness='same')(m)
print('same noise for every row:', torch.allclose(shared - m, (shared - m)[0].expand(3, 4)))
try:
    vmap(lambda r: r + torch.rand(4))(m)
except RuntimeError as e:
    print('randomness error:', 'randomness' in str(e))
try:
    vmap(lambda r: r.sum().item())(m)
except RuntimeError as e:
    print('item under vmap:', type(e).__name__)
