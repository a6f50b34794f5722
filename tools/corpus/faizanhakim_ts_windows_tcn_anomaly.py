"""Time-series forecasting and anomaly detection as in faizanhakim's LSTMAnomalyDetector,
shangzhihao/dl4ts's sliding-window dataset and the LSTM forecasting snippets: windows made three
ways (a Python loop over numpy, Tensor.unfold, as_strided) and checked equal, min-max and z-score
normalisation, a Dataset/DataLoader over windows, an LSTM next-step forecaster, a GRUCell
seq2seq decoder with teacher forcing alternating with its own (detached) predictions, a causal
TCN block (dilated Conv1d with weight_norm, chomp, residual 1x1), and an LSTM autoencoder whose
reconstruction error flags an injected spike above a mean + 2 std and a quantile threshold."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def fill(module, scale=0.3):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=p.dtype) * (0.29 + 0.17 * i)).reshape(p.shape) * scale)
    return module


t = np.arange(160, dtype=np.float32)
series_np = np.sin(t / 8.0) + 0.5 * np.cos(t / 3.0) + 0.01 * t
series_np[120] += 4.0                                   # the anomaly
series = torch.from_numpy(series_np)
lo, hi = series.min(), series.max()
scaled = (series - lo) / (hi - lo)
z = (series - series.mean()) / series.std()
print(series.dtype, f"{scaled.min().item():.3f} {scaled.max().item():.3f}", f"{z.std().item():.4f}")

W = 12
loop = torch.tensor(np.array([scaled.numpy()[i:i + W] for i in range(len(scaled) - W)]))
unf = scaled.unfold(0, W, 1)[:-1]
strided = scaled.as_strided((len(scaled) - W, W), (1, 1))
targets = scaled[W:]
print(loop.shape, torch.equal(loop, unf), torch.equal(unf, strided), strided.stride(), unf.is_contiguous())


class Windows(torch.utils.data.Dataset):
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i].unsqueeze(-1), self.y[i]


loader = torch.utils.data.DataLoader(Windows(unf, targets), batch_size=64, shuffle=False)


class Forecaster(nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.lstm = nn.LSTM(1, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return self.head(out[:, -1]).squeeze(-1)


model = fill(Forecaster())
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(2):
    total = 0.0
    for xb, yb in loader:
        loss = F.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        total += loss.item() * len(xb)
    print("forecast epoch", epoch, f"{total / len(unf):.6f}", xb.shape)

# seq2seq with teacher forcing on every other step
enc = fill(nn.GRU(1, 6, batch_first=True))
dec = fill(nn.GRUCell(1, 6))
proj = fill(nn.Linear(6, 1))
src, tgt = unf[:16, :8].unsqueeze(-1), unf[:16, 8:].unsqueeze(-1)
s2s_opt = torch.optim.SGD(list(enc.parameters()) + list(dec.parameters()) + list(proj.parameters()), lr=0.1, momentum=0.9)
for step in range(3):
    _, h = enc(src)
    hx, inp, preds = h[0], src[:, -1], []
    for k in range(tgt.shape[1]):
        hx = dec(inp, hx)
        y = proj(hx)
        preds.append(y)
        inp = tgt[:, k] if k % 2 == 0 else y.detach()
    pred = torch.stack(preds, dim=1)
    loss = F.smooth_l1_loss(pred, tgt, beta=0.5)
    s2s_opt.zero_grad()
    loss.backward()
    s2s_opt.step()
    print("seq2seq", step, f"{loss.item():.6f}", pred.shape)


class CausalBlock(nn.Module):
    def __init__(self, cin, cout, k, dilation):
        super().__init__()
        self.pad = (k - 1) * dilation
        self.conv = nn.utils.weight_norm(nn.Conv1d(cin, cout, k, padding=self.pad, dilation=dilation))
        self.down = nn.Conv1d(cin, cout, 1) if cin != cout else None

    def forward(self, x):
        y = F.relu(self.conv(x)[:, :, :-self.pad])
        return F.relu(y + (x if self.down is None else self.down(x)))


tcn = nn.Sequential(CausalBlock(1, 4, 3, 1), CausalBlock(4, 4, 3, 2))
fill(tcn)
tcn_head = fill(nn.Linear(4, 1))
tcn_opt = torch.optim.AdamW(list(tcn.parameters()) + list(tcn_head.parameters()), lr=0.01, weight_decay=0.01)
xb = unf[:32].unsqueeze(1)
for step in range(3):
    feats = tcn(xb)
    loss = F.l1_loss(tcn_head(feats[:, :, -1]).squeeze(-1), targets[:32])
    tcn_opt.zero_grad()
    loss.backward()
    tcn_opt.step()
    print("tcn", step, f"{loss.item():.6f}", feats.shape, [n for n, _ in tcn[0].named_parameters()][:3])


class LSTMAutoencoder(nn.Module):
    def __init__(self, n_features=1, hidden=6):
        super().__init__()
        self.encoder = nn.LSTM(n_features, hidden, batch_first=True)
        self.decoder = nn.LSTM(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_features)

    def forward(self, x):
        _, (h, _) = self.encoder(x)
        rep = h[-1].unsqueeze(1).repeat(1, x.shape[1], 1)
        dec_out, _ = self.decoder(rep)
        return self.out(dec_out)


windows = z.unfold(0, 10, 5).unsqueeze(-1)
ae = fill(LSTMAutoencoder())
ae_opt = torch.optim.RMSprop(ae.parameters(), lr=0.005)
for step in range(3):
    recon = ae(windows)
    loss = nn.L1Loss()(recon, windows)
    ae_opt.zero_grad()
    loss.backward()
    ae_opt.step()
    print("ae", step, f"{loss.item():.6f}", recon.shape)
ae.eval()
with torch.no_grad():
    err = (ae(windows) - windows).abs().mean(dim=(1, 2))
threshold = err.mean() + 2 * err.std()
print("flagged", torch.nonzero(err > threshold).flatten().tolist(),
      "q95 flagged", (err > torch.quantile(err, 0.95)).nonzero().flatten().tolist())
