"""FixMatch / FlexMatch / FreeMatch pseudo-labelling: interleaved batches, confidence masks from
softmax max, class-wise thresholds, percentile curricula (semi-supervised training loops)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

def interleave(x, size):
    s = list(x.shape)
    return x.reshape([-1, size] + s[1:]).transpose(0, 1).reshape([-1] + s[1:])

def de_interleave(x, size):
    s = list(x.shape)
    return x.reshape([size, -1] + s[1:]).transpose(0, 1).reshape([-1] + s[1:])

class Net(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.bn = nn.BatchNorm1d(16, momentum=0.001)
        self.fc2 = nn.Linear(16, num_classes)
    def forward(self, x):
        return self.fc2(F.leaky_relu(self.bn(self.fc1(x)), negative_slope=0.1))

model = Net()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.37 + i).reshape(p.shape) * 0.3)

B, mu = 4, 3
inputs_x = torch.cos(torch.arange(B * 8, dtype=torch.float32) * 0.11).reshape(B, 8)
targets_x = torch.tensor([0, 1, 2, 3])
u = torch.sin(torch.arange(B * mu * 8, dtype=torch.float32) * 0.23).reshape(B * mu, 8)
inputs_u_w = u
inputs_u_s = u * 1.5 + 0.1 * torch.cos(u * 3)

inputs = interleave(torch.cat((inputs_x, inputs_u_w, inputs_u_s)), 2 * mu + 1)
print(inputs.shape)
logits = model(inputs)
logits = de_interleave(logits, 2 * mu + 1)
logits_x = logits[:B]
logits_u_w, logits_u_s = logits[B:].chunk(2)
del logits

Lx = F.cross_entropy(logits_x, targets_x, reduction='mean')
pseudo_label = torch.softmax(logits_u_w.detach() / 0.95, dim=-1)
max_probs, targets_u = torch.max(pseudo_label, dim=-1)
mask = max_probs.ge(0.3).float()
print(max_probs)
print(targets_u)
print(mask, mask.dtype)
Lu = (F.cross_entropy(logits_u_s, targets_u, reduction='none') * mask).mean()
loss = Lx + 1.0 * Lu
print('Lx {:.4f} Lu {:.4f} loss {:.4f}'.format(Lx.item(), Lu.item(), loss.item()))
loss.backward()
print(model.fc2.weight.grad)
print('mask ratio', mask.mean().item())
print(model.bn.running_mean)


# ---- FlexMatch / FreeMatch thresholds and curriculum pseudo-labels ----
import torch
import torch.nn.functional as F
from collections import Counter

num_classes, N = 4, 10
p_cutoff = 0.6
selected_label = torch.ones((N,), dtype=torch.long) * -1
classwise_acc = torch.zeros((num_classes,))
logits_x_ulb_w = torch.sin(torch.arange(N * num_classes, dtype=torch.float32) * 1.3).view(N, num_classes) * 4
x_ulb_idx = torch.tensor([0, 2, 4, 6, 8, 1, 3, 5, 7, 9])

pseudo_label = torch.softmax(logits_x_ulb_w.detach(), dim=-1)
max_probs, max_idx = torch.max(pseudo_label, dim=-1)
print(max_probs, max_idx)
over_threshold = max_probs > p_cutoff
if x_ulb_idx[over_threshold == 1].nelement() != 0:
    selected_label[x_ulb_idx[over_threshold == 1]] = max_idx[over_threshold == 1]
print(selected_label)
pseudo_counter = Counter(selected_label.tolist())
print(sorted(pseudo_counter.items()))
if max(pseudo_counter.values()) < len(selected_label):
    wo_negative_one = pseudo_counter.copy()
    if -1 in wo_negative_one.keys():
        wo_negative_one.pop(-1)
    for i in range(num_classes):
        classwise_acc[i] = pseudo_counter[i] / max(wo_negative_one.values())
print(classwise_acc)
mask = max_probs.ge(p_cutoff * (classwise_acc[max_idx] / (2. - classwise_acc[max_idx]))).float()
print(mask)

# convex threshold
def convex(x):
    return x / (2 - x)
print(convex(classwise_acc))

# FreeMatch style self-adaptive thresholds
m = 0.999
p_model = torch.ones(num_classes) / num_classes
label_hist = torch.ones(num_classes) / num_classes
time_p = p_model.mean()
probs = pseudo_label
max_probs, max_idx = torch.max(probs, dim=-1, keepdim=True)
time_p = time_p * m + (1 - m) * max_probs.mean()
p_model = p_model * m + (1 - m) * probs.mean(dim=0)
hist = torch.bincount(max_idx.reshape(-1), minlength=p_model.shape[0]).to(p_model.dtype)
label_hist = label_hist * m + (1 - m) * (hist / hist.sum())
print(time_p, p_model, hist, label_hist)
mod = p_model / torch.max(p_model, dim=-1)[0]
mask = max_probs.ge(time_p * mod[max_idx]).to(max_probs.dtype)
print(mask.squeeze(1))

# curriculum pseudo-labeling: percentile threshold
scores = max_probs.squeeze(1)
for pct in [20, 50, 80]:
    thr = torch.quantile(scores, 1 - pct / 100.)
    sel = (scores >= thr).nonzero(as_tuple=True)[0]
    print(pct, round(thr.item(), 5), sel.tolist())
thr_np = torch.kthvalue(scores, 3).values
print(thr_np)
vals, inds = scores.topk(3, largest=True, sorted=True)
print(vals, inds)
print(torch.sort(scores, descending=True).indices[:4])
print(torch.argsort(scores, descending=True, stable=True)[:4])

# SoftMatch gaussian weighting
prob_max_mu_t = scores.mean()
prob_max_var_t = torch.var(scores, unbiased=True)
mu, var = prob_max_mu_t, prob_max_var_t
w = torch.exp(-((torch.clamp(scores - mu, max=0.0) ** 2) / (2 * var / 4)))
print(w)
# one-hot pseudo labels with label smoothing
one_hot = F.one_hot(max_idx.squeeze(1), num_classes).float()
print(one_hot.dtype, one_hot.sum(0))
smoothed = one_hot * 0.9 + 0.1 / num_classes
print(smoothed[:2])
ce = F.cross_entropy(logits_x_ulb_w, smoothed, reduction='none')
print(ce)
print(F.cross_entropy(logits_x_ulb_w, max_idx.squeeze(1), label_smoothing=0.1))
print(torch.unique(max_idx, return_counts=True))
print(torch.histc(scores, bins=4, min=0, max=1))
print(torch.bucketize(scores, torch.tensor([0.25, 0.5, 0.75])))
