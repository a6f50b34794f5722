"""Calibration as gpleiss/temperature_scaling and the reliability-diagram code around it compute
it, on deterministic logits: _ECELoss over linspace bins, ECE / MCE with bucketize, bincount,
scatter_add_ and index_add_, a reliability table, histc and histogram, adaptive (equal-mass) ECE
with tensor_split, classwise ECE, Brier score; then ModelWithTemperature tuned by LBFGS, a
log-temperature fitted with Adam, vector scaling and Platt scaling with strong-Wolfe LBFGS."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim


class _ECELoss(nn.Module):
    def __init__(self, n_bins=15):
        super(_ECELoss, self).__init__()
        bin_boundaries = torch.linspace(0, 1, n_bins + 1)
        self.bin_lowers = bin_boundaries[:-1]
        self.bin_uppers = bin_boundaries[1:]

    def forward(self, logits, labels):
        softmaxes = F.softmax(logits, dim=1)
        confidences, predictions = torch.max(softmaxes, 1)
        accuracies = predictions.eq(labels)
        ece = torch.zeros(1, device=logits.device)
        for bin_lower, bin_upper in zip(self.bin_lowers, self.bin_uppers):
            in_bin = confidences.gt(bin_lower.item()) * confidences.le(bin_upper.item())
            prop_in_bin = in_bin.float().mean()
            if prop_in_bin.item() > 0:
                accuracy_in_bin = accuracies[in_bin].float().mean()
                avg_confidence_in_bin = confidences[in_bin].mean()
                ece += torch.abs(avg_confidence_in_bin - accuracy_in_bin) * prop_in_bin
        return ece


N, C = 1000, 10
k = torch.arange(N * C, dtype=torch.float32).reshape(N, C)
logits = 4 * torch.sin(k * 0.0137 + (k % 7)) + 2 * torch.cos(k * 0.91)
labels = (torch.arange(N) * 3) % C
labels[::2] = logits[::2].argmax(1)
ece = _ECELoss()(logits, labels)
print("ECE:", ece, ece.shape)
probs = logits.softmax(1)
conf, pred = probs.max(1)
correct = (pred == labels).float()
print("accuracy %.4f avg conf %.4f" % (correct.mean(), conf.mean()))
n_bins = 10
edges = torch.linspace(0, 1, n_bins + 1)
bin_ids = torch.bucketize(conf, edges[1:-1], right=True)
print(bin_ids.dtype, bin_ids.min().item(), bin_ids.max().item())
counts = torch.bincount(bin_ids, minlength=n_bins)
acc_sum = torch.zeros(n_bins).scatter_add_(0, bin_ids, correct)
conf_sum = torch.zeros(n_bins).index_add_(0, bin_ids, conf)
nonempty = counts > 0
acc_bin = torch.where(nonempty, acc_sum / counts.clamp(min=1), torch.zeros(()))
conf_bin = torch.where(nonempty, conf_sum / counts.clamp(min=1), torch.zeros(()))
gaps = (acc_bin - conf_bin).abs()
ece2 = (counts / N * gaps).sum()
mce = gaps[nonempty].max()
print(f"ECE (10 bins) = {ece2.item():.4f}, MCE = {mce.item():.4f}")
print(f"{'bin':>10} {'count':>6} {'acc':>7} {'conf':>7} {'gap':>7}")
for b in range(n_bins):
    print(f"{edges[b]:.1f}-{edges[b+1]:.1f} {counts[b].item():6d} {acc_bin[b]:7.3f} {conf_bin[b]:7.3f} {gaps[b]:7.3f}")
hist = torch.histc(conf, bins=n_bins, min=0, max=1)
print("histc", hist, hist.dtype)
print("histc == bincount:", torch.equal(hist.long(), counts))
h, e = torch.histogram(conf, bins=5, range=(0.0, 1.0))
print(h, e)
print(torch.bucketize(torch.tensor([0.0, 0.1, 0.5, 1.0]), edges))
print(torch.bucketize(torch.tensor([0.0, 0.1, 0.5, 1.0]), edges, right=True))
# adaptive (equal mass) bins
sorted_conf, order = torch.sort(conf)
chunks = torch.tensor_split(order, n_bins)
ace = sum((correct[c].mean() - conf[c].mean()).abs() * len(c) / N for c in chunks)
print("adaptive ECE %.4f" % ace)
# classwise ECE via one_hot
oh = F.one_hot(labels, C)
cw = []
for c in range(C):
    bc = torch.bucketize(probs[:, c], edges[1:-1], right=True)
    cnt = torch.bincount(bc, minlength=n_bins).float()
    a = torch.zeros(n_bins).scatter_add(0, bc, oh[:, c].float())
    p = torch.zeros(n_bins).scatter_add(0, bc, probs[:, c])
    cw.append(((a - p).abs()).sum() / N)
print("classwise ECE %.5f" % torch.stack(cw).mean())
print("brier %.4f" % ((probs - oh) ** 2).sum(1).mean())
print("nll %.4f" % F.cross_entropy(logits, labels))

# ---- temperature, vector and Platt scaling ----


class ModelWithTemperature(nn.Module):
    def __init__(self, model):
        super(ModelWithTemperature, self).__init__()
        self.model = model
        self.temperature = nn.Parameter(torch.ones(1) * 1.5)

    def forward(self, input):
        logits = self.model(input)
        return self.temperature_scale(logits)

    def temperature_scale(self, logits):
        temperature = self.temperature.unsqueeze(1).expand(logits.size(0), logits.size(1))
        return logits / temperature

    def set_temperature(self, valid_x, valid_y):
        nll_criterion = nn.CrossEntropyLoss()
        with torch.no_grad():
            logits = self.model(valid_x)
        before_temperature_nll = nll_criterion(logits, valid_y).item()
        print('Before temperature - NLL: %.3f' % before_temperature_nll)
        optimizer = optim.LBFGS([self.temperature], lr=0.01, max_iter=50)

        def eval():
            optimizer.zero_grad()
            loss = nll_criterion(self.temperature_scale(logits), valid_y)
            loss.backward()
            return loss
        optimizer.step(eval)
        after_temperature_nll = nll_criterion(self.temperature_scale(logits), valid_y).item()
        print('Optimal temperature: %.3f' % self.temperature.item())
        print('After temperature - NLL: %.3f' % after_temperature_nll)
        return self


base = nn.Linear(6, 4)
with torch.no_grad():
    base.weight.copy_(torch.arange(24.0).view(4, 6).sin() * 3)
    base.bias.zero_()
vx = torch.cos(torch.arange(600.0).view(100, 6) * 0.77)
with torch.no_grad():
    vy = base(vx).argmax(1)
vy[::3] = (vy[::3] + 1) % 4
scaled = ModelWithTemperature(base).set_temperature(vx, vy)
print(scaled.temperature.requires_grad, scaled.temperature.grad is not None)
print([n for n, _ in scaled.named_parameters()])
# log-temperature parametrisation with Adam
log_t = torch.zeros(1, requires_grad=True)
with torch.no_grad():
    lg = base(vx)
adam = optim.Adam([log_t], lr=0.05)
for it in range(200):
    adam.zero_grad()
    l = F.cross_entropy(lg / log_t.exp(), vy)
    l.backward()
    adam.step()
print("T via log-param %.3f nll %.4f" % (log_t.exp().item(), l.item()))
# vector scaling
W = torch.ones(4, requires_grad=True)
b = torch.zeros(4, requires_grad=True)
opt = optim.LBFGS([W, b], lr=0.1, max_iter=100, line_search_fn="strong_wolfe")


def closure():
    opt.zero_grad()
    loss = F.cross_entropy(lg * W + b, vy)
    loss.backward()
    return loss


final = opt.step(closure)
print("vector scaling first loss %.4f" % final.item())
print("vector nll %.4f" % F.cross_entropy(lg * W + b, vy).item())
# Platt scaling on a binary score
scores = torch.linspace(-3, 3, 60)
targets = (torch.sin(torch.arange(60.0) * 1.7) * 2 + scores > 0).float()
platt = nn.Linear(1, 1)
with torch.no_grad():
    platt.weight.fill_(1.0)
    platt.bias.fill_(0.0)
popt = optim.LBFGS(platt.parameters(), lr=0.5, max_iter=100, line_search_fn="strong_wolfe")
bce = nn.BCEWithLogitsLoss()


def pclosure():
    popt.zero_grad()
    out = bce(platt(scores.unsqueeze(1)).squeeze(1), targets)
    out.backward()
    return out


popt.step(pclosure)
print("Platt A=%.4f B=%.4f" % (platt.weight.item(), platt.bias.item()))
print("platt nll %.4f" % bce(platt(scores[:, None]).squeeze(1), targets).item())
print(optim.LBFGS([torch.zeros(1, requires_grad=True)]).defaults)
