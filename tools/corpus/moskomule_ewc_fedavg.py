"""Continual and federated learning bookkeeping on a small MLP with deterministic weights and
data: EWC (a diagonal Fisher from squared gradients of the model's own predictions, copies of
the old parameters via deepcopy of a named_parameters dict, the quadratic penalty in the loss),
a replay buffer mixed into later batches with torch.cat, and FedAvg rounds (deepcopy of the
global model per client, state_dict averaging with buffers and num_batches_tracked,
load_state_dict, parameters_to_vector / vector_to_parameters for the update's norm and a
server-side step)."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable
from torch.nn.utils import parameters_to_vector, vector_to_parameters


def fill_(module, scale):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.9 + i).view_as(p) * scale)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 10, bias=False)  # (BN removes a bias: its gradient would be rounding noise)
        self.bn = nn.BatchNorm1d(10)
        self.fc2 = nn.Linear(10, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.bn(self.fc1(x))))


def task(shift, n=24):
    t = torch.arange(n * 6, dtype=torch.float32).view(n, 6)
    x = torch.sin(t * 0.37 + shift)
    y = (x[:, 0] + x[:, 1] * shift > 0).long() + (x[:, 2] > 0.5).long()
    return x, y


class EWC:
    def __init__(self, model, samples):
        self.params = {n: p for n, p in model.named_parameters() if p.requires_grad}
        self.means = {n: Variable(p.data.clone()) for n, p in copy.deepcopy(self.params).items()}
        self.fisher = {n: torch.zeros_like(p) for n, p in self.params.items()}
        model.eval()
        for x in samples:
            model.zero_grad()
            out = model(x.unsqueeze(0)).view(1, -1)
            label = out.max(1)[1].view(-1)
            F.nll_loss(F.log_softmax(out, dim=1), label).backward()
            for n, p in model.named_parameters():
                self.fisher[n] += p.grad.data ** 2 / len(samples)

    def penalty(self, model):
        loss = 0
        for n, p in model.named_parameters():
            loss += (self.fisher[n] * (p - self.means[n]) ** 2).sum()
        return loss


model = MLP()
fill_(model, 0.3)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
xa, ya = task(0.5)
for epoch in range(5):
    model.train()
    opt.zero_grad()
    loss = F.cross_entropy(model(xa), ya)
    loss.backward()
    opt.step()
print("task A loss", round(loss.item(), 5))

ewc = EWC(model, [xa[i] for i in range(8)])
print("fisher sums", {n: round(f.sum().item(), 6) for n, f in ewc.fisher.items()})
print("penalty at the anchor", ewc.penalty(model).item())
buffer_x, buffer_y = xa[:6].clone(), ya[:6].clone()

xb, yb = task(1.3)
for epoch in range(5):
    model.train()
    bx, by = torch.cat([xb, buffer_x]), torch.cat([yb, buffer_y])
    opt.zero_grad()
    ce = F.cross_entropy(model(bx), by)
    pen = ewc.penalty(model)
    (ce + 50.0 * pen).backward()
    opt.step()
    print("task B", epoch, round(ce.item(), 5), round(pen.item(), 7))
model.eval()
with torch.no_grad():
    acc_a = (model(xa).argmax(1) == ya).float().mean().item()
    acc_b = (model(xb).argmax(1) == yb).float().mean().item()
print("accuracies", round(acc_a, 4), round(acc_b, 4))

# -- FedAvg ---------------------------------------------------------------------------------------
global_model = MLP()
fill_(global_model, 0.25)
clients = [task(0.2 * k + 0.1, n=16) for k in range(3)]


def fed_avg(states, sizes):
    avg = copy.deepcopy(states[0])
    total = float(sum(sizes))
    for key in avg.keys():
        if avg[key].dtype == torch.long:
            avg[key] = torch.stack([s[key] for s in states]).max()
            continue
        avg[key] = sum(s[key] * (n / total) for s, n in zip(states, sizes))
    return avg


for rnd in range(3):
    start = parameters_to_vector(global_model.parameters()).detach()
    states, sizes, updates = [], [], []
    for x, y in clients:
        local = copy.deepcopy(global_model)
        local.train()
        o = torch.optim.Adam(local.parameters(), lr=0.02)
        for _ in range(3):
            o.zero_grad()
            F.cross_entropy(local(x), y).backward()
            o.step()
        states.append(copy.deepcopy(local.state_dict()))
        sizes.append(len(x))
        updates.append(parameters_to_vector(local.parameters()).detach() - start)
    new_state = fed_avg(states, sizes)
    result = global_model.load_state_dict(new_state)
    mean_update = torch.stack(updates).mean(0)
    print(rnd, "update norms", torch.stack(updates).norm(dim=1), "mean", round(mean_update.norm().item(), 5))
    print(rnd, "keys ok", result.missing_keys == [] and result.unexpected_keys == [],
          "num_batches_tracked", global_model.bn.num_batches_tracked.item(),
          global_model.bn.num_batches_tracked.dtype)
    global_model.eval()
    with torch.no_grad():
        losses = [round(F.cross_entropy(global_model(x), y).item(), 5) for x, y in clients]
    print(rnd, "client losses", losses)

# a server step along the averaged update, through vector_to_parameters
vec = parameters_to_vector(global_model.parameters()).detach()
vector_to_parameters(vec + 0.5 * mean_update, global_model.parameters())
print("after server step", round(parameters_to_vector(global_model.parameters()).sum().item(), 4),
      type(global_model.fc1.weight).__name__, global_model.fc1.weight.requires_grad)
try:
    vector_to_parameters(vec[:-1], global_model.parameters())
except RuntimeError as exc:
    print("short vector:", type(exc).__name__)
try:
    vector_to_parameters(vec.tolist(), global_model.parameters())
except TypeError as exc:
    print("list vector:", exc)
