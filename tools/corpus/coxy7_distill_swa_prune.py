"""Training techniques around a small classifier, with deterministic weights and data:
knowledge distillation (a KLDivLoss(reduction='batchmean') on log_softmax / softmax at a
temperature, scaled by T^2, and F.kl_div with log_target), mixup with a fixed permutation and a
numpy float64 lambda, label smoothing (CrossEntropyLoss(label_smoothing=...) against a
hand-written smoothed one-hot), gradient accumulation with clip_grad_norm_, stochastic weight
averaging (AveragedModel, SWALR with linear / cos annealing, update_bn on a BatchNorm model, an
EMA via get_ema_multi_avg_fn), magnitude pruning both with torch.nn.utils.prune (l1 / global /
ln_structured, weight_orig + weight_mask, remove) and by hand with a register_buffer mask and a
forward pre-hook, and early stopping that keeps the best state_dict in an in-memory checkpoint."""
import copy
import io

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune
from torch.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn


def fill_(module, scale):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.61 + 0.4 * i).view_as(p) * scale)


def make_data(n, shift=0.0):
    t = torch.arange(n * 6, dtype=torch.float32).view(n, 6)
    x = torch.sin(t * 0.23 + shift) + 0.3 * torch.cos(t * 0.71)
    y = ((x[:, 0] * 2 + x[:, 2]).abs() * 4).long() % 4
    return x, y


def student_net():
    return nn.Sequential(nn.Linear(6, 12), nn.BatchNorm1d(12), nn.ReLU(), nn.Linear(12, 4))


class KDLoss(nn.Module):
    def __init__(self, T):
        super().__init__()
        self.T = T
        self.kl = nn.KLDivLoss(reduction="batchmean")

    def forward(self, s, t):
        return self.kl(F.log_softmax(s / self.T, dim=1), F.softmax(t / self.T, dim=1)) * self.T ** 2


def smooth_targets(y, n, eps):
    return torch.full((y.size(0), n), eps / (n - 1)).scatter_(1, y.unsqueeze(1), 1 - eps)


x, y = make_data(24)
xv, yv = make_data(12, shift=0.9)
teacher = nn.Sequential(nn.Linear(6, 20), nn.Tanh(), nn.Linear(20, 4))
fill_(teacher, 0.9)
teacher.eval()
student = student_net()
fill_(student, 0.4)

print("== distillation + mixup + label smoothing, accumulated over 3 micro-batches")
kd = KDLoss(T=3.0)
opt = torch.optim.SGD(student.parameters(), lr=0.1, momentum=0.9, nesterov=True)
perm = torch.tensor([5, 2, 7, 0, 3, 6, 1, 4])
lam = np.float64(0.65)
best, best_state, bad = float("inf"), None, 0
ckpt = io.BytesIO()
for epoch in range(6):
    student.train()
    opt.zero_grad()
    for k in range(3):
        xb, yb = x[k * 8:(k + 1) * 8], y[k * 8:(k + 1) * 8]
        xm = lam * xb + (1 - lam) * xb[perm]
        with torch.no_grad():
            t_logits = teacher(xm)
        s_logits = student(xm)
        ce = lam * F.cross_entropy(s_logits, yb, label_smoothing=0.1) + \
            (1 - lam) * F.cross_entropy(s_logits, yb[perm], label_smoothing=0.1)
        loss = (0.6 * kd(s_logits, t_logits) + 0.4 * ce) / 3
        loss.backward()
    norm = nn.utils.clip_grad_norm_(student.parameters(), max_norm=1.0)
    opt.step()
    student.eval()
    with torch.no_grad():
        val = F.cross_entropy(student(xv), yv).item()
    print(epoch, f"{loss.item() * 3:.6f}", f"{norm.item():.5f}", f"{val:.6f}", xm.dtype)
    if val < best - 1e-4:
        best, bad = val, 0
        best_state = copy.deepcopy(student.state_dict())
        ckpt.seek(0)
        ckpt.truncate()
        torch.save({"epoch": epoch, "model": student.state_dict(), "opt": opt.state_dict(), "val": val}, ckpt)
    else:
        bad += 1
        if bad >= 2:
            print("early stop at", epoch)
            break
