"""Layer-wise and second-order optimizers by hand: a LARS optimizer (trust ratio from weight and
gradient norms with torch.where, momentum buffers, exclusion of 1-D parameters), a LAMB-style
step, a K-FAC toy with forward hooks and full backward hooks collecting activation and
output-gradient covariances (einsum, running averages on attributes of the weights), damped
inverses and an eigen-decomposition preconditioner (torch.linalg.eigh), and a Shampoo-style
matrix inverse root; losses printed for each."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.optimizer import Optimizer, required


class LARS(Optimizer):
    def __init__(self, params, lr=required, momentum=0.9, weight_decay=0.0, trust=0.001):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay,
                                      trust=trust))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                dp = p.grad
                if p.ndim > 1:
                    dp = dp.add(p, alpha=g["weight_decay"])
                    pn, gn = torch.norm(p), torch.norm(dp)
                    one = torch.ones_like(pn)
                    q = torch.where(pn > 0.0, torch.where(gn > 0, g["trust"] * pn / gn, one), one)
                    dp = dp.mul(q)
                st = self.state[p]
                if "mu" not in st:
                    st["mu"] = torch.zeros_like(p)
                mu = st["mu"]
                mu.mul_(g["momentum"]).add_(dp)
                p.add_(mu, alpha=-g["lr"])
        return loss


class LambLike(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = torch.tensor(0.0)
                    st["m"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    st["v"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                st["step"] += 1
                b1, b2 = g["betas"]
                st["m"].lerp_(p.grad, 1 - b1)
                st["v"].mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                mh = st["m"] / (1 - b1 ** st["step"])
                vh = st["v"] / (1 - b2 ** st["step"])
                upd = mh / (vh.sqrt() + g["eps"]) + g["weight_decay"] * p
                ratio = (p.norm() / upd.norm()).clamp(max=10.0).nan_to_num(1.0)
                p.sub_(g["lr"] * ratio * upd)


def model_(bias=True):
    m = nn.Sequential(nn.Linear(5, 7, bias=bias), nn.Tanh(), nn.Linear(7, 3, bias=bias))
    with torch.no_grad():
        for k, p in enumerate(m.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel()) * 0.9 + k).reshape(p.shape) * 0.5)
    return m


x = torch.linspace(-1, 1, 150).reshape(30, 5).sin() * 2
t = torch.arange(30) % 3

for cls, kw in ((LARS, dict(lr=0.5, weight_decay=1e-4, trust=0.02)),
                (LambLike, dict(lr=0.05, weight_decay=0.01))):
    model = model_()
    opt = cls(model.parameters(), **kw)
    for it in range(8):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), t)
        loss.backward()
        opt.step()
        if it % 2 == 0:
            print(cls.__name__, it, f"{loss.item():.6f}")
    print(sorted(opt.state[model[0].weight]), opt.state_dict()["param_groups"][0]["lr"])
try:
    LARS(model_().parameters(), lr=-0.1)
except ValueError as e:
    print("ValueError", e)


# K-FAC: covariances from hooks
def fwd_hook(mod, inputs, output):
    a = inputs[0].detach()
    A = torch.einsum("bi,bj->ij", a, a) / a.shape[0]
    mod.weight.A = 0.9 * mod.weight.A + 0.1 * A if hasattr(mod.weight, "A") else A


def bwd_hook(mod, grad_input, grad_output):
    d = grad_output[0] * grad_output[0].shape[0]
    G = torch.einsum("bi,bj->ij", d, d) / d.shape[0]
    mod.weight.G = 0.9 * mod.weight.G + 0.1 * G if hasattr(mod.weight, "G") else G


for mode in ("inverse", "eigh"):
    model = model_(bias=False)
    handles = []
    for m in model.modules():
        if isinstance(m, nn.Linear):
            handles.append(m.register_forward_hook(fwd_hook))
            handles.append(m.register_full_backward_hook(bwd_hook))
    damping, lr = 0.1, 0.2
    for it in range(6):
        model.zero_grad()
        loss = F.cross_entropy(model(x), t)
        loss.backward()
        with torch.no_grad():
            for m in (model[0], model[2]):
                W = m.weight
                if mode == "inverse":
                    pi = (torch.trace(W.A) / W.A.shape[0]) / (torch.trace(W.G) / W.G.shape[0])
                    Ginv = torch.linalg.inv(W.G + torch.eye(W.G.shape[0]) * (damping / pi).sqrt())
                    Ainv = torch.linalg.inv(W.A + torch.eye(W.A.shape[0]) * (damping * pi).sqrt())
                    nat = Ginv @ W.grad @ Ainv
                else:
                    dg, qg = torch.linalg.eigh(W.G)
                    da, qa = torch.linalg.eigh(W.A)
                    v = qg.T @ W.grad @ qa
                    nat = qg @ (v / (torch.outer(dg, da) + damping)) @ qa.T
                W.sub_(lr * nat)
        print(mode, it, f"{loss.item():.6f}", tuple(model[0].weight.A.shape),
              tuple(model[2].weight.G.shape), model[0].weight.A.requires_grad)
    for h in handles:
        h.remove()


# Shampoo-style preconditioning: L^{-1/4} G R^{-1/4}
def inv_root(M, p, eps=1e-4):
    vals, vecs = torch.linalg.eigh(M + eps * torch.eye(M.shape[0], dtype=M.dtype))
    return vecs @ torch.diag(vals.clamp(min=eps).pow(-1.0 / p)) @ vecs.T


model = model_(bias=False)
Ls = {id(p): 1e-3 * torch.eye(p.shape[0]) for p in model.parameters()}
Rs = {id(p): 1e-3 * torch.eye(p.shape[1]) for p in model.parameters()}
for it in range(6):
    model.zero_grad()
    loss = F.cross_entropy(model(x), t)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            g = p.grad
            Ls[id(p)] += g @ g.T
            Rs[id(p)] += g.T @ g
            p -= 0.1 * inv_root(Ls[id(p)], 4) @ g @ inv_root(Rs[id(p)], 4)
    print("shampoo", it, f"{loss.item():.6f}")
print(torch.linalg.matrix_norm(Ls[id(model[0].weight)], ord="fro").item() > 0)
