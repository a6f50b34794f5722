"""Inspired by sanjucs/ml-tools' ConfusionMatrix (a loop of cm[t, p] += 1, then precision,
recall, f1 and balanced accuracy from the diagonal and the row/column sums): the same matrix
built four ways (loop, bincount of t * C + p, index_put_ with accumulate, scatter_add_),
metrics with an empty class (0 / 0 = nan, nan_to_num), top-k accuracy, running averages over
batches, gradient accumulation matching a full batch, clip_grad_value_ / clip_grad_norm_, and
the logging idioms (.item(), .tolist(), f-string formats of 0-d tensors)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def metrics(cm):
    correct = torch.diag(cm)
    precision = correct / cm.sum(dim=0)
    recall = correct / cm.sum(dim=1)
    f1 = 2 * precision * recall / (precision + recall)
    return {"precision": precision, "recall": recall, "f1": f1,
            "accuracy": correct.sum() / cm.sum(), "balanced": torch.nanmean(recall)}


target = torch.tensor([0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0, 1, 1, 2, 0])
pred = torch.tensor([0, 2, 2, 1, 1, 0, 1, 1, 2, 0, 1, 0, 0, 1, 2, 2])
C = 4                                        # class 3 never occurs: its row and column are 0

cm_loop = torch.zeros(C, C)
for t, p in zip(target, pred):
    cm_loop[t, p] += 1
cm_bin = torch.bincount(target * C + pred, minlength=C * C).reshape(C, C)
cm_put = torch.zeros(C, C, dtype=torch.long).index_put_((target, pred),
                                                         torch.ones_like(target),
                                                         accumulate=True)
cm_scatter = torch.zeros(C * C, dtype=torch.int32).scatter_add_(
    0, target * C + pred, torch.ones(len(target), dtype=torch.int32)).view(C, C)
print(cm_loop)
print(cm_bin.dtype, cm_put.dtype, cm_scatter.dtype,
      torch.equal(cm_bin, cm_put), torch.equal(cm_loop.long(), cm_scatter.long()))
m = metrics(cm_loop)
for k, v in m.items():
    print(f"{k:>10}: {v}")
print(torch.nan_to_num(m["f1"]).tolist(), f"{m['accuracy']:.4f}", f"{m['balanced'].item():.3%}")
weighted = torch.bincount(target, weights=torch.linspace(0.5, 2.0, 16), minlength=C)
print(weighted, weighted.dtype)
try:
    torch.zeros(C, C).index_put_(target, torch.tensor(1.0))
except TypeError as e:
    print("TypeError", e)

logits = torch.stack([torch.cos(torch.arange(16.0) * (k + 1)) for k in range(C)], dim=1)
_, top2 = logits.topk(2, dim=1, largest=True, sorted=True)
correct = top2.t().eq(target.view(1, -1).expand_as(top2.t()))
for k in (1, 2):
    print(f"top{k}", correct[:k].reshape(-1).float().sum(0, keepdim=True).mul_(100.0 / 16))


class Running:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, value, n=1):
        self.sum += value * n
        self.count += n

    @property
    def avg(self):
        return self.sum / self.count


model = nn.Linear(C, C)
with torch.no_grad():
    model.weight.copy_(torch.eye(C) * 0.5 + 0.1)
    model.bias.fill_(-0.05)
full = nn.Linear(C, C)
full.load_state_dict(model.state_dict())
loss_avg, acc_avg, accum = Running(), Running(), 4
for i in range(0, 16, 4):
    x, t = logits[i:i + 4], target[i:i + 4]
    out = model(x)
    loss = F.cross_entropy(out, t)
    (loss / accum).backward()
    loss_avg.update(loss.item(), len(t))
    acc_avg.update((out.argmax(1) == t).float().mean().item(), len(t))
    print(f"batch {i // 4}: loss {loss:.4f} ({loss_avg.avg:.4f}) acc {acc_avg.avg:.3f}")
F.cross_entropy(full(logits), target).backward()
print("accumulated == full batch", torch.allclose(model.weight.grad, full.weight.grad, atol=1e-6))
print(model.weight.grad.abs().max().item() > 0, type(loss_avg.avg).__name__)
norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.05)
print(f"norm before {norm:.5f}", torch.linalg.vector_norm(
    torch.cat([p.grad.flatten() for p in model.parameters()])).item() <= 0.0500001)
nn.utils.clip_grad_value_(full.parameters(), clip_value=0.02)
print(full.weight.grad.abs().max(), full.bias.grad)
print(f"{torch.tensor(3)} {torch.tensor(2.5):.2f} {torch.tensor(7):03d} {torch.tensor(0.125):.1%}",
      "%.3f" % torch.tensor(1 / 3), round(torch.tensor(2.675).item(), 2),
      torch.tensor([[1, 2], [3, 4]]).tolist(), torch.tensor(5).item().__class__.__name__)