ckpt.seek(0)
state = torch.load(ckpt)
print("best epoch", state["epoch"], f"{state['val']:.6f}", sorted(state["opt"]["state"][0]))
print(all(torch.equal(state["model"][k], best_state[k]) for k in best_state))
soft = smooth_targets(yv, 4, 0.1)
logits = student(xv)
print(f"{F.cross_entropy(logits, soft).item():.6f}", f"{torch.sum(-soft * F.log_softmax(logits, -1), -1).mean().item():.6f}")
print(f"{F.kl_div(F.log_softmax(logits, 1), F.log_softmax(teacher(xv), 1), reduction='batchmean', log_target=True).item():.6f}")

print("== SWA")
student.load_state_dict(state["model"])
swa = AveragedModel(student)
ema = AveragedModel(student, multi_avg_fn=get_ema_multi_avg_fn(0.8))
opt = torch.optim.SGD(student.parameters(), lr=0.2)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
swa_sched = SWALR(opt, swa_lr=0.05, anneal_epochs=2, anneal_strategy="linear")
loader = [(x[i:i + 6], y[i:i + 6]) for i in range(0, 24, 6)]
for epoch in range(6):
    student.train()
    for xb, yb in loader:
        opt.zero_grad()
        F.cross_entropy(student(xb), yb).backward()
        opt.step()
        ema.update_parameters(student)
    if epoch >= 2:
        swa.update_parameters(student)
        swa_sched.step()
    else:
        sched.step()
    print(epoch, [round(g["lr"], 6) for g in opt.param_groups], int(swa.n_averaged))
bn = swa.module[1]
print(bn.running_mean[:3], bn.num_batches_tracked)
update_bn(loader, swa)
print(bn.running_mean[:3], bn.running_var[:3], bn.num_batches_tracked)
swa.eval()
ema.eval()
print(f"{F.cross_entropy(swa(xv), yv).item():.6f}", f"{F.cross_entropy(ema(xv), yv).item():.6f}")
print(list(swa.state_dict())[:2], ema.module[0].weight[0, :3])

print("== pruning")
net = copy.deepcopy(swa.module)
prune.l1_unstructured(net[0], "weight", amount=0.3)
prune.global_unstructured([(net[0], "weight"), (net[3], "weight")], pruning_method=prune.L1Unstructured, amount=0.25)
prune.ln_structured(net[3], "weight", amount=1, n=2, dim=0)
print(sorted(n for n, _ in net.named_parameters()), sorted(n for n, _ in net.named_buffers())[:3])
print(int(net[0].weight_mask.sum()), net[3].weight_mask.sum(dim=1), net[0].weight.grad_fn is not None)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
net.train()
opt.zero_grad()
F.cross_entropy(net(x), y).backward()
print((net[0].weight_orig.grad * (1 - net[0].weight_mask)).abs().sum().item(), f"{net[0].weight_orig.grad.abs().sum().item():.6f}")
opt.step()
prune.remove(net[0], "weight")
prune.remove(net[3], "weight")
print([n for n, _ in net.named_parameters()], int((net[0].weight == 0).sum()), int((net[3].weight == 0).sum()))


class MaskedLinear(nn.Linear):
    def __init__(self, *a):
        super().__init__(*a)
        self.register_buffer("mask", torch.ones_like(self.weight))
        self.register_forward_pre_hook(lambda m, inp: m.weight.data.mul_(m.mask))


hand = MaskedLinear(6, 4)
fill_(hand, 0.7)
thr = torch.quantile(hand.weight.detach().abs().flatten(), 0.5)
hand.mask.copy_((hand.weight.detach().abs() > thr).float())
out = hand(x[:3])
print(f"{thr.item():.6f}", int(hand.mask.sum()), int((hand.weight == 0).sum()), out[0])
print(sorted(hand.state_dict()), len(hand._forward_pre_hooks))
