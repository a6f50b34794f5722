"""Confusion matrices and precision/recall/F1 as hand-written validation code builds them:
bincount of n*y+p, a Python loop of += 1, index_put_ with accumulate, scatter_add_, then
per-class, macro, weighted and micro scores, zero-division handling (nan_to_num, where, clamp,
nanmean) and per-class tables under torch.set_printoptions.

Written for tapegrad's proxy corpus (evaluation metrics domain); labels from Python's seeded
`random`, which does not depend on the torch random stream.
"""
import random
import torch
random.seed(0)
torch.manual_seed(1)
num_classes = 4
preds = torch.tensor([random.randrange(num_classes) for _ in range(50)])
targets = torch.tensor([random.randrange(num_classes) for _ in range(50)])

def confusion_matrix_bincount(preds, targets, n):
    k = (targets >= 0) & (targets < n)
    return torch.bincount(n * targets[k].to(torch.int64) + preds[k], minlength=n ** 2).reshape(n, n)

cm = confusion_matrix_bincount(preds, targets, num_classes)
print(cm)
print(cm.dtype, cm.shape)

cm2 = torch.zeros(num_classes, num_classes)
for t, p in zip(targets.view(-1), preds.view(-1)):
    cm2[t.long(), p.long()] += 1
print(cm2)

cm3 = torch.zeros(num_classes, num_classes, dtype=torch.long)
cm3.index_put_((targets, preds), torch.ones_like(targets), accumulate=True)
print(cm3)
print(torch.equal(cm, cm3))

cm4 = torch.zeros(num_classes * num_classes, dtype=torch.int64)
cm4.scatter_add_(0, targets * num_classes + preds, torch.ones(50, dtype=torch.int64))
print(cm4.view(num_classes, num_classes))

cm5 = torch.zeros(num_classes, num_classes)
stacked = torch.stack((targets, preds), dim=1)
for p in stacked:
    tl, pl = p.tolist()
    cm5[tl, pl] = cm5[tl, pl] + 1
print(cm5)

tp = cm.diag()
fp = cm.sum(0) - tp
fn = cm.sum(1) - tp
print(tp, fp, fn)
precision = tp / (tp + fp)
recall = tp.float() / (tp + fn).float()
f1 = 2 * precision * recall / (precision + recall)
print(precision)
print(recall)
print(f1)
print("macro f1", f1.mean().item())
support = cm.sum(1)
print("weighted f1", (f1 * support).sum() / support.sum())
print("micro", tp.sum() / cm.sum())
print(cm.diagonal() / cm.sum(1))
per_class_acc = cm.diag().float() / cm.sum(1).clamp(min=1)
print(per_class_acc)
for i, a in enumerate(per_class_acc):
    print(f"class {i}: {a:.4f} {a.item():.3f}")
print(cm.trace(), cm.trace() / cm.sum())
norm = cm / cm.sum(dim=1, keepdim=True)
print(norm)
torch.set_printoptions(precision=2)
print(norm)
torch.set_printoptions(precision=4, sci_mode=False)
print(norm * 1e-5)
torch.set_printoptions(profile="default")
print(norm)

# a class never predicted -> nan precision
p = torch.tensor([0, 0, 1, 1, 0])
t = torch.tensor([0, 2, 1, 2, 0])
cm = torch.bincount(3 * t + p, minlength=9).view(3, 3)
tp = cm.diag().float()
prec = tp / cm.sum(0)
print(prec)
print(torch.nan_to_num(prec))
print(torch.nan_to_num(prec, nan=0.0).mean())
print(prec.nanmean())
print(torch.where(cm.sum(0) > 0, tp / cm.sum(0), torch.zeros_like(tp)))
print(tp / cm.sum(0).clamp(min=1e-8))
print(tp / (cm.sum(0) + 1e-10))
print(torch.isnan(prec).any(), torch.isnan(prec).sum())
print(prec[~torch.isnan(prec)].mean())
