"""Custom optimizers as research code writes them: an Adan-style optimizer subclassing
torch.optim.Optimizer (three moments, a previous-gradient state, a restart condition kept in the
param group), a Lion-style sign update with decoupled decay under @torch.no_grad() and a closure,
their state_dict round trips, add_param_group; then the functional API
(torch.optim._functional.adam / sgd / rmsprop, torch.optim.adam.adam) driving state kept in
plain lists by a hand-written loop that takes gradients from torch.autograd.grad."""
import math

import torch
import torch.nn.functional as F
from torch.optim import Optimizer


class AdanLike(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.02, 0.08, 0.01), eps=1e-8, weight_decay=0.0,
                 restart_every=None):
        if len(betas) != 3:
            raise ValueError(f"expected three betas, got {betas}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      restart_every=restart_every))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            b1, b2, b3 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    for k in ("m", "v", "n", "prev"):
                        st[k] = torch.zeros_like(p)
                g = p.grad
                if st["step"] > 0:
                    diff = g - st["prev"]
                    st["m"].mul_(1 - b1).add_(g, alpha=b1)
                    st["v"].mul_(1 - b2).add_(diff, alpha=b2)
                    st["n"].mul_(1 - b3).add_((g + (1 - b2) * diff) ** 2, alpha=b3)
                st["step"] += 1
                c1, c2, c3 = (1 / (1 - (1 - b) ** st["step"]) for b in (b1, b2, b3))
                rate = group["lr"] / (st["n"] * c3).sqrt().add_(group["eps"])
                p.addcmul_(rate, st["m"] * c1 + (1 - b2) * st["v"] * c2, value=-1.0)
                p.div_(1 + group["weight_decay"] * group["lr"])
                if group["restart_every"] and st["step"] % group["restart_every"] == 0:
                    st["m"].copy_(g)
                    st["v"].zero_()
                    st["n"].copy_(g ** 2)
                st["prev"].copy_(g)
        return loss


class SignMomentum(Optimizer):
    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.mul_(1 - group["lr"] * group["weight_decay"])
                buf = self.state[p].setdefault("exp_avg", torch.zeros_like(p))
                update = torch.lerp(p.grad, buf, beta1).sign_()
                p.add_(update, alpha=-group["lr"])
                buf.lerp_(p.grad, 1 - beta2)
        return loss


def net():
    m = torch.nn.Sequential(torch.nn.Linear(3, 12), torch.nn.SiLU(), torch.nn.Linear(12, 1))
    with torch.no_grad():
        for k, p in enumerate(m.parameters()):
            p.copy_(torch.cos(torch.arange(p.numel()) * 0.7 + k).reshape(p.shape) * 0.5)
    return m


x = torch.linspace(-2, 2, 60).reshape(20, 3)
y = (x[:, :1] * x[:, 1:2]).tanh() + 0.1 * x[:, 2:]

for cls, kw in ((AdanLike, dict(lr=0.02, weight_decay=0.01, restart_every=4)),
                (SignMomentum, dict(lr=0.01, weight_decay=0.1))):
    model = net()
    opt = cls(model.parameters(), **kw)
    for it in range(10):
        def closure():
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            return loss
        loss = opt.step(closure)
        if it % 3 == 0:
            print(cls.__name__, it, f"{loss.item():.6f}", loss.requires_grad)
    sd = opt.state_dict()
    print(sorted(sd), sorted(sd["param_groups"][0]), sorted(sd["state"][0]))
    again = cls(model.parameters(), lr=123.0)
    again.load_state_dict(sd)
    first = model[0].weight
    print(again.param_groups[0]["lr"], again.state[first] is not opt.state[first],
          [torch.equal(a, b) if torch.is_tensor(a) else a == b
           for a, b in zip(again.state[first].values(), opt.state[first].values())])
    extra = torch.nn.Parameter(torch.ones(2))
    opt.add_param_group({"params": [extra], "lr": 0.5})
    print(len(opt.param_groups), opt.param_groups[1]["lr"], opt.param_groups[1]["betas"])
    try:
        opt.add_param_group({"params": [extra]})
    except ValueError as e:
        print("ValueError", str(e)[:60])

print(repr(AdanLike([torch.nn.Parameter(torch.zeros(1))])).splitlines()[:3])
try:
    AdanLike([torch.nn.Parameter(torch.zeros(1))], betas=(0.1, 0.2))
except ValueError as e:
    print("ValueError", e)

# the functional API with state in plain lists and gradients from autograd.grad
import torch.optim._functional as FO
from torch.optim.adam import adam

w = torch.nn.Parameter(torch.tensor([1.5, -0.5, 0.25], dtype=torch.float64))


def rosen(v):
    return sum(100 * (v[i + 1] - v[i] ** 2) ** 2 + (1 - v[i]) ** 2 for i in range(len(v) - 1))


for name in ("adam", "adamw", "amsgrad", "sgd", "rmsprop"):
    v = w.detach().clone()
    m, s, vmax = [torch.zeros_like(v)], [torch.zeros_like(v)], [torch.zeros_like(v)]
    steps, bufs = [torch.tensor(0.0)], [None]
    sq, gavg, mom = [torch.zeros_like(v)], [torch.zeros_like(v)], [torch.zeros_like(v)]
    for it in range(25):
        v.requires_grad_(True)
        g, = torch.autograd.grad(rosen(v), [v])
        v.requires_grad_(False)
        if name in ("adam", "amsgrad"):
            adam([v], [g], m, s, vmax, steps, amsgrad=name == "amsgrad", beta1=0.9, beta2=0.99,
                 lr=0.05, weight_decay=0.0, eps=1e-8, maximize=False)
        elif name == "adamw":
            FO.adamw([v], [g], m, s, vmax, steps, amsgrad=False, beta1=0.9, beta2=0.99, lr=0.05,
                     weight_decay=0.1, eps=1e-8, maximize=False)
        elif name == "sgd":
            FO.sgd([v], [g], bufs, weight_decay=0.0, momentum=0.9, lr=2e-5, dampening=0.0,
                   nesterov=True, maximize=False)
        else:
            FO.rmsprop([v], [g], sq, gavg, mom, steps, lr=0.01, alpha=0.9, eps=1e-8,
                       weight_decay=0.0, momentum=0.5, centered=True)
    print(name, [round(t, 6) for t in v.tolist()], f"{rosen(v).item():.6f}", steps[0].item(),
          None if bufs[0] is None else [round(t, 6) for t in bufs[0].tolist()])

p = torch.nn.Parameter(torch.ones(2))
try:
    FO.sgd([p], [torch.ones(2)], [None], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0,
           nesterov=False, maximize=False)
except RuntimeError as e:
    print("RuntimeError", str(e)[:50])
try:
    adam([p.detach()], [torch.ones(2)], [torch.zeros(2)], [torch.zeros(2)], [], [1],
         amsgrad=False, beta1=0.9, beta2=0.99, lr=0.1, weight_decay=0.0, eps=1e-8,
         maximize=False)
except RuntimeError as e:
    print("RuntimeError", e)
print(math.isclose(p.sum().item(), 2.0))
