"""Forward-mode AD: dual tensors, modules with dual parameters, custom Functions with a jvp
(checked by gradcheck's forward mode), and the functorch package's transforms."""
import functools

import torch
import torch.autograd.forward_ad as fwAD
import torch.nn as nn
from torch.func import functional_call

x = torch.linspace(-1.0, 1.0, 6).reshape(2, 3)
direction = torch.full((2, 3), 0.5)
other = torch.arange(6.0).reshape(2, 3) / 10


def g(a, b):
    return a.sin() * b + a ** 2


with fwAD.dual_level():
    dual = fwAD.make_dual(x, direction)
    print('tangent kept as given:', fwAD.unpack_dual(dual).tangent is direction)
    out = g(dual, other)
    primal, tangent = fwAD.unpack_dual(out)
    print('primal', primal)
    print('directional derivative', tangent)
    print('by hand', (x.cos() * other + 2 * x) * direction)
print('after the level:', fwAD.unpack_dual(out).tangent)

# A module whose parameters are dual tensors: once by attribute, once through functional_call.
layer = nn.Linear(3, 2)
with torch.no_grad():
    layer.weight.copy_(torch.tensor([[0.2, -0.1, 0.4], [0.3, 0.5, -0.6]]))
    layer.bias.copy_(torch.tensor([0.05, -0.05]))
params = dict(layer.named_parameters())
tangents = {name: torch.ones_like(p) * 0.1 for name, p in params.items()}
with fwAD.dual_level():
    for name, p in params.items():
        delattr(layer, name)
        setattr(layer, name, fwAD.make_dual(p, tangents[name]))
    by_attribute = fwAD.unpack_dual(layer(x)).tangent
fresh = nn.Linear(3, 2)
with fwAD.dual_level():
    duals = {name: fwAD.make_dual(p, tangents[name]) for name, p in params.items()}
    by_call = fwAD.unpack_dual(functional_call(fresh, duals, (x,))).tangent
print('parameter jvp', by_attribute.detach())
print('same both ways:', torch.allclose(by_attribute, by_call))


class Cube(torch.autograd.Function):
    """Forward-mode only: its jvp reads what forward kept on ctx, then frees it."""

    @staticmethod
    def forward(ctx, t):
        ctx.square = t * t
        return ctx.square * t

    @staticmethod
    def jvp(ctx, t_dot):
        out = 3 * ctx.square * t_dot
        del ctx.square
        return out


class ScaledTanh(torch.autograd.Function):
    """setup_context style, both modes."""

    @staticmethod
    def forward(t, scale):
        return torch.tanh(t) * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        t, scale = inputs
        ctx.scale = scale
        ctx.save_for_forward(t)
        ctx.save_for_backward(t)

    @staticmethod
    def jvp(ctx, t_dot, scale_dot):
        (t,) = ctx.saved_tensors
        return ctx.scale * (1 - torch.tanh(t) ** 2) * t_dot

    @staticmethod
    def backward(ctx, grad):
        (t,) = ctx.saved_tensors
        return ctx.scale * (1 - torch.tanh(t) ** 2) * grad, None


p = torch.tensor([0.5, -1.0, 2.0], dtype=torch.double, requires_grad=True)
with fwAD.dual_level():
    d = fwAD.make_dual(p, torch.tensor([1.0, 2.0, -1.0], dtype=torch.double))
    print('Cube jvp', fwAD.unpack_dual(Cube.apply(d)).tangent)
    chained = ScaledTanh.apply(Cube.apply(d), 2.0).exp()
    print('chained jvp', fwAD.unpack_dual(chained).tangent.detach())
print('gradcheck, forward mode only:',
      torch.autograd.gradcheck(Cube.apply, (p,), check_forward_ad=True, check_backward_ad=False,
                               check_undefined_grad=False, check_batched_grad=False))
print('gradcheck, both modes:',
      torch.autograd.gradcheck(lambda t: ScaledTanh.apply(t, 1.5), (p,), check_forward_ad=True))
try:
    Cube.apply(p).sum().backward()
except NotImplementedError as e:
    print('Cube has no backward:', type(e).__name__)


class NoForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        return t * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


with fwAD.dual_level():
    try:
        NoForward.apply(fwAD.make_dual(p, torch.ones_like(p)))
    except NotImplementedError as e:
        print('no jvp:', e)

# functorch, the package the torch wheel ships beside torch.
import functorch as ft

a0, a1 = torch.linspace(0, 1, 4), torch.linspace(1, 2, 4)
t0, t1 = torch.ones(4), torch.full((4,), -0.5)
value, jvp_out = ft.jvp(lambda u, v: u ** 2 + v ** 2, (a0, a1), (t0, t1))
print('functorch.jvp', value, jvp_out)
half = functools.partial(lambda u, v: u * v.exp(), v=a1)
print('partial', ft.jvp(half, (a0,), (t0,))[1])

model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1)).eval()
with torch.no_grad():
    for i, prm in enumerate(model.parameters()):
        prm.copy_(torch.linspace(-0.5, 0.5, prm.numel()).reshape(prm.shape) * (i + 1))
fmodel, fparams, fbuffers = ft.make_functional_with_buffers(model)
print('params', [tuple(q.shape) for q in fparams], 'buffers', [tuple(b.shape) for b in fbuffers])
direction = tuple(torch.full_like(q, 0.2) for q in fparams)
out, out_dot = ft.jvp(lambda ps: fmodel(ps, fbuffers, x), (fparams,), (direction,))
print('model output', out.detach().flatten())
print('jvp w.r.t. parameters', out_dot.detach().flatten())
grads = ft.grad(lambda ps: fmodel(ps, fbuffers, x).pow(2).sum())(fparams)
print('grad norms', [round(float(q.norm()), 4) for q in grads])
print('vmap', ft.vmap(lambda r: r.sum() * 2)(x))
