"""Entity embeddings for categorical columns + MLP, as Kaggle tabular notebooks (Rossmann-style)
write it: a seed_everything helper, a Dataset over a dict of numpy columns returning dict
items, K-fold loop with per-fold model, AdamW + OneCycleLR stepped per batch, clip_grad_norm_,
best state kept with copy.deepcopy(state_dict()) and reloaded, out-of-fold predictions.
Only RNG-independent facts are printed (shapes, learning rates, state_dict keys and counters).
"""
import os, random, copy
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader

def seed_everything(seed=42):
    random.seed(seed)
    os.environ['PYTHONHASHSEED'] = str(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False

seed_everything(42)
DEVICE = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
print('device:', DEVICE)

rng = np.random.RandomState(0)
N = 400
cat_cols = ['store', 'item', 'dow']
cardinalities = {'store': 10, 'item': 25, 'dow': 7}
data = {c: rng.randint(0, cardinalities[c], N) for c in cat_cols}
data['price'] = rng.rand(N).astype(np.float32) * 10
data['promo'] = rng.randint(0, 2, N).astype(np.float32)
target = (0.3 * data['store'] + 0.1 * data['item'] - 0.5 * data['dow'] + data['price'] * 0.7 + rng.randn(N) * 0.1).astype(np.float32)
num_cols = ['price', 'promo']

emb_szs = [(cardinalities[c], min(50, (cardinalities[c] + 1) // 2)) for c in cat_cols]
print('embedding sizes:', emb_szs)

class TabDataset(Dataset):
    def __init__(self, idx, data, y=None):
        self.x_cat = np.stack([data[c][idx] for c in cat_cols], axis=1).astype(np.int64)
        self.x_num = np.stack([data[c][idx] for c in num_cols], axis=1).astype(np.float32)
        self.y = None if y is None else y[idx]
    def __len__(self):
        return len(self.x_cat)
    def __getitem__(self, i):
        item = {'x_cat': torch.tensor(self.x_cat[i], dtype=torch.long),
                'x_num': torch.tensor(self.x_num[i], dtype=torch.float)}
        if self.y is not None:
            item['y'] = torch.tensor(self.y[i], dtype=torch.float)
        return item

class EntityEmbNet(nn.Module):
    def __init__(self, emb_szs, n_num, hidden=64, drop=0.1):
        super().__init__()
        self.embs = nn.ModuleList([nn.Embedding(c, d) for c, d in emb_szs])
        n_emb = sum(d for _, d in emb_szs)
        self.emb_drop = nn.Dropout(drop)
        self.bn_num = nn.BatchNorm1d(n_num)
        self.mlp = nn.Sequential(
            nn.Linear(n_emb + n_num, hidden), nn.ReLU(), nn.BatchNorm1d(hidden), nn.Dropout(drop),
            nn.Linear(hidden, hidden // 2), nn.ReLU(),
            nn.Linear(hidden // 2, 1))
    def forward(self, x_cat, x_num):
        x = [e(x_cat[:, i]) for i, e in enumerate(self.embs)]
        x = torch.cat(x, 1)
        x = self.emb_drop(x)
        x = torch.cat([x, self.bn_num(x_num)], 1)
        return self.mlp(x).squeeze(-1)

def rmse(y_true, y_pred):
    return np.sqrt(np.mean((y_true - y_pred) ** 2))

model = EntityEmbNet(emb_szs, len(num_cols))
print(model)
n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
print(f'trainable params: {n_params:,}')

folds = np.arange(N) % 4
oof = np.zeros(N, dtype=np.float32)
EPOCHS = 6
fold_scores = []
for fold in range(4):
    trn_idx = np.where(folds != fold)[0]
    val_idx = np.where(folds == fold)[0]
    train_loader = DataLoader(TabDataset(trn_idx, data, target), batch_size=64, shuffle=True, drop_last=True)
    valid_loader = DataLoader(TabDataset(val_idx, data, target), batch_size=128, shuffle=False)
    print(f'fold {fold}: train batches {len(train_loader)}, valid batches {len(valid_loader)}')
    model = EntityEmbNet(emb_szs, len(num_cols)).to(DEVICE)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-5)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, epochs=EPOCHS,
                                                    steps_per_epoch=len(train_loader))
    best_loss, best_state = np.inf, None
    for epoch in range(EPOCHS):
        model.train()
        tr_loss = 0.0
        for batch in train_loader:
            optimizer.zero_grad()
            pred = model(batch['x_cat'].to(DEVICE), batch['x_num'].to(DEVICE))
            loss = F.mse_loss(pred, batch['y'].to(DEVICE))
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            tr_loss += loss.item() / len(train_loader)
        model.eval()
        preds = []
        with torch.no_grad():
            for batch in valid_loader:
                preds.append(model(batch['x_cat'], batch['x_num']).cpu().numpy())
        preds = np.concatenate(preds)
        val_loss = rmse(target[val_idx], preds)
        lr = scheduler.get_last_lr()[0]
        if val_loss < best_loss:
            best_loss = val_loss
            best_state = copy.deepcopy(model.state_dict())
        print(f'  epoch {epoch} lr {lr:.6f} preds shape {preds.shape} dtype {preds.dtype}')
    model.load_state_dict(best_state)
    model.eval()
    with torch.no_grad():
        ds = TabDataset(val_idx, data)
        b = next(iter(DataLoader(ds, batch_size=len(ds))))
        oof[val_idx] = model(b['x_cat'], b['x_num']).numpy()
    print(f'fold {fold} best state keys: {len(best_state)} first {list(best_state)[:3]}')
    print(type(best_state).__name__, best_state['embs.0.weight'].shape, best_state['bn_num.num_batches_tracked'].dtype)
print('oof shape', oof.shape, oof.dtype)
print('lr history final', scheduler.get_last_lr())
print(optimizer.param_groups[0].keys())
