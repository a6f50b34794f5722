"""Frequency-domain and association-based time-series models in the style of thuml's Autoformer,
TimesNet and Anomaly-Transformer: series autocorrelation through rfft, the conjugate product and
irfft (checked against a direct lag sum); the top-k delay aggregation done two ways (torch.roll of
the values per delay, and torch.gather from values repeated twice along time) which must agree;
TimesNet's dominant-period search (abs of the spectrum, topk, numpy integer division) folding a
padded series into a 2-D (periods x phase) grid for a Conv2d and back; a circular-padded Conv1d
token embedding with sinusoidal positions; and an anomaly-attention layer whose learned Gaussian
prior (sigmoid/pow of a projected sigma over a |i-j| distance table) and softmax series
association give a symmetric KL discrepancy, trained minimax style with two backward passes over
one graph (retain_graph), then scoring windows and thresholding at a percentile."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def init_deterministic(module, scale=0.25):
    with torch.no_grad():
        for k, p in enumerate(module.parameters()):
            n = torch.arange(p.numel(), dtype=p.dtype)
            p.copy_((torch.sin(n * (0.41 + 0.13 * k) + 0.3) * scale).reshape(p.shape))
    return module


def autocorrelation(q, k):
    # q, k: (..., T) -> correlation at every lag, (..., T)
    spec = torch.fft.rfft(q, dim=-1) * torch.conj(torch.fft.rfft(k, dim=-1))
    return torch.fft.irfft(spec, n=q.shape[-1], dim=-1)


T = 20
t = torch.arange(3 * T, dtype=torch.float64).reshape(3, T)
sig = torch.sin(2 * math.pi * t / 5) + 0.2 * torch.cos(2 * math.pi * t / 4)
corr = autocorrelation(sig, sig)
direct = torch.stack([(sig * torch.roll(sig, -lag, dims=-1)).sum(-1) for lag in range(T)], dim=-1)
# a self-correlation is symmetric (lag l and T - l tie), so the argmax looks at the first half
print(corr.shape, corr.dtype, torch.allclose(corr, direct), int(corr[0, 1:T // 2].argmax()) + 1)


def aggregate_by_roll(values, corr, k):
    # values, corr: (B, C, T); the batch-mean top-k lags shared by every row
    lags = torch.topk(corr.mean(1).mean(0), k).indices
    weights = torch.softmax(torch.stack([corr.mean(1)[:, lag] for lag in lags], dim=-1), dim=-1)
    out = torch.zeros_like(values)
    for i in range(k):
        out = out + torch.roll(values, -int(lags[i]), dims=-1) * weights[:, i].view(-1, 1, 1)
    return out, lags


def aggregate_by_gather(values, lags, corr):
    b, c, length = values.shape
    weights = torch.softmax(torch.stack([corr.mean(1)[:, lag] for lag in lags], dim=-1), dim=-1)
    doubled = values.repeat(1, 1, 2)
    base = torch.arange(length).view(1, 1, -1).expand(b, c, length)
    out = torch.zeros_like(values)
    for i, lag in enumerate(lags.tolist()):
        out = out + torch.gather(doubled, -1, base + lag) * weights[:, i].view(-1, 1, 1)
    return out


vals = torch.stack([sig, sig.flip(-1), sig * 0.5], dim=1).requires_grad_()   # (3, 3, T)
keys = 0.7 * vals + 0.3 * torch.roll(vals, 1, dims=-1)     # queries and keys differ: no tied lags
c3 = autocorrelation(vals, keys)
k = int(2 * math.log(T))
by_roll, lags = aggregate_by_roll(vals, c3, k)
by_gather = aggregate_by_gather(vals, lags, c3)
print(k, lags.tolist(), torch.allclose(by_roll, by_gather))
g1, = torch.autograd.grad(by_roll.pow(2).sum(), vals, retain_graph=True)
g2, = torch.autograd.grad(by_gather.pow(2).sum(), vals)
print(f"{g1.abs().sum().item():.6f}", torch.allclose(g1, g2))


def dominant_periods(x, k):
    amp = torch.fft.rfft(x, dim=1).abs()                 # x: (B, T, C)
    freq = amp.mean(0).mean(-1)
    freq[0] = 0
    top = torch.topk(freq, k).indices.numpy()
    return x.shape[1] // top, amp.mean(-1)[:, top]


class TokenEmbedding(nn.Module):
    def __init__(self, c_in, d_model, max_len=64):
        super().__init__()
        self.conv = nn.Conv1d(c_in, d_model, 3, padding=1, padding_mode="circular", bias=False)
        pos = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
        freq = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(pos * freq)
        pe[:, 1::2] = torch.cos(pos * freq)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return self.conv(x.transpose(1, 2)).transpose(1, 2) + self.pe[:, :x.shape[1]]


class PeriodFold(nn.Module):
    def __init__(self, d_model, k=2):
        super().__init__()
        self.k = k
        self.conv = nn.Sequential(nn.Conv2d(d_model, d_model, 3, padding=1), nn.GELU())

    def forward(self, x):
        b, length, n = x.shape
        periods, weight = dominant_periods(x, self.k)
        outs = []
        for p in periods.tolist():
            rows = -(-length // p)
            padded = torch.cat([x, x.new_zeros(b, rows * p - length, n)], dim=1)
            grid = padded.reshape(b, rows, p, n).permute(0, 3, 1, 2)
            outs.append(self.conv(grid).permute(0, 2, 3, 1).reshape(b, -1, n)[:, :length])
        w = torch.softmax(weight, dim=1).view(b, 1, 1, self.k)
        return x + (torch.stack(outs, dim=-1) * w).sum(-1), periods


B, L, C, D = 4, 24, 2, 8
tt = torch.arange(B * L * C, dtype=torch.float32).reshape(B, L, C)
series = torch.sin(2 * math.pi * tt / 6) + 0.4 * torch.cos(2 * math.pi * tt / 8)
emb = init_deterministic(TokenEmbedding(C, D))
fold = init_deterministic(PeriodFold(D), 0.1)
h, periods = fold(emb(series))
print(periods, periods.dtype, type(periods).__name__, h.shape, emb.pe.shape, list(emb.state_dict()))
h.pow(2).mean().backward()
print(f"{emb.conv.weight.grad.abs().sum().item():.5f}", f"{fold.conv[0].bias.grad.sum().item():.5f}")


def kl(p, q):
    return (p * (torch.log(p + 1e-4) - torch.log(q + 1e-4))).sum(-1).mean(1)


class AnomalyAttention(nn.Module):
    def __init__(self, win, d_model, heads):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.sigma = nn.Linear(d_model, heads)
        self.out = nn.Linear(d_model, d_model)
        idx = torch.arange(win, dtype=torch.float32)
        self.register_buffer("dist", (idx[:, None] - idx[None, :]).abs(), persistent=False)

    def forward(self, x):
        b, l, d = x.shape
        h = self.heads
        q = self.q(x).view(b, l, h, -1)
        k = self.k(x).view(b, l, h, -1)
        v = self.v(x).view(b, l, h, -1)
        scores = torch.einsum("blhe,bshe->bhls", q, k) / math.sqrt(q.shape[-1])
        series = torch.softmax(scores, dim=-1)
        sigma = torch.sigmoid(self.sigma(x).transpose(1, 2) * 5) + 1e-5
        sigma = (torch.pow(3, sigma) - 1).unsqueeze(-1).expand(-1, -1, -1, l)
        prior = torch.exp(-self.dist ** 2 / 2 / sigma ** 2) / (math.sqrt(2 * math.pi) * sigma)
        prior = prior / prior.sum(-1, keepdim=True)
        out = torch.einsum("bhls,bshd->blhd", series, v).reshape(b, l, d)
        return self.out(out), series, prior


win = 10
raw = np.sin(np.arange(90, dtype=np.float32) / 3)
raw[61] += 2.5
windows = torch.from_numpy(np.lib.stride_tricks.sliding_window_view(raw, win)[::2].copy()).unsqueeze(-1)
inp = init_deterministic(nn.Linear(1, D), 0.5)
att = init_deterministic(AnomalyAttention(win, D, 2), 0.3)
outp = init_deterministic(nn.Linear(D, 1), 0.5)
params = [*inp.parameters(), *att.parameters(), *outp.parameters()]
opt = torch.optim.Adam(params, lr=1e-3)
print(windows.shape, len(params), list(att.state_dict()).count("dist"))
for step in range(3):
    xb = windows[step * 8:(step + 1) * 8]
    z, series_a, prior = att(inp(xb))
    rec = F.mse_loss(outp(z), xb)
    series_gap = kl(series_a, prior.detach()).mean() + kl(prior.detach(), series_a).mean()
    prior_gap = kl(prior, series_a.detach()).mean() + kl(series_a.detach(), prior).mean()
    opt.zero_grad()
    (rec - 3.0 * series_gap).backward(retain_graph=True)
    (rec + 3.0 * prior_gap).backward()
    opt.step()
    print("minimax", step, f"{rec.item():.5f} {series_gap.item():.5f} {prior_gap.item():.5f}")
with torch.no_grad():
    z, series_a, prior = att(inp(windows))
    err = F.mse_loss(outp(z), windows, reduction="none").mean(-1)
    gap = torch.softmax(-(kl(series_a, prior) + kl(prior, series_a)) * 50, dim=-1)
    score = (gap * err).numpy()
cut = np.percentile(score.ravel(), 95)
flags = score.ravel() > cut
print(score.shape, f"{cut:.6f}", int(flags.sum()), int(np.argmax(score.ravel())) // win)
