"""Continual learning and training-loop bookkeeping on a small MLP with deterministic weights and
data: a diagonal Fisher kept as an exponential moving average of squared gradients (keyed by
id(param)) with its quadratic penalty, Synaptic Intelligence (per-parameter path integrals of
-grad * delta, importance omega = W / (delta^2 + eps) at each task boundary), a reservoir-style
replay buffer of (x, y) pairs mixed into later tasks with torch.stack, weighted federated
averaging of client state_dicts (float casts of num_batches_tracked, load_state_dict), and a
learning-rate range test (exponentially growing LambdaLR, bias-corrected smoothed loss, model
restored from an in-memory torch.save afterwards)."""
import copy
import io
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def fill_(module, scale):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.53 + 0.7 * i).view_as(p) * scale)


def task_data(n, shift):
    t = torch.arange(n * 5, dtype=torch.float32).view(n, 5)
    x = torch.sin(t * 0.37 + shift)
    y = ((x[:, 0] + shift * x[:, 1]) * 3).floor().long().clamp(-1, 1) + 1
    return x, y


class EMAFisher:
    def __init__(self, decay=0.8):
        self.decay, self.stats, self.anchor = decay, {}, {}

    def update(self, params):
        for p in params:
            if p.grad is None:
                continue
            key = str(id(p))
            g2 = p.grad.detach() ** 2
            self.stats[key] = g2 if key not in self.stats else self.decay * self.stats[key] + (1 - self.decay) * g2

    def consolidate(self, params):
        self.anchor = {str(id(p)): p.detach().clone() for p in params}

    def penalty(self, params):
        total = 0.0
        for p in params:
            key = str(id(p))
            if key in self.anchor:
                total = total + (self.stats[key] * (p - self.anchor[key]) ** 2).sum()
        return total


class SynapticIntelligence:
    def __init__(self, model, c=0.3, eps=1e-2):
        self.model, self.c, self.eps = model, c, eps
        named = list(model.named_parameters())
        self.W = {n: torch.zeros_like(p) for n, p in named}
        self.prev = {n: p.detach().clone() for n, p in named}
        self.start = {n: p.detach().clone() for n, p in named}
        self.omega = {n: torch.zeros_like(p) for n, p in named}

    def accumulate(self, grads):
        for n, p in self.model.named_parameters():
            self.W[n].add_(-grads[n] * (p.detach() - self.prev[n]))
            self.prev[n] = p.detach().clone()

    def consolidate(self):
        for n, p in self.model.named_parameters():
            delta = p.detach() - self.start[n]
            self.omega[n] += self.W[n] / (delta ** 2 + self.eps)
            self.W[n].zero_()
            self.start[n] = p.detach().clone()

    def penalty(self):
        return self.c * sum(((self.omega[n] * (p - self.start[n]) ** 2).sum() for n, p in self.model.named_parameters()))


class Replay:
    def __init__(self, capacity):
        self.capacity, self.items, self.seen = capacity, [], 0

    def add(self, xs, ys):
        for xi, yi in zip(xs, ys):
            if len(self.items) < self.capacity:
                self.items.append((xi.clone(), yi.clone()))
            elif (self.seen * 7) % (self.seen + 1) < self.capacity:
                self.items[(self.seen * 7) % (self.seen + 1)] = (xi.clone(), yi.clone())
            self.seen += 1

    def batch(self, k):
        xs, ys = zip(*self.items[:k])
        return torch.stack(xs), torch.stack(ys)


model = nn.Sequential(nn.Linear(5, 10), nn.ReLU(), nn.Linear(10, 3))
fill_(model, 0.5)
fisher, si, replay = EMAFisher(), SynapticIntelligence(model), Replay(9)
opt = torch.optim.SGD(model.parameters(), lr=0.15)

print("== continual learning over 3 tasks")
for task in range(3):
    x, y = task_data(12, shift=0.8 * task)
    for step in range(4):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        if task > 0:
            xr, yr = replay.batch(6)
            loss = loss + 0.5 * F.cross_entropy(model(xr), yr) + si.penalty() + 5.0 * fisher.penalty(model.parameters())
        loss.backward()
        grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
        fisher.update(model.parameters())
        opt.step()
        si.accumulate(grads)
        print(task, step, f"{loss.item():.6f}")
    replay.add(x, y)
    si.consolidate()
    fisher.consolidate(model.parameters())
    with torch.no_grad():
        accs = [(model(task_data(12, 0.8 * t)[0]).argmax(1) == task_data(12, 0.8 * t)[1]).float().mean().item() for t in range(task + 1)]
    print("  accuracies", [round(a, 4) for a in accs], "buffer", len(replay.items), replay.seen)
print({n: round(o.sum().item(), 5) for n, o in si.omega.items()})
print([round(v.sum().item(), 7) for v in fisher.stats.values()])
xs, ys = replay.batch(4)
print(xs.shape, ys.dtype, ys)

print("== weighted FedAvg of three clients")
global_model = nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 3))
fill_(global_model, 0.4)
sizes = [12, 8, 4]
clients = []
for ci, n in enumerate(sizes):
    local = copy.deepcopy(global_model)
    o = torch.optim.SGD(local.parameters(), lr=0.1, momentum=0.5)
    x, y = task_data(n, shift=0.3 * ci)
    for _ in range(2):
        o.zero_grad()
        F.cross_entropy(local(x), y).backward()
        o.step()
    clients.append(local.state_dict())
weights = [n / sum(sizes) for n in sizes]
avg = copy.deepcopy(clients[0])
for k in avg:
    avg[k] = sum(w * sd[k].float() for w, sd in zip(weights, clients))
global_model.load_state_dict(avg)
for k, v in global_model.state_dict().items():
    print(k, v.dtype, f"{v.float().sum().item():.6f}")

print("== learning-rate range test")
buf = io.BytesIO()
torch.save(model.state_dict(), buf)
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda it: 10 ** (it / 3))
x, y = task_data(24, shift=0.2)
avg_loss, best, beta = 0.0, None, 0.7
for it in range(12):
    opt.zero_grad()
    loss = F.cross_entropy(model(x[(it % 3) * 8:(it % 3 + 1) * 8]), y[(it % 3) * 8:(it % 3 + 1) * 8])
    avg_loss = beta * avg_loss + (1 - beta) * loss.item()
    smoothed = avg_loss / (1 - beta ** (it + 1))
    if best is not None and smoothed > 4 * best:
        print("diverged at lr", f"{sched.get_last_lr()[0]:.6g}")
        break
    best = smoothed if best is None else min(best, smoothed)
    loss.backward()
    opt.step()
    print(it, f"{math.log10(sched.get_last_lr()[0]):.4f}", f"{smoothed:.6f}")
    sched.step()
buf.seek(0)
model.load_state_dict(torch.load(buf))
print(f"{F.cross_entropy(model(x), y).item():.6f}")
