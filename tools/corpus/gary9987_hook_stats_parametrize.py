"""Module hooks and parametrizations as model-compression scripts use them, with deterministic
weights: forward hooks printing parameter shapes per container, a FLOP counter walking
named_modules() with removable handles, thop-style per-module float64 buffers fed from hooks,
FlopCounterMode's total, forward pre-hooks that rescale inputs, forward hooks that replace
outputs, with_kwargs hooks, prepend ordering, full backward hooks and backward pre-hooks
(activation-gradient statistics and a rescaled gradient), tensor hooks on activations, a deepcopy
that keeps hooks, then torch.nn.utils.parametrize (a custom standardisation, a symmetric matrix
with right_inverse, a shape-preserving chain of two parametrizations, cached(),
remove_parametrizations) and parametrizations.orthogonal / weight_norm."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as parametrize
from torch.nn.utils.parametrizations import orthogonal, weight_norm
from torch.utils.flop_counter import FlopCounterMode


def fill(module, scale=0.15):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            k = torch.arange(p.numel(), dtype=torch.float64)
            p.copy_((torch.sin(k * 0.61 + 0.4 * i) * scale).reshape(p.shape))
    return module


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 6, 3), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(6, 8, 3, groups=2), nn.ReLU())
        self.flatten = nn.Flatten()
        self.head = nn.Sequential(nn.Linear(8 * 2 * 2, 12), nn.Tanh(), nn.Linear(12, 4))

    def forward(self, x):
        return self.head(self.flatten(self.features(x)))


def show_params(module, inputs, output):
    print("Op:", type(module).__name__, [list(p.shape) for p in module.parameters()],
          tuple(inputs[0].shape), "->", tuple(output.shape))


net = fill(Net())
x = torch.linspace(-3, 3, 2 * 3 * 10 * 10).reshape(2, 3, 10, 10).cos()
handles = [net.features.register_forward_hook(show_params), net.head.register_forward_hook(show_params)]
print(net(x))
for h in handles:
    h.remove()

flops = {}


def counter(name):
    def hook(m, inputs, out):
        if isinstance(m, nn.Conv2d):
            per = m.in_channels // m.groups * m.kernel_size[0] * m.kernel_size[1]
            flops[name] = out.numel() * per
        elif isinstance(m, nn.Linear):
            flops[name] = inputs[0].shape[0] * m.in_features * m.out_features
    return hook


handles = [m.register_forward_hook(counter(n)) for n, m in net.named_modules()
           if isinstance(m, (nn.Conv2d, nn.Linear))]
with torch.no_grad():
    net(x)
print("flops", flops, sum(flops.values()))
for h in handles:
    h.remove()

def count_ops(m, inputs, out):
    m.total_ops += torch.DoubleTensor([out.numel()])


leaves = [m for m in net.modules() if not list(m.children())]
for m in leaves:
    m.register_buffer("total_ops", torch.zeros(1, dtype=torch.float64))
    m.register_buffer("total_params", torch.zeros(1, dtype=torch.float64))
    for p in m.parameters():
        m.total_params += torch.DoubleTensor([p.numel()])
    m.register_forward_hook(count_ops)
with torch.no_grad():
    net(x)
ops = sum(m.total_ops for m in leaves)
params = sum(m.total_params for m in leaves)
print("thop-style", ops, params, "%.3fK" % (params.item() / 1e3))
print("buffer keys", [k for k in net.state_dict() if k.startswith("features.0")])
fc = FlopCounterMode(display=False)
with fc:
    net(x).sum().backward()
print("FlopCounterMode total", fc.get_total_flops())
net.zero_grad()

order = []
lin = net.head[0]
hooks = [lin.register_forward_pre_hook(lambda m, a: (a[0] * 0.5,)),
         lin.register_forward_pre_hook(lambda m, a: order.append("pre-first"), prepend=True),
         lin.register_forward_hook(lambda m, a, o: o.clamp(min=-0.1)),
         lin.register_forward_hook(lambda m, a, o: order.append("post-first"), prepend=True)]
print("rescaled", net(x))
print("order", order)
for h in hooks:
    h.remove()
kw = net.register_forward_pre_hook(lambda m, a, k: (a, k) if print("kwargs", sorted(k)) else None,
                                   with_kwargs=True)
net(x=x)
kw.remove()

stats = {}


def grad_stats(name):
    def hook(m, grad_input, grad_output):
        g = grad_output[0]
        stats[name] = (tuple(g.shape), round(g.abs().mean().item(), 6), grad_input[0] is None)
    return hook


for n, m in net.named_modules():
    if isinstance(m, (nn.Conv2d, nn.Linear, nn.ReLU, nn.Tanh)):
        m.register_full_backward_hook(grad_stats(n))
xg = x.clone().requires_grad_()
net(xg).pow(2).sum().backward()
for k in sorted(stats):
    print("grad", k, stats[k])
first = xg.grad.abs().sum().item()
net.head[2].register_full_backward_pre_hook(lambda m, go: (go[0] * 0.5,))
xg.grad = None
net(xg).pow(2).sum().backward()
print("halved", round(xg.grad.abs().sum().item() / first, 6))

acts = {}
tagged = copy.deepcopy(net)
print("deepcopy keeps hooks", len(tagged.head[2]._backward_pre_hooks), len(tagged.features[0]._backward_hooks))


def keep(name):
    def hook(m, i, o):
        acts[name] = o
        o.register_hook(lambda g: acts.__setitem__(name + ".grad", g.norm().item()))
    return hook


for n, m in tagged.head.named_children():
    m.register_forward_hook(keep(n))
tagged(x).sum().backward()
for k in sorted(acts):
    v = acts[k]
    print("act", k, round(v, 6) if isinstance(v, float) else (tuple(v.shape), round(v.mean().item(), 6),
                                                            (v > 0).float().mean().item()))


class Standardize(nn.Module):
    def forward(self, w):
        dims = tuple(range(1, w.ndim))
        return (w - w.mean(dims, keepdim=True)) / (w.std(dims, keepdim=True) + 1e-5)


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class Scale(nn.Module):
    def forward(self, X):
        return 2 * X

    def right_inverse(self, Y):
        return Y / 2


conv = fill(nn.Conv2d(2, 3, 3))
parametrize.register_parametrization(conv, "weight", Standardize())
print(conv)
print("standardized", bool(conv.weight.mean(dim=(1, 2, 3)).abs().max() < 1e-6), conv.weight.std(dim=(1, 2, 3)))
print("keys", sorted(conv.state_dict()))
conv(x[:, :2]).sum().backward()
print("original grad", conv.parametrizations.weight.original.grad.abs().sum())
sym = fill(nn.Linear(3, 3))
parametrize.register_parametrization(sym, "weight", Symmetric())
parametrize.register_parametrization(sym, "weight", Scale())
print("symmetric", torch.equal(sym.weight, sym.weight.T))
sym.weight = torch.tensor([[2.0, 4.0, 6.0], [4.0, 8.0, 10.0], [6.0, 10.0, 12.0]])
print("original", sym.parametrizations.weight.original)
with parametrize.cached():
    print("cached", sym.weight is sym.weight)
print("uncached", sym.weight is sym.weight)
parametrize.remove_parametrizations(sym, "weight", leave_parametrized=True)
print(type(sym).__name__, sym.weight, parametrize.is_parametrized(sym))
q = orthogonal(fill(nn.Linear(5, 3)))
print("orthogonal rows", torch.allclose(q.weight @ q.weight.T, torch.eye(3), atol=1e-5))
wn = weight_norm(fill(nn.Linear(4, 3)))
print("weight_norm", sorted(n for n, _ in wn.named_parameters()))
print("g", wn.parametrizations.weight.original0.flatten())
print("rows", wn.weight.norm(dim=1))
