"""Recurrent forecasting with a closed loop and probabilistic losses, in the style of
lscharwaechter's multivariate sine-wave GRU, drikomak's airline LSTM and the quantile / pinball
losses of mindsdb's lightwood and keyvan-amiri's UQ4PPM: a Dataset of numpy sequences batched by a
DataLoader with a plain list of indices as its sampler (float64 numpy in, float64 batches out,
cast to float32), a stacked GRU trained with AdamW whose best epoch is kept both as a live
state_dict() (which keeps following the parameters) and as a deepcopy (which does not), teacher
forcing on a prefix then a closed loop feeding each prediction back with its hidden state (the
prediction indexed with np.newaxis), an LSTM fed the list-of-arrays windows that warn in PyTorch,
pinball losses written three ways (torch.max of the two slopes, a detached indicator mask, an
in-place mul_ on a fresh tensor) with their gradients, and a weight-normed causal TCN block."""
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import weight_norm


def init_deterministic(module, scale=0.2):
    with torch.no_grad():
        for k, p in enumerate(module.parameters()):
            n = torch.arange(p.numel(), dtype=p.dtype)
            p.copy_((torch.cos(n * (0.23 + 0.19 * k) + 0.1 * k) * scale).reshape(p.shape))
    return module


class Waves(torch.utils.data.Dataset):
    def __init__(self, n_seq, length, dims):
        t = np.arange(n_seq * length, dtype=np.float64)
        data = np.stack([(0.4 + 0.15 * d) * np.sin(t / (7 + 5 * d)) for d in range(dims)], axis=-1)
        self.seqs = np.array(np.split(data, n_seq))      # (n_seq, length, dims)

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, i):
        seq = self.seqs[i]
        return np.copy(seq[:-1]), np.copy(seq[-1])


class Stacked(nn.Module):
    def __init__(self, dims, hidden, layers):
        super().__init__()
        self.gru = nn.GRU(dims, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, dims)

    def forward(self, x, state=None):
        out, h = self.gru(x) if state is None else self.gru(x, state)
        return self.head(out[:, -1, :]), h


ds = Waves(20, 26, 2)
order = list(range(len(ds)))
train = torch.utils.data.DataLoader(ds, batch_size=4, sampler=order[5:], drop_last=True)
valid = torch.utils.data.DataLoader(ds, batch_size=1, sampler=order[:5])
xb, yb = next(iter(train))
print(len(train), len(valid), xb.dtype, tuple(xb.shape), tuple(yb.shape))
model = init_deterministic(Stacked(2, 12, 2))
opt = torch.optim.AdamW(model.parameters(), lr=0.01)
best_err, live_best, frozen_best = np.inf, None, None
for epoch in range(3):
    errs = []
    for xb, yb in train:
        pred, _ = model(xb.float())
        loss = F.mse_loss(pred, yb.float())
        opt.zero_grad()
        loss.backward()
        opt.step()
        errs.append(loss.item())
    with torch.no_grad():
        val = np.mean([F.mse_loss(model(x.float())[0], y.float()).item() for x, y in valid])
    print("epoch", epoch, f"{np.mean(errs):.6f}", f"{val:.6f}")
    if epoch == 0:          # a snapshot after the first epoch, kept both ways
        best_err, live_best, frozen_best = val, model.state_dict(), copy.deepcopy(model.state_dict())
w_now = model.head.weight
print(torch.equal(live_best["head.weight"], w_now), torch.equal(frozen_best["head.weight"], w_now))
model.load_state_dict(frozen_best)

seq, _ = ds[0]
x = torch.from_numpy(seq).float().unsqueeze(0)[:, :15]
with torch.no_grad():
    yhat, h = model(x)
    yhat = yhat[np.newaxis, :, :]
    path = torch.cat((x, yhat), dim=1)
    for _ in range(8):
        yhat, h = model(yhat, state=h)
        yhat = yhat[np.newaxis, :, :]
        path = torch.cat((path, yhat), dim=1)
print(tuple(path.shape), tuple(h.shape), np.round(path[0, -2:].numpy(), 4).tolist(), path.requires_grad)

series = (100 + 3 * np.arange(40) + 20 * np.sin(np.arange(40) / 2)).astype("float32").reshape(-1, 1)
feats = [series[i:i + 4] for i in range(len(series) - 4)]
X = torch.tensor(feats)                                     # a list of arrays: slow, and PyTorch warns
Y = torch.tensor(np.array([series[i + 1:i + 5] for i in range(len(series) - 4)]))
lstm = init_deterministic(nn.LSTM(1, 6, batch_first=True), 0.05)
lin = init_deterministic(nn.Linear(6, 1), 0.05)
with torch.no_grad():
    out = lin(lstm(X / 100)[0]) * 100
rmse = np.sqrt(F.mse_loss(out, Y))
print(tuple(X.shape), X.dtype, f"{float(rmse):.4f}", type(rmse).__name__)


def pinball_max(pred, target, q):
    e = target - pred
    return torch.max((q - 1) * e, q * e).mean()


def pinball_mask(pred, target, q):
    d = pred - target
    return ((d.ge(0).float() - q).detach() * d).mean()


def pinball_inplace(pred, target, q):
    u = target - pred
    return (q - (u.detach() <= 0).float()).mul_(u).mean()


pred = torch.linspace(-1, 1, 12).reshape(3, 4).requires_grad_()
target = torch.cos(torch.arange(12.0)).reshape(3, 4)
qs = torch.tensor([0.1, 0.5, 0.9, 0.95])
losses = [f(pred, target, qs) for f in (pinball_max, pinball_mask, pinball_inplace)]
grads = [torch.autograd.grad(l, pred)[0] for l in losses]
print([round(l.item(), 6) for l in losses], all(torch.allclose(grads[0], g) for g in grads[1:]))
print(grads[0][0].tolist())


class CausalBlock(nn.Module):
    def __init__(self, c_in, c_out, k, dilation):
        super().__init__()
        self.cut = (k - 1) * dilation
        self.conv1 = weight_norm(nn.Conv1d(c_in, c_out, k, padding=self.cut, dilation=dilation))
        self.conv2 = weight_norm(nn.Conv1d(c_out, c_out, k, padding=self.cut, dilation=dilation))
        self.skip = nn.Conv1d(c_in, c_out, 1) if c_in != c_out else None

    def forward(self, x):
        y = F.relu(self.conv1(x)[:, :, :-self.cut].contiguous())
        y = F.relu(self.conv2(y)[:, :, :-self.cut].contiguous())
        return F.relu(y + (x if self.skip is None else self.skip(x)))


tcn = init_deterministic(nn.Sequential(CausalBlock(2, 6, 2, 1), CausalBlock(6, 6, 2, 2)), 0.3)
print([n for n, _ in tcn[0].named_parameters()][:4])
inp = torch.sin(torch.arange(2 * 2 * 16, dtype=torch.float32).reshape(2, 2, 16) / 2)
late = inp.clone()
late[..., 12:] += 1.0
a, b = tcn(inp), tcn(late)
print(tuple(a.shape), torch.allclose(a[..., :12], b[..., :12]), torch.allclose(a, b))
a.mean().backward()
print(f"{tcn[0].conv1.weight_g.grad.abs().sum().item():.6f}", tuple(tcn[1].conv2.weight_v.grad.shape))
