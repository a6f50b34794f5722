"""Evaluation metrics computed by hand on tensors, after NVIDIA DeepLearningExamples' DLRM utils
(roc_auc_score by sorting) and the usual Kaggle notebook helpers.

Exercises: ROC-AUC from argsort + cumsum + trapz (scores with ties), a confusion matrix from
bincount, per-class precision/recall/F1 with clamp, top-k accuracy via topk/eq, a popularity
recommender ranking items by integer counts with topk (many ties) and sort/argsort (stable and
not), the per-user majority vote with mode, RMSE/MAE/R^2, and Embedding-based matrix
factorisation trained a few steps with BCEWithLogitsLoss(pos_weight).  All data comes from numpy.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def roc_auc(y_true, y_score):
    order = torch.argsort(y_score, descending=True)
    y_score, y_true = y_score[order], y_true[order]
    distinct = torch.nonzero(y_score[1:] - y_score[:-1], as_tuple=False).squeeze(1)
    thresholds = torch.cat([distinct, torch.tensor([y_true.numel() - 1])])
    tps = torch.cumsum(y_true, dim=0)[thresholds]
    fps = 1 + thresholds - tps
    tps = torch.cat([torch.zeros(1), tps])
    fps = torch.cat([torch.zeros(1), fps])
    return torch.trapz(tps / tps[-1], fps / fps[-1]).item()


def confusion(y_true, y_pred, n):
    return torch.bincount(y_true * n + y_pred, minlength=n * n).reshape(n, n)


rng = np.random.RandomState(3)
# scores rounded to one decimal: many ties, as calibrated probabilities often have
y = torch.from_numpy(rng.randint(0, 2, 60).astype(np.float32))
score = torch.from_numpy(np.round(np.clip(0.35 * y.numpy() + rng.rand(60) * 0.65, 0, 1), 1).astype(np.float32))
print("auc", round(roc_auc(y, score), 6))
print("auc perfect", roc_auc(torch.tensor([0., 0., 1., 1.]), torch.tensor([0.1, 0.2, 0.8, 0.9])))
order = torch.argsort(score, descending=True)
print("ranked labels", y[order].int().tolist())
print("ranked ids", order.tolist())
print("stable ids", torch.argsort(score, descending=True, stable=True).tolist())

# -- multi-class confusion matrix and F1
t3 = torch.from_numpy(rng.randint(0, 3, 40))
p3 = torch.where(torch.from_numpy(rng.rand(40) < 0.6), t3, torch.from_numpy(rng.randint(0, 3, 40)))
cm = confusion(t3, p3, 3)
print(cm)
tp = cm.diag().float()
precision = tp / cm.sum(0).clamp(min=1)
recall = tp / cm.sum(1).clamp(min=1)
f1 = 2 * precision * recall / (precision + recall).clamp(min=1e-12)
print("precision", precision.round(decimals=4), "recall", recall.round(decimals=4))
print("macro f1", round(f1.mean().item(), 4), "weighted f1", round((f1 * cm.sum(1)).sum().item() / cm.sum().item(), 4))

# -- top-k accuracy on logits with repeated values
logits = torch.from_numpy(rng.randint(0, 4, (8, 6)).astype(np.float32))
target = torch.from_numpy(rng.randint(0, 6, 8))
_, pred = logits.topk(3, 1, True, True)
print("top3 indices", pred.tolist())
correct = pred.t().eq(target[None])
print("top1/top3 acc", [round(correct[:k].flatten().sum(dtype=torch.float32).item() * 100 / 8, 2) for k in (1, 3)])

# -- a popularity recommender: integer interaction counts, lots of equal counts
n_users, n_items = 12, 20
inter = torch.from_numpy(rng.rand(n_users, n_items) < 0.25)
counts = inter.sum(0)
print("counts", counts.tolist())
top = counts.topk(5)
print("most popular", top.indices.tolist(), top.values.tolist())
print("least popular", counts.topk(4, largest=False).indices.tolist())
print("unsorted top", counts.topk(6, sorted=False).values.tolist())
print("sorted ids", counts.sort(descending=True).indices.tolist())
print("argsort asc", counts.argsort().tolist())
seen = inter.clone()
scores = counts.float().expand(n_users, n_items).masked_fill(seen, float("-inf"))
recs = scores.topk(3, dim=1).indices
print("recommendations", recs[:4].tolist())
hits = inter.gather(1, recs).any(1)
print("hit rate on seen items", hits.float().mean().item())

# -- per-user majority vote over predicted classes
votes = torch.from_numpy(rng.randint(0, 3, (4, 21)))
vals, idx = votes.mode(dim=1)
print("mode", vals.tolist(), idx.tolist())

# -- regression metrics
yt = torch.from_numpy(rng.randn(30).astype(np.float32))
yp = yt + 0.3 * torch.from_numpy(rng.randn(30).astype(np.float32))
rmse = torch.sqrt(F.mse_loss(yp, yt))
mae = F.l1_loss(yp, yt)
r2 = 1 - ((yt - yp) ** 2).sum() / ((yt - yt.mean()) ** 2).sum()
print("rmse", round(rmse.item(), 5), "mae", round(mae.item(), 5), "r2", round(r2.item(), 5))


# -- matrix factorisation on the implicit interactions, imbalance handled by pos_weight
class MF(nn.Module):
    def __init__(self, n_users, n_items, d):
        super().__init__()
        self.u = nn.Embedding(n_users, d)
        self.i = nn.Embedding(n_items, d)
        self.ub = nn.Embedding(n_users, 1)
        self.ib = nn.Embedding(n_items, 1)

    def forward(self, u, i):
        return (self.u(u) * self.i(i)).sum(1) + self.ub(u).squeeze(1) + self.ib(i).squeeze(1)


mf = MF(n_users, n_items, 4)
wr = np.random.RandomState(0)
with torch.no_grad():
    for p in mf.parameters():
        p.copy_(torch.from_numpy(wr.normal(0, 0.1, tuple(p.shape)).astype(np.float32)))
uu, ii = torch.meshgrid(torch.arange(n_users), torch.arange(n_items), indexing="ij")
uu, ii, lab = uu.flatten(), ii.flatten(), inter.flatten().float()
pos_weight = (lab == 0).sum() / (lab == 1).sum()
crit = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
opt = torch.optim.SGD(mf.parameters(), lr=0.5, momentum=0.9, weight_decay=1e-4)
for step in range(8):
    loss = crit(mf(uu, ii), lab)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, round(loss.item(), 5))
with torch.no_grad():
    s = torch.sigmoid(mf(uu, ii))
print("mf auc", round(roc_auc(lab, s), 5), "pos_weight", round(pos_weight.item(), 4))
