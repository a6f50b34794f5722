"""Robustness and calibration on a small classifier with deterministic weights and data: FGSM
and PGD (sign of the input gradient, a projection with a tensor-bounded clamp, delta.data
updates and delta.grad.zero_()), a Carlini-Wagner style attack optimising the input with Adam
(a one-hot built with FloatTensor(...).zero_().scatter_, torch.max against a zero tensor), one
epoch of adversarial training, knowledge distillation (KLDivLoss batchmean on log_softmax /
softmax at a temperature, plus cross_entropy with label_smoothing), temperature scaling with
LBFGS (strong Wolfe line search) on float64 logits, and reliability bins with bucketize, histc
and scatter_add_ (ECE before and after scaling)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import Adam


def fill_(module, scale, phase=0.0):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.77 + i + phase).view_as(p) * scale)


n_class = 4
grid = torch.arange(32 * 8, dtype=torch.float32).view(32, 8)
X = ((grid * 37 + 11) % 101) / 100   # scattered values in [0, 1], exact in float32
net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, n_class))
fill_(net, 0.5)
net.eval()
with torch.no_grad():   # labels: the net's own predictions, every fourth one shifted
    Y = net(X).argmax(1)
Y[::4] = (Y[::4] + 1) % n_class
with torch.no_grad():
    clean_acc = (net(X).argmax(1) == Y).float().mean().item()
print("clean accuracy", clean_acc)


def fgsm(model, x, y, eps):
    x = x.clone().detach().requires_grad_(True)
    loss = F.cross_entropy(model(x), y)
    grad, = torch.autograd.grad(loss, x)
    return torch.clamp(x + eps * grad.sign(), 0, 1).detach()


def pgd(model, x, y, eps, alpha, steps):
    delta = torch.zeros_like(x, requires_grad=True)
    for _ in range(steps):
        loss = F.cross_entropy(model(x + delta), y)
        loss.backward()
        delta.data = (delta + alpha * delta.grad.detach().sign()).clamp(-eps, eps)
        delta.data = torch.clamp(x + delta.data, 0, 1) - x
        delta.grad.zero_()
    return delta.detach()


for eps in (0.0, 0.02, 0.05, 0.2):
    xa = fgsm(net, X, Y, eps)
    d = pgd(net, X, Y, eps, eps / 4, 6)
    with torch.no_grad():
        acc_f = (net(xa).argmax(1) == Y).float().mean().item()
        acc_p = (net(X + d).argmax(1) == Y).float().mean().item()
    print("eps", eps, "fgsm acc", round(acc_f, 4), "pgd acc", round(acc_p, 4),
          "max |delta|", round(d.abs().max().item(), 4))


def cw(x_in, y_true, model, steps, c):
    index = y_true.view(-1, 1)
    onehot = torch.FloatTensor(x_in.size(0), n_class).zero_().scatter_(1, index, 1)
    x_adv = x_in.clone().requires_grad_()
    optimizer = Adam([x_adv], lr=1e-2)
    zero = torch.FloatTensor([0])
    for step in range(steps):
        optimizer.zero_grad()
        out = model(x_adv)
        real = torch.max(torch.mul(out, onehot), 1)[0]
        other = torch.max(torch.mul(out, 1 - onehot) - onehot * 10000, 1)[0]
        error = torch.sum((x_adv - x_in) ** 2) + c * torch.sum(torch.max(real - other, zero))
        error.backward()
        optimizer.step()
        if step % 3 == 0:
            print("cw step", step, round(error.item(), 5))
    return x_adv.detach()


adv = cw(X[:8], Y[:8], net, 9, 0.5)
print("cw L2", round((adv - X[:8]).norm().item(), 5), "flipped", (net(adv).argmax(1) != Y[:8]).sum().item())

# -- adversarial training: one epoch over mini-batches ---------------------------------------------
robust = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, n_class))
fill_(robust, 0.5, phase=0.3)
opt = torch.optim.SGD(robust.parameters(), lr=0.2, momentum=0.5)
for i in range(0, 32, 8):
    xb, yb = X[i:i + 8], Y[i:i + 8]
    robust.eval()
    d = pgd(robust, xb, yb, 0.05, 0.02, 3)
    robust.train()
    opt.zero_grad()
    loss = 0.5 * F.cross_entropy(robust(xb), yb) + 0.5 * F.cross_entropy(robust(xb + d), yb)
    loss.backward()
    opt.step()
    print("adv batch", i // 8, round(loss.item(), 5))

# -- distillation -------------------------------------------------------------------------------
student = nn.Sequential(nn.Linear(8, 6), nn.Tanh(), nn.Linear(6, n_class))
fill_(student, 0.4, phase=1.0)
kl = nn.KLDivLoss(reduction="batchmean")
T = 3.0
sopt = torch.optim.Adam(student.parameters(), lr=0.03)
with torch.no_grad():
    teacher_logits = net(X)
for step in range(6):
    s_logits = student(X)
    kd = kl(F.log_softmax(s_logits / T, dim=1), F.softmax(teacher_logits / T, dim=1)) * T * T
    ce = F.cross_entropy(s_logits, Y, label_smoothing=0.1)
    loss = 0.8 * kd + 0.2 * ce
    sopt.zero_grad()
    loss.backward()
    sopt.step()
    print("kd step", step, round(kd.item(), 5), round(ce.item(), 5))
agree = (student(X).argmax(1) == teacher_logits.argmax(1)).float().mean()
print("student/teacher agreement", agree)


# -- temperature scaling and reliability bins -----------------------------------------------------
def ece_bins(logits, labels, n_bins=10):
    probs = F.softmax(logits, dim=1)
    conf, pred = probs.max(1)
    correct = (pred == labels).float()
    edges = torch.linspace(0, 1, n_bins + 1, dtype=logits.dtype)
    idx = (torch.bucketize(conf, edges, right=True) - 1).clamp(0, n_bins - 1)
    counts = torch.bincount(idx, minlength=n_bins).to(logits.dtype)
    acc_sum = torch.zeros(n_bins, dtype=logits.dtype).scatter_add_(0, idx, correct.to(logits.dtype))
    conf_sum = torch.zeros(n_bins, dtype=logits.dtype).scatter_add_(0, idx, conf)
    nonempty = counts > 0
    gap = (acc_sum[nonempty] - conf_sum[nonempty]).abs()
    hist = torch.histc(conf.float(), bins=n_bins, min=0, max=1)
    return (gap.sum() / len(labels)).item(), counts.long().tolist(), hist.tolist()


logits64 = (net(X) * 1.5).detach().double()
print("ECE before", [round(v, 5) if isinstance(v, float) else v for v in ece_bins(logits64, Y)])
temp = nn.Parameter(torch.ones(1, dtype=torch.float64))
lbfgs = torch.optim.LBFGS([temp], lr=0.05, max_iter=60, line_search_fn="strong_wolfe")


def closure():
    lbfgs.zero_grad()
    nll = F.cross_entropy(logits64 / temp, Y)
    nll.backward()
    return nll


final = lbfgs.step(closure)
print("temperature", round(temp.item(), 5), "nll", round(final.item(), 6))
print("ECE after", [round(v, 5) if isinstance(v, float) else v for v in ece_bins(logits64 / temp.detach(), Y)])
