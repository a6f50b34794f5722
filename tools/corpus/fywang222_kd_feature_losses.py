"""Knowledge distillation between a small teacher and student with deterministic weights: the
teacher in eval() under torch.no_grad(), the logit losses (F.kl_div / nn.KLDivLoss with
reduction='batchmean' and 'none', log_target, temperature^2 scaling), a decoupled KD loss built
from scatter_ masks and cat of masked sums, feature losses on a conv feature map (attention
transfer with F.normalize, similarity preserving with mm, relational distance / angle with
smooth_l1_loss and bmm, probabilistic transfer, a FitNet 1x1 regressor with mse and cosine
similarity), an SGD(nesterov, weight_decay) student update, and then a low-rank SVD
factorisation of the student's Linear layers swapped in with setattr, counting parameters."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def fill(module, phase=0.0, scale=0.4):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            k = torch.arange(p.numel(), dtype=torch.float64)
            p.copy_((torch.cos(k * 0.77 + i + phase) * scale).reshape(p.shape))
    return module


class Net(nn.Module):
    def __init__(self, c, hidden):
        super().__init__()
        self.conv = nn.Conv2d(3, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)
        self.fc1 = nn.Linear(c, hidden)
        self.fc2 = nn.Linear(hidden, 5)

    def forward(self, x):
        f = F.relu(self.bn(self.conv(x)))
        emb = F.adaptive_avg_pool2d(f, 1).flatten(1)
        return f, emb, self.fc2(F.relu(self.fc1(emb)))


def kd(ls, lt, T):
    return F.kl_div(F.log_softmax(ls / T, dim=1), F.softmax(lt / T, dim=1),
                    reduction="batchmean") * T * T


def masks(logits, target):
    gt = torch.zeros_like(logits).scatter_(1, target.unsqueeze(1), 1).bool()
    other = torch.ones_like(logits).scatter_(1, target.unsqueeze(1), 0).bool()
    return gt, other


def decoupled(ls, lt, target, T=4.0, alpha=1.0, beta=4.0):
    gt, other = masks(ls, target)
    ps, pt = F.softmax(ls / T, dim=1), F.softmax(lt / T, dim=1)
    bs = torch.cat([(ps * gt).sum(1, keepdim=True), (ps * other).sum(1, keepdim=True)], dim=1)
    bt = torch.cat([(pt * gt).sum(1, keepdim=True), (pt * other).sum(1, keepdim=True)], dim=1)
    tckd = F.kl_div(torch.log(bs), bt, reduction="sum") * T * T / target.shape[0]
    nckd = F.kl_div(F.log_softmax(ls / T - 1000.0 * gt, dim=1), F.softmax(lt / T - 1000.0 * gt, dim=1),
                    reduction="sum") * T * T / target.shape[0]
    return alpha * tckd + beta * nckd


def attention(f):
    return F.normalize(f.pow(2).mean(1).flatten(1))


def similarity(fs, ft):
    b = fs.shape[0]
    gs = F.normalize(fs.reshape(b, -1) @ fs.reshape(b, -1).t())
    gt = F.normalize(ft.reshape(b, -1) @ ft.reshape(b, -1).t())
    return (gs - gt).pow(2).sum() / (b * b)


def distances(e):
    sq = e.pow(2).sum(1)
    d = (sq.unsqueeze(1) + sq.unsqueeze(0) - 2 * e @ e.t()).clamp(min=1e-12).sqrt().clone()
    d[range(len(e)), range(len(e))] = 0
    return d / d[d > 0].mean()


def relational(es, et):
    with torch.no_grad():
        td = distances(et)
        nt = F.normalize(et.unsqueeze(0) - et.unsqueeze(1), p=2, dim=2)
        ta = torch.bmm(nt, nt.transpose(1, 2)).view(-1)
    ns = F.normalize(es.unsqueeze(0) - es.unsqueeze(1), p=2, dim=2)
    sa = torch.bmm(ns, ns.transpose(1, 2)).view(-1)
    return F.smooth_l1_loss(distances(es), td) + 2 * F.smooth_l1_loss(sa, ta)


def prob_transfer(es, et, eps=1e-7):
    def cond(e):
        e = e / (e.norm(dim=1, keepdim=True) + eps)
        s = (e @ e.t() + 1.0) / 2.0
        return s / s.sum(1, keepdim=True)
    ps, pt = cond(es), cond(et)
    return (pt * torch.log((pt + eps) / (ps + eps))).mean()


teacher = fill(Net(8, 16), phase=0.3, scale=0.5)
student = fill(Net(4, 6), phase=1.1, scale=0.3)
regressor = fill(nn.Conv2d(4, 8, 1), phase=2.0, scale=0.2)
teacher.eval()
x = torch.linspace(-2, 2, 6 * 3 * 4 * 4).reshape(6, 3, 4, 4).sin()
y = torch.tensor([0, 4, 2, 2, 1, 3])
opt = torch.optim.SGD(list(student.parameters()) + list(regressor.parameters()), lr=0.05,
                      momentum=0.9, weight_decay=5e-4, nesterov=True)
crit = nn.KLDivLoss(reduction="batchmean", log_target=True)
print(crit)
for step in range(4):
    student.train()
    with torch.no_grad():
        ft, et, lt = teacher(x)
    fs, es, ls = student(x)
    losses = {
        "ce": F.cross_entropy(ls, y, label_smoothing=0.1),
        "kd": kd(ls, lt, 4.0),
        "kd_logt": crit(F.log_softmax(ls / 2, 1), F.log_softmax(lt / 2, 1)) * 4,
        "kd_none": F.kl_div(F.log_softmax(ls, 1), F.softmax(lt, 1), reduction="none").sum(1).mean(),
        "dkd": decoupled(ls, lt, y),
        "at": (attention(fs) - attention(ft)).pow(2).mean(),
        "sp": similarity(fs, ft),
        "rkd": relational(es, et),
        "pkt": prob_transfer(es, et),
        "fitnet": F.mse_loss(regressor(fs), ft),
        "cos": (1 - F.cosine_similarity(regressor(fs), ft, dim=1)).mean(),
    }
    loss = sum(losses.values())
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, {k: round(v.item(), 5) for k, v in losses.items()})
    print("  grads", round(student.conv.weight.grad.norm().item(), 5),
          round(regressor.weight.grad.abs().max().item(), 5), lt.requires_grad, ls.grad_fn is not None)
print("running stats", student.bn.running_mean, student.bn.num_batches_tracked)


class LowRank(nn.Module):
    def __init__(self, linear, rank):
        super().__init__()
        U, S, Vh = torch.linalg.svd(linear.weight.detach(), full_matrices=False)
        root = S[:rank].sqrt()
        self.down = nn.Linear(linear.in_features, rank, bias=False)
        self.up = nn.Linear(rank, linear.out_features)
        with torch.no_grad():
            self.down.weight.copy_(root.unsqueeze(1) * Vh[:rank])
            self.up.weight.copy_(U[:, :rank] * root)
            self.up.bias.copy_(linear.bias)

    def forward(self, x):
        return self.up(self.down(x))


student.eval()
with torch.no_grad():
    _, _, before = student(x)
print("params before", sum(p.numel() for p in student.parameters()))
S = torch.linalg.svdvals(student.fc1.weight)
print("singular values", S, "energy", (S ** 2).cumsum(0) / (S ** 2).sum())
for name, child in list(student.named_children()):
    if isinstance(child, nn.Linear):
        setattr(student, name, LowRank(child, 3))
print(student)
with torch.no_grad():
    _, _, after = student(x)
print("params after", sum(p.numel() for p in student.parameters()))
print("max logit change", (after - before).abs().max())
full = LowRank(teacher.fc2, 5)
with torch.no_grad():
    h = F.relu(teacher.fc1(et))
    print("full rank exact", torch.allclose(full(h), teacher.fc2(h), atol=1e-5))
