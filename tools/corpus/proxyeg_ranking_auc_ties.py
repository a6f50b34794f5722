"""Ranking metrics written by hand: ROC-AUC by sorting scores (argsort descending, cumsum of
positives, trapz/trapezoid), the rank-sum and pairwise AUCs, average precision, all-one-class
nan results, and PyTorch's tie order in argsort/sort/topk/argmax/max/mode.

Written for tapegrad's proxy corpus (evaluation metrics domain); scores from Python's seeded
`random`, which does not depend on the torch random stream.
"""
import random
import torch
random.seed(3)
n = 40
y_true = torch.tensor([random.random() < 0.4 for _ in range(n)]).long()
y_score = torch.tensor([round(random.random(), 2) for _ in range(n)])
y_score[y_true == 1] += 0.2

def roc_auc(y_true, y_score):
    desc = torch.argsort(y_score, descending=True)
    y_true = y_true[desc]
    y_score = y_score[desc]
    distinct = torch.where(y_score[1:] - y_score[:-1] != 0)[0]
    threshold_idxs = torch.cat([distinct, torch.tensor([y_true.numel() - 1])])
    tps = torch.cumsum(y_true, dim=0)[threshold_idxs]
    fps = 1 + threshold_idxs - tps
    tps = torch.cat([torch.zeros(1, dtype=tps.dtype), tps])
    fps = torch.cat([torch.zeros(1, dtype=fps.dtype), fps])
    fpr = fps / fps[-1]
    tpr = tps / tps[-1]
    return torch.trapz(tpr, fpr), fpr, tpr

auc, fpr, tpr = roc_auc(y_true, y_score)
print(auc, auc.dtype)
print(fpr.shape, tpr.shape, fpr.dtype)
print(torch.trapezoid(tpr, fpr))
print(torch.trapezoid(tpr, x=fpr, dim=-1))
print(torch.trapz(tpr, dx=0.1))
print(torch.cumulative_trapezoid(tpr[:5], fpr[:5]))

# Mann-Whitney U via ranks
def auc_rank(y, s):
    order = s.argsort()
    ranks = torch.empty_like(order)
    ranks[order] = torch.arange(1, len(s) + 1)
    pos = y == 1
    n_pos = pos.sum()
    n_neg = (~pos).sum()
    return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
print(auc_rank(y_true, y_score))

# pairwise auc
pos = y_score[y_true == 1]
neg = y_score[y_true == 0]
diff = pos.unsqueeze(1) - neg.unsqueeze(0)
auc_pair = ((diff > 0).float() + 0.5 * (diff == 0).float()).mean()
print(auc_pair)

# average precision
desc = torch.argsort(y_score, descending=True, stable=True)
yt = y_true[desc].float()
tp_cum = yt.cumsum(0)
precision_at_k = tp_cum / torch.arange(1, n + 1)
ap = (precision_at_k * yt).sum() / yt.sum()
print("AP", ap)
recall = tp_cum / yt.sum()
rec_diff = torch.diff(recall, prepend=torch.tensor([0.0]))
print("AP2", (rec_diff * precision_at_k).sum())
print(torch.diff(recall, n=1)[:5])
print(precision_at_k[:8])

# all one class -> nan
yy = torch.ones(5, dtype=torch.long)
ss = torch.tensor([0.1, 0.4, 0.35, 0.8, 0.5])
a, f, t = roc_auc(yy, ss)
print(a, f, t)
yy0 = torch.zeros(5, dtype=torch.long)
a, f, t = roc_auc(yy0, ss)
print(a, f, t)

# ties in argsort
s = torch.tensor([0.5, 0.7, 0.5, 0.7, 0.1, 0.5])
print(torch.argsort(s, descending=True))
print(torch.argsort(s, descending=True, stable=True))
print(torch.argsort(s))
print(torch.sort(s, descending=True))
print(torch.sort(s, stable=True, descending=True).indices)
print(s.argmax(), s.argmin(), torch.topk(s, 3), torch.topk(s, 3, largest=False))
print(torch.max(s, 0), torch.min(s, dim=0))
m = torch.tensor([[1, 3, 3], [2, 2, 1], [0, 0, 0]])
print(m.argmax(1), m.argmax(0), m.argmax(), m.max(1))
print(torch.topk(m, 2, dim=1))
print(torch.topk(m.float(), 2, dim=0, sorted=True))
print(m.sort(1, descending=True))
print(torch.mode(torch.tensor([1, 2, 2, 3, 3])))

# a validation set of 6000 scores rounded to one decimal: many ties, walked in sort order as
# torchnet's AUCMeter walks them (the area depends on the order among tied scores)
big_y = torch.tensor([random.random() < 0.3 for _ in range(6000)]).long()
big_s = (torch.tensor([random.random() for _ in range(6000)]) * 0.7 + 0.3 * big_y).mul(10).round() / 10
_, order = torch.sort(big_s, 0, True)
walk = big_y[order].double()
tpr = torch.cat([torch.zeros(1, dtype=torch.float64), walk.cumsum(0) / walk.sum()])
fpr = torch.cat([torch.zeros(1, dtype=torch.float64), (1 - walk).cumsum(0) / (1 - walk).sum()])
print("AUCMeter-style area", round(torch.trapz(tpr, fpr).item(), 6))
print("tie-aware AUC", roc_auc(big_y, big_s)[0])
print(order[:10], big_s.argsort(descending=True)[-5:])
print(big_s.topk(8).indices, big_s.topk(5, largest=False).indices)
print(big_s.view(4, -1).mode(1))
