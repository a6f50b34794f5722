"""A Kaggle image-classification notebook in miniature: K folds of a small CNN trained with
AdamW + OneCycleLR + gradient clipping and a pos_weight BCE, the best epoch by AUC (computed by
hand from ranks) checkpointed with torch.save and reloaded, out-of-fold predictions with flip
TTA, and the fold test predictions ensembled by mean and by rank average (argsort of argsort).
Data, weights and batch order are deterministic (no shuffle, no dropout), so the printed losses
and scores do not depend on the random stream.
"""
import copy, os, tempfile, time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader

torch.manual_seed(42)
CFG = {'n_folds': 3, 'epochs': 4, 'bs': 16, 'lr': 3e-3, 'wd': 1e-4, 'img': 12}
print(CFG)

def make_data(n, size):
    yy, xx = np.meshgrid(np.arange(size), np.arange(size), indexing='ij')
    imgs, labels = [], []
    for i in range(n):
        cx, cy, r = 3 + i % 6, 3 + (i * 7) % 6, 1.5 + (i % 3)
        circ = ((xx - cx) ** 2 + (yy - cy) ** 2 <= r ** 2).astype(np.float32)
        lbl = int(r > 2.0)
        noise = np.sin(np.arange(size * size) * (i + 1) * 0.37).reshape(size, size).astype(np.float32) * 0.2
        imgs.append(np.stack([circ + noise, circ * 0.5, noise]))
        labels.append(lbl)
    return np.stack(imgs), np.array(labels)
X, y = make_data(60, CFG['img'])
print(X.shape, y.mean())

class ImgDS(Dataset):
    def __init__(self, X, y=None, flip=False):
        self.X, self.y, self.flip = X, y, flip
    def __len__(self):
        return len(self.X)
    def __getitem__(self, i):
        img = torch.tensor(self.X[i])
        if self.flip:
            img = img.flip(-1)
        if self.y is None:
            return img
        return img, torch.tensor(self.y[i], dtype=torch.float32)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 1)
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x).squeeze(1)

def det_init(model, seed):
    with torch.no_grad():
        for i, (n, p) in enumerate(model.named_parameters()):
            if 'bn' in n:
                continue
            fan_in = p[0].numel() if p.dim() > 1 else p.numel()
            p.copy_(torch.sin(torch.arange(p.numel()).float() * (0.7 + 0.1 * seed) + i).reshape(p.shape) / np.sqrt(fan_in))

def auc_score(y_true, y_pred):
    y_true = np.asarray(y_true); order = np.argsort(y_pred)
    ranks = np.empty(len(y_pred)); ranks[order] = np.arange(1, len(y_pred) + 1)
    npos = y_true.sum(); nneg = len(y_true) - npos
    return (ranks[y_true == 1].sum() - npos * (npos + 1) / 2) / (npos * nneg)

def train_one_epoch(model, loader, opt, sched, crit):
    model.train()
    total, n = 0.0, 0
    for xb, yb in loader:
        opt.zero_grad()
        out = model(xb)
        loss = crit(out, yb)
        loss.backward()
        gnorm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=2.0)
        opt.step()
        sched.step()
        total += loss.item() * xb.size(0); n += xb.size(0)
    return total / n, gnorm.item()

@torch.no_grad()
def predict(model, X, tta=False):
    model.eval()
    preds = []
    for xb in DataLoader(ImgDS(X), batch_size=32):
        p = torch.sigmoid(model(xb))
        if tta:
            p = (p + torch.sigmoid(model(xb.flip(-1))) + torch.sigmoid(model(xb.flip(-2)))) / 3
        preds.append(p)
    return torch.cat(preds).numpy()

folds = (np.arange(len(X)) // 3) % CFG['n_folds']
oof = np.zeros(len(X))
test_preds = []
ckpt_dir = tempfile.mkdtemp()
crit = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(1.5))
for fold in range(CFG['n_folds']):
    tr, va = folds != fold, folds == fold
    model = Net(); det_init(model, fold)
    opt = torch.optim.AdamW(model.parameters(), lr=CFG['lr'], weight_decay=CFG['wd'])
    tl = DataLoader(ImgDS(X[tr], y[tr]), batch_size=CFG['bs'], shuffle=False, drop_last=True)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=CFG['lr'], epochs=CFG['epochs'], steps_per_epoch=len(tl), pct_start=0.3)
    best = -1
    for ep in range(CFG['epochs']):
        tr_loss, gn = train_one_epoch(model, tl, opt, sched, crit)
        vp = predict(model, X[va])
        with torch.no_grad():
            va_loss = crit(torch.logit(torch.tensor(vp).clamp(1e-6, 1 - 1e-6)), torch.tensor(y[va], dtype=torch.float32)).item()
        auc = auc_score(y[va], vp)
        lr = opt.param_groups[0]['lr']
        flag = ''
        if auc > best:
            best = auc; flag = ' *'
            torch.save(model.state_dict(), os.path.join(ckpt_dir, f'fold{fold}.pt'))
        print(f'Fold {fold} | Epoch {ep+1}/{CFG["epochs"]} | lr {lr:.2e} | train {tr_loss:.4f} | valid {va_loss:.4f} | auc {auc:.4f} | gnorm {gn:.3f}{flag}')
    model.load_state_dict(torch.load(os.path.join(ckpt_dir, f'fold{fold}.pt')))
    oof[va] = predict(model, X[va], tta=True)
    test_preds.append(predict(model, X[:10], tta=True))
    print(f'Fold {fold} best auc {best:.4f} bn running var {model.bn1.running_var[:3]}')
print(f'OOF AUC: {auc_score(y, oof):.4f}')
test_preds = np.stack(test_preds)
print('test', test_preds.shape, test_preds.mean(0).round(4))
ranks = np.stack([p.argsort().argsort() for p in test_preds]) / (test_preds.shape[1] - 1)
print('rank avg', ranks.mean(0).round(3))
t_rank = torch.tensor(test_preds).argsort(1).argsort(1).float().mean(0)
print(t_rank)
