"""A k-fold training loop with early stopping and full checkpoints, after Bjarten's
early-stopping-pytorch and the k-fold cross-validation tutorials of Kaggle tabular notebooks.

Exercises: TensorDataset/ConcatDataset/Subset folds, SubsetRandomSampler and
WeightedRandomSampler (only order-free facts printed: lengths, totals), BatchSampler with
drop_last, a collate_fn building dict batches, an EarlyStopping helper keeping the best
state_dict (copy.deepcopy), torch.save/torch.load of a checkpoint dict with model, optimizer
and scheduler state through BytesIO with map_location, resuming training from it, OneCycleLR,
BCEWithLogitsLoss(pos_weight) against a hand-written focal loss, and out-of-fold predictions.
"""
import copy
import io

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import (BatchSampler, ConcatDataset, DataLoader, SequentialSampler, Subset,
                              SubsetRandomSampler, TensorDataset, WeightedRandomSampler)


class EarlyStopping:
    def __init__(self, patience=2, delta=0.0):
        self.patience, self.delta = patience, delta
        self.best, self.counter, self.stop, self.state = None, 0, False, None

    def __call__(self, val_loss, model):
        if self.best is None or val_loss < self.best - self.delta:
            print(f"  val improved {self.best if self.best is None else round(self.best, 5)} -> {val_loss:.5f}")
            self.best, self.counter = val_loss, 0
            self.state = copy.deepcopy(model.state_dict())
        else:
            self.counter += 1
            print(f"  no improvement {self.counter}/{self.patience}")
            self.stop = self.counter >= self.patience


def focal_loss(logits, target, alpha=0.25, gamma=2.0):
    bce = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
    p_t = torch.exp(-bce)
    a_t = alpha * target + (1 - alpha) * (1 - target)
    return (a_t * (1 - p_t) ** gamma * bce).mean()


def make_model(seed):
    model = nn.Sequential(nn.Linear(6, 16, bias=False), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 1))
    rng = np.random.RandomState(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.4, 0.4, tuple(p.shape)).astype(np.float32)))
    return model


def collate(batch):
    x = torch.stack([b[0] for b in batch])
    y = torch.stack([b[1] for b in batch])
    return {"x": x, "y": y, "n": len(batch)}


rng = np.random.RandomState(11)
X = rng.randn(90, 6).astype(np.float32)
Y = ((X[:, 0] - X[:, 3] + 0.5 * rng.randn(90)) > 1.0).astype(np.float32)
part_a = TensorDataset(torch.from_numpy(X[:60]), torch.from_numpy(Y[:60]))
part_b = TensorDataset(torch.from_numpy(X[60:]), torch.from_numpy(Y[60:]))
data = ConcatDataset([part_a, part_b])
labels = torch.from_numpy(Y)
print(len(data), data.cumulative_sizes, "positives", int(labels.sum().item()))

class_w = 1.0 / torch.bincount(labels.long()).float()
sample_w = class_w[labels.long()]
wrs = WeightedRandomSampler(sample_w, num_samples=len(sample_w), replacement=True)
print("sampler", len(wrs), wrs.weights.dtype, round(wrs.weights.sum().item(), 4), len(list(wrs)))
bs = BatchSampler(SequentialSampler(range(10)), batch_size=4, drop_last=True)
print("batches", list(bs), len(bs))

k = 3
perm = rng.permutation(len(data))
folds = np.array_split(perm, k)
oof = torch.zeros(len(data))
for fold in range(k):
    val_idx = folds[fold].tolist()
    tr_idx = np.concatenate([folds[j] for j in range(k) if j != fold]).tolist()
    print(f"fold {fold}: train {len(tr_idx)} val {len(val_idx)}", len(SubsetRandomSampler(tr_idx)))
    train_loader = DataLoader(Subset(data, tr_idx), batch_size=20, shuffle=False, collate_fn=collate, drop_last=True)
    val_loader = DataLoader(Subset(data, val_idx), batch_size=64, collate_fn=collate)
    model = make_model(fold)
    y_tr = labels[tr_idx]
    pos_weight = (y_tr == 0).sum() / (y_tr == 1).sum().clamp(min=1)
    crit = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    opt = torch.optim.AdamW(model.parameters(), lr=0.02, weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, epochs=6, steps_per_epoch=len(train_loader))
    stopper = EarlyStopping(patience=2)
    for epoch in range(6):
        model.train()
        for batch in train_loader:
            out = model(batch["x"]).squeeze(1)
            loss = crit(out, batch["y"]) + 0.5 * focal_loss(out, batch["y"])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        model.eval()
        with torch.no_grad():
            vb = next(iter(val_loader))
            val_loss = F.binary_cross_entropy_with_logits(model(vb["x"]).squeeze(1), vb["y"]).item()
        print(f" epoch {epoch} loss {loss.item():.5f} val {val_loss:.5f} lr {sched.get_last_lr()[0]:.6f}")
        stopper(val_loss, model)
        if stopper.stop:
            print(" early stop")
            break
    # checkpoint round trip and resume
    buf = io.BytesIO()
    torch.save({"fold": fold, "epoch": epoch, "model": stopper.state, "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict(), "best": stopper.best}, buf)
    buf.seek(0)
    ckpt = torch.load(buf, map_location="cpu")
    restored = make_model(99)
    print(" load", restored.load_state_dict(ckpt["model"]))
    opt2 = torch.optim.AdamW(restored.parameters(), lr=1.0)
    opt2.load_state_dict(ckpt["optimizer"])
    print(" resumed lr", round(opt2.param_groups[0]["lr"], 6), "steps", int(opt2.state_dict()["state"][0]["step"]),
          "sched step", ckpt["scheduler"]["last_epoch"], "best", round(ckpt["best"], 5))
    restored.eval()
    with torch.no_grad():
        oof[val_idx] = torch.sigmoid(restored(vb["x"]).squeeze(1))
pred = (oof > 0.5).float()
print("oof acc", round((pred == labels).float().mean().item(), 4))
print("oof tp fp fn", int(((pred == 1) & (labels == 1)).sum()), int(((pred == 1) & (labels == 0)).sum()),
      int(((pred == 0) & (labels == 1)).sum()))
print("oof head", oof[:6].round(decimals=4))
