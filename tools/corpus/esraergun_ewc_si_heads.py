"""Regularisation- and replay-based continual learning on a multi-head MLP with deterministic
weights and data, in the style of EsraErgun/Continual-Learning-EWC-SI (ewc.py: a Fisher dict per
task from squared gradients, zeroed copies via p.detach().clone().zero_(), parameter history, the
1/2 sum over tasks of F * (p - p_old)^2), written afresh with: Synaptic Intelligence (path
integral of -grad * delta, omega / (delta^2 + xi)), MAS importances from the squared output norm,
task heads in nn.ModuleList and nn.ModuleDict, LwF distillation with temperature softmax and
F.kl_div(log_target=True), and an A-GEM projection of flattened gradients (torch.dot).

Exercises: named_parameters dicts, zeros_like/clone/detach, in-place add_ into importance
buffers, p.grad is None for unused heads, ModuleDict keys/items, deepcopy of a frozen teacher,
parameters_to_vector-style flattening with view(-1)/copy_, optimizer steps with a penalty.
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_printoptions(precision=5)


def fill_(module, scale):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.61 + i).view_as(p) * scale)


class MultiHead(nn.Module):
    def __init__(self, tasks=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(5, 8), nn.Tanh())
        self.heads = nn.ModuleList([nn.Linear(8, 2) for _ in range(tasks)])
        self.extra = nn.ModuleDict({f"t{t}": nn.Linear(8, 2, bias=False) for t in range(tasks)})

    def forward(self, x, t):
        h = self.body(x)
        return self.heads[t](h) + 0.5 * self.extra[f"t{t}"](h)


def task(t, n=16):
    a = torch.arange(n * 5, dtype=torch.float32).view(n, 5)
    x = torch.cos(a * 0.29 + t) + 0.3 * t
    y = (x[:, 0] * x[:, 1] + 0.1 * t > x[:, 2]).long()
    return x, y


class EWC:
    def __init__(self):
        self.fishers, self.history = [], []

    def consolidate(self, model, x, y, t):
        fisher = {n: p.detach().clone().zero_() for n, p in model.named_parameters()}
        for i in range(0, len(x), 4):
            model.zero_grad()
            F.cross_entropy(model(x[i:i + 4], t), y[i:i + 4]).backward()
            for n, p in model.named_parameters():
                if p.requires_grad and p.grad is not None:
                    fisher[n] += p.grad.detach() ** 2
        self.fishers.append({n: f / (len(x) // 4) for n, f in fisher.items()})
        self.history.append({n: p.detach().clone() for n, p in model.named_parameters()})

    def penalty(self, model):
        losses = [(f[n] * (p - h[n]) ** 2).sum() for f, h in zip(self.fishers, self.history)
                  for n, p in model.named_parameters()]
        return 0.5 * sum(losses)


class SI:
    def __init__(self, model, xi=0.1):
        self.xi = xi
        self.w = {n: torch.zeros_like(p) for n, p in model.named_parameters()}
        self.omega = {n: torch.zeros_like(p) for n, p in model.named_parameters()}
        self.prev = {n: p.clone().detach() for n, p in model.named_parameters()}
        self.star = {n: p.clone().detach() for n, p in model.named_parameters()}

    def step(self, model):
        for n, p in model.named_parameters():
            if p.grad is not None:
                self.w[n].add_(-p.grad.detach() * (p.detach() - self.prev[n]))
            self.prev[n] = p.clone().detach()

    def consolidate(self, model):
        for n, p in model.named_parameters():
            delta = p.detach() - self.star[n]
            self.omega[n] += self.w[n] / (delta ** 2 + self.xi)
            self.w[n].zero_()
            self.star[n] = p.clone().detach()

    def penalty(self, model):
        return sum((self.omega[n] * (p - self.star[n]) ** 2).sum() for n, p in model.named_parameters())


def mas_importance(model, x, t):
    omega = {n: torch.zeros_like(p) for n, p in model.named_parameters()}
    for i in range(0, len(x), 8):
        model.zero_grad()
        model(x[i:i + 8], t).norm(2, dim=1).pow(2).mean().backward()
        for n, p in model.named_parameters():
            if p.grad is not None:
                omega[n] += p.grad.abs() / 2
    return omega


def flat_grad(model):
    return torch.cat([p.grad.view(-1) if p.grad is not None else torch.zeros(p.numel())
                      for p in model.parameters()])


def write_grad(model, g):
    i = 0
    for p in model.parameters():
        if p.grad is not None:
            p.grad.copy_(g[i:i + p.numel()].view_as(p))
        i += p.numel()


model = MultiHead()
fill_(model, 0.4)
ewc, si = EWC(), SI(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
teacher = None
memory = []
for t in range(3):
    x, y = task(t)
    for step in range(6):
        opt.zero_grad()
        out = model(x, t)
        loss = F.cross_entropy(out, y)
        if t > 0:
            loss = loss + 10.0 * ewc.penalty(model) + 0.1 * si.penalty(model)
            with torch.no_grad():
                old = teacher(x, t - 1)
            lwf = F.kl_div(F.log_softmax(model(x, t - 1) / 2.0, 1), F.log_softmax(old / 2.0, 1),
                           reduction="batchmean", log_target=True) * 4.0
            loss = loss + lwf
        loss.backward()
        if memory:
            g_cur = flat_grad(model)
            opt.zero_grad()
            mx, my, mt = memory[-1]
            F.cross_entropy(model(mx, mt), my).backward()
            g_ref = flat_grad(model)
            dot = torch.dot(g_cur, g_ref)
            if dot < 0:
                g_cur = g_cur - dot / torch.dot(g_ref, g_ref) * g_ref
            write_grad(model, g_cur)
            print("  agem dot", round(dot.item(), 6))
        opt.step()
        si.step(model)
    print("task", t, "loss", round(loss.item(), 5))
    ewc.consolidate(model, x, y, t)
    si.consolidate(model)
    omega = mas_importance(model, x, t)
    print("  fisher", {n: round(f.sum().item(), 6) for n, f in ewc.fishers[-1].items() if f.sum() > 0})
    print("  si", round(sum(o.sum() for o in si.omega.values()).item(), 5),
          "mas heads", [round(omega[f"heads.{k}.weight"].sum().item(), 5) for k in range(3)])
    teacher = copy.deepcopy(model).eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    memory.append((x[:6].clone(), y[:6].clone(), t))

with torch.no_grad():
    for t in range(3):
        x, y = task(t)
        print("acc task", t, (model(x, t).argmax(1) == y).float().mean().item())
print(list(model.extra.keys()), [type(h).__name__ for h in model.heads], len(ewc.fishers))
print([n for n, p in model.named_parameters() if p.grad is None])
