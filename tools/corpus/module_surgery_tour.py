"""Model surgery as fine-tuning scripts do it: swap layers by dotted path (set_submodule),
convert parameters with _apply, inspect what dir() offers, and the errors of other backends."""
import torch
import torch.nn as nn


def fixed_init(module):
    # seed-independent weights, so the printout is the same under any random stream
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (1 + 0.1 * i))


net = nn.Sequential(
    nn.Linear(4, 6), nn.ReLU(),
    nn.Sequential(nn.Linear(6, 6), nn.Tanh()),
    nn.Linear(6, 2),
)
fixed_init(net)
x = torch.linspace(-1, 1, 8).reshape(2, 4)
print(net(x))

net.set_submodule("2.1", nn.Sigmoid())
net.set_submodule("1", nn.LeakyReLU(0.1))
print(net)
print(net(x))
for target, module, kw in (("2.9", nn.ReLU(), {"strict": True}), ("0.weight", nn.ReLU(), {}),
                           ("", nn.ReLU(), {}), ("3", "not a module", {})):
    try:
        net.set_submodule(target, module, **kw)
    except (AttributeError, ValueError) as e:
        print(type(e).__name__, e)

loss = net(x).pow(2).sum()
loss.backward()
weight = net[0].weight
net._apply(lambda t: t.double())
print(net[0].weight is weight, net[0].weight.dtype, net[0].weight.grad.dtype, net[0].weight.requires_grad)
print(net(x.double()).dtype, net(x.double()).sum().item())
net._apply(lambda t: t * 0.5 if t.is_floating_point() else t)
print(net[3].bias)

names = dir(net)
print([n for n in ("set_submodule", "get_submodule", "_apply", "state_dict", "T_destination",
                   "call_super_init", "dump_patches", "0", "3") if n in names])
print(nn.Module.call_super_init, nn.Module.dump_patches, nn.Module.T_destination)
for backend in ("xpu", "ipu", "mtia"):
    print(backend, type(getattr(nn.ReLU(), backend)()).__name__, end=" | ")
    try:
        getattr(nn.Linear(2, 2), backend)()
    except (AssertionError, RuntimeError) as e:
        print(type(e).__name__, str(e).split(".")[0])
