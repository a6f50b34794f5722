"""Ordinal regression as coral-pytorch writes it: levels from labels, the CORAL loss on a shared
weight plus rank biases, probabilities to labels, the CORN conditional loss and its cumulative
product prediction, and a cumulative-link (proportional odds) model's class probabilities and
threshold gradients.  Data and weights come from a fixed integer recurrence."""
import torch
import torch.nn as nn
import torch.nn.functional as F

def _lcg(n, seed):
    """n pseudo-random values in [-1, 1) from a fixed integer recurrence (the same under any
    library and any seed)."""
    out, s = [], (seed * 2654435761 + 12345) % 2**32
    for _ in range(n):
        s = (1103515245 * s + 12345) % 2**31
        out.append((s / 2**31) * 2 - 1)
    return out


def det_init(model, scale=0.3):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.tensor(_lcg(p.numel(), i + 100)).mul(scale).view_as(p))


def det_randn(*shape, seed=0.):
    n = 1
    for s in shape:
        n *= s
    return torch.tensor(_lcg(n, int(seed * 7) + 1)).mul(1.7).view(*shape)


def levels_from_labelbatch(labels, num_classes, dtype=torch.float32):
    levels = []
    for label in labels:
        levels_from_label = [1] * int(label) + [0] * (num_classes - 1 - int(label))
        levels.append(levels_from_label)
    return torch.tensor(levels, dtype=dtype)

def coral_loss(logits, levels, importance_weights=None, reduction='mean'):
    if not logits.shape == levels.shape:
        raise ValueError("Please ensure that logits (%s) has the same shape as levels (%s). "
                         % (logits.shape, levels.shape))
    term1 = (F.logsigmoid(logits) * levels + (F.logsigmoid(logits) - logits) * (1 - levels))
    if importance_weights is not None:
        term1 *= importance_weights
    val = (-torch.sum(term1, dim=1))
    if reduction == 'mean':
        loss = torch.mean(val)
    elif reduction == 'sum':
        loss = torch.sum(val)
    else:
        raise ValueError('Invalid value for `reduction`. Should be "mean", "sum", or None. Got %s' % reduction)
    return loss

class CoralLayer(nn.Module):
    def __init__(self, size_in, num_classes, preinit_bias=True):
        super().__init__()
        self.coral_weights = nn.Linear(size_in, 1, bias=False)
        if preinit_bias:
            self.coral_bias = nn.Parameter(torch.arange(num_classes - 1, 0, -1).float() / (num_classes - 1))
        else:
            self.coral_bias = nn.Parameter(torch.zeros(num_classes - 1).float())
    def forward(self, x):
        return self.coral_weights(x) + self.coral_bias

def proba_to_label(probas):
    predict_levels = probas > 0.5
    predicted_labels = torch.sum(predict_levels, dim=1)
    return predicted_labels

def corn_loss(logits, y_train, num_classes):
    sets = []
    for i in range(num_classes - 1):
        label_mask = y_train > i - 1
        label_tensor = (y_train[label_mask] > i).to(torch.int64)
        sets.append((label_mask, label_tensor))
    num_examples = 0
    losses = 0.
    for task_index, s in enumerate(sets):
        train_examples = s[0]
        train_labels = s[1]
        if len(train_labels) < 1:
            continue
        num_examples += len(train_labels)
        pred = logits[train_examples, task_index]
        loss = -torch.sum(F.logsigmoid(pred) * train_labels + (F.logsigmoid(pred) - pred) * (1 - train_labels))
        losses += loss
    return losses / num_examples

def corn_label_from_logits(logits):
    probas = torch.sigmoid(logits)
    probas = torch.cumprod(probas, dim=1)
    predict_levels = probas > 0.5
    predicted_labels = torch.sum(predict_levels, dim=1)
    return predicted_labels

K = 5
X = det_randn(80, 4)
score = X @ torch.tensor([1.0, -0.5, 0.25, 0.0])
y = torch.bucketize(score, torch.tensor([-1.0, -0.3, 0.3, 1.0]))
print(y.dtype, torch.bincount(y, minlength=K))
levels = levels_from_labelbatch(y, K)
print(levels[:3], levels.dtype)
feat = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
head = CoralLayer(8, K)
det_init(feat); det_init(head)
print(head.coral_bias)
opt = torch.optim.Adam(list(feat.parameters()) + list(head.parameters()), lr=0.05)
for ep in range(40):
    logits = head(feat(X))
    loss = coral_loss(logits, levels)
    opt.zero_grad(); loss.backward(); opt.step()
    if ep % 10 == 0:
        pred = proba_to_label(torch.sigmoid(logits))
        print(ep, f"{loss:.4f}", pred.dtype, (pred == y).float().mean().item(), (pred - y).abs().float().mean().item())
try:
    coral_loss(logits, levels[:, :2])
except ValueError as e:
    print("ValueError", e)
cornnet = nn.Linear(4, K - 1); det_init(cornnet)
opt = torch.optim.Adam(cornnet.parameters(), lr=0.05)
for ep in range(30):
    lg = cornnet(X)
    loss = corn_loss(lg, y, K)
    opt.zero_grad(); loss.backward(); opt.step()
print("corn", round(loss.item(), 4), corn_label_from_logits(lg)[:10])
print(torch.cumprod(torch.tensor([[0.9, 0.8, 0.5]]), dim=1))
mae = torch.mean(torch.abs(corn_label_from_logits(lg) - y).float())
print(f"MAE {mae:.3f}")
# cumulative link model
th = torch.tensor([-1.0, 0.0, 0.5, 1.5], requires_grad=True)
eta = torch.tensor([0.2, -0.3, 1.0])
cdf = torch.sigmoid(th.unsqueeze(0) - eta.unsqueeze(1))
cdf = F.pad(cdf, (1, 1), value=0.0)
cdf[:, -1] = 1.0
probs = cdf[:, 1:] - cdf[:, :-1]
print(probs, probs.sum(1))
nll = -torch.log(probs.gather(1, torch.tensor([[0], [2], [4]]))).sum()
nll.backward()
print(nll, th.grad)
