"""Long-horizon forecasting pieces as in FedeCarollo's PatchTST, AdrianNeuer's DLinear (MTSA) and
wayne155's pytorch_timeseries decompositions: a series split into trend and seasonal parts three
ways (edge-repeated moving average through AvgPool1d, the same through F.pad(mode='replicate') and
avg_pool1d, and a first-difference decomposition with torch.diff and a zero row of F.pad) and
checked to agree; a softmax-weighted mixture of moving averages of several kernel sizes with its
gradient; a DLinear (two Linear maps over time) trained on windows cut with numpy's
sliding_window_view; a channel-independent PatchTST (replicate end padding, Tensor.unfold patches,
learnable positional embedding, TransformerEncoder, flatten head) trained a few steps in eval mode;
and MSE / MAE / MAPE / SMAPE / RMSE written by hand with torch ops and with numpy."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from numpy.lib.stride_tricks import sliding_window_view


def init_deterministic(module, scale=0.2):
    # the random streams of two libraries differ: give every parameter a fixed pattern instead
    with torch.no_grad():
        for k, p in enumerate(module.parameters()):
            n = torch.arange(p.numel(), dtype=p.dtype)
            p.copy_((torch.cos(n * (0.37 + 0.11 * k)) * scale).reshape(p.shape))
    return module


class EdgeMovingAverage(nn.Module):
    def __init__(self, kernel):
        super().__init__()
        self.kernel = kernel
        self.pool = nn.AvgPool1d(kernel_size=kernel, stride=1, padding=0)

    def forward(self, x):                        # x: (B, T, C)
        half = (self.kernel - 1) // 2
        head = x[:, :1, :].repeat(1, half, 1)
        tail = x[:, -1:, :].repeat(1, half, 1)
        padded = torch.cat([head, x, tail], dim=1)
        return self.pool(padded.permute(0, 2, 1)).permute(0, 2, 1)


def decompose_replicate(x, kernel):
    half = (kernel - 1) // 2
    trend = F.avg_pool1d(F.pad(x.transpose(1, 2), (half, half), mode="replicate"), kernel, stride=1)
    trend = trend.transpose(1, 2)
    return x - trend, trend


def decompose_diff(x):
    step = torch.diff(x, dim=1)
    trend = F.pad(step, (0, 0, 1, 0))
    return x - trend, trend


class MixtureOfAverages(nn.Module):
    def __init__(self, kernels):
        super().__init__()
        self.averages = nn.ModuleList(EdgeMovingAverage(k) for k in kernels)
        self.gate = nn.Linear(1, len(kernels))

    def forward(self, x):
        stacked = torch.stack([avg(x) for avg in self.averages], dim=-1)
        weights = torch.softmax(self.gate(x.unsqueeze(-1)), dim=-1)
        trend = (stacked * weights).sum(-1)
        return x - trend, trend


steps = torch.arange(2 * 60 * 3, dtype=torch.float64).reshape(2, 60, 3)
x = (torch.sin(steps / 5) + 0.3 * torch.cos(steps / 2) + steps / 90).requires_grad_()
seasonal, trend = (lambda r: (x - r, r))(EdgeMovingAverage(25)(x))
seasonal2, trend2 = decompose_replicate(x, 25)
print(trend.shape, trend.dtype, torch.allclose(trend, trend2), torch.allclose(seasonal + trend, x))
s3, t3 = decompose_diff(x)
print(t3[0, :3, 0].tolist() == [0.0, *torch.diff(x[0, :3, 0]).tolist()], bool(t3.requires_grad))
mix = init_deterministic(MixtureOfAverages([5, 13, 25]).double())
res, mt = mix(x)
(res.pow(2).mean() + 0.5 * trend2.abs().mean()).backward()
print(f"{mt.sum().item():.6f}", f"{x.grad.abs().sum().item():.6f}", f"{mix.gate.weight.grad.norm().item():.6f}")
print(torch.autograd.gradcheck(lambda z: decompose_replicate(z, 5)[1], (x.detach()[:1, :9].clone().requires_grad_(),)))


class DLinear(nn.Module):
    def __init__(self, seq_len, pred_len, kernel=25):
        super().__init__()
        self.average = EdgeMovingAverage(kernel)
        self.seasonal = nn.Linear(seq_len, pred_len)
        self.trend = nn.Linear(seq_len, pred_len)

    def forward(self, x):
        t = self.average(x)
        s = x - t
        out = self.seasonal(s.permute(0, 2, 1)) + self.trend(t.permute(0, 2, 1))
        return out.permute(0, 2, 1)


seq_len, pred_len = 32, 8
tt = np.arange(300, dtype=np.float64)
raw = np.stack([np.sin(tt / 6) + 2 + 0.01 * tt, np.cos(tt / 11) + 3], axis=-1)
windows = sliding_window_view(raw, (seq_len + pred_len, raw.shape[-1]))[:, 0]
data = torch.from_numpy(windows[::3].copy())
inputs, targets = data[:, :seq_len].float(), data[:, seq_len:].float()
print(windows.shape, data.dtype, inputs.shape, targets.shape)
model = init_deterministic(DLinear(seq_len, pred_len), 0.05)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(3):
    total = 0.0
    for start in range(0, len(inputs), 32):
        xb, yb = inputs[start:start + 32], targets[start:start + 32]
        loss = F.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * len(xb)
    print("dlinear epoch", epoch, f"{total / len(inputs):.5f}")


def metrics_torch(pred, true):
    err = pred - true
    return {"mse": err.pow(2).mean().item(), "mae": err.abs().mean().item(),
            "rmse": torch.sqrt(err.pow(2).mean()).item(),
            "mape": (100 * (err / true).abs().mean()).item(),
            "smape": (200 * (err.abs() / (pred.abs() + true.abs())).mean()).item()}


with torch.no_grad():
    pred = model(inputs[-10:])
m_t = metrics_torch(pred, targets[-10:])
p_np, y_np = pred.numpy(), targets[-10:].numpy()
m_np = {"mse": np.mean((p_np - y_np) ** 2), "mae": np.mean(np.abs(p_np - y_np))}
print({k: round(v, 4) for k, v in m_t.items()}, round(float(m_np["mse"]), 4), p_np.dtype)


class PatchForecaster(nn.Module):
    def __init__(self, seq_len, patch, stride, d_model, horizon):
        super().__init__()
        self.patch, self.stride = patch, stride
        n_patches = (seq_len + stride - patch) // stride + 1
        self.embed = nn.Linear(patch, d_model)
        self.position = nn.Parameter(torch.zeros(1, n_patches, d_model))
        layer = nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=2 * d_model, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.Flatten(start_dim=1), nn.Linear(n_patches * d_model, horizon))

    def forward(self, x):                      # x: (B, C, T), each channel on its own
        b, c, _ = x.shape
        x = F.pad(x, (0, self.stride), mode="replicate")
        patches = x.unfold(dimension=-1, size=self.patch, step=self.stride)
        patches = patches.reshape(b * c, patches.shape[2], patches.shape[3])
        z = self.encoder(self.embed(patches) + self.position)
        return self.head(z).view(b, c, -1)


series = inputs.permute(0, 2, 1)[:12]           # (B, C, T)
future = targets.permute(0, 2, 1)[:12]
pt = init_deterministic(PatchForecaster(seq_len, 8, 4, 16, pred_len), 0.1)
pt.eval()                                        # dropout off: the runs must be comparable
print(F.pad(series, (0, 4), mode="replicate").unfold(-1, 8, 4).shape, pt.position.shape)
opt = torch.optim.AdamW(pt.parameters(), lr=1e-3, weight_decay=0.01)
for step in range(3):
    out = pt(series)
    loss = F.l1_loss(out, future)
    opt.zero_grad()
    loss.backward()
    gn = nn.utils.clip_grad_norm_(pt.parameters(), 1.0)
    opt.step()
    print("patch step", step, tuple(out.shape), f"{loss.item():.5f}", f"{gn.item():.5f}")
print(sum(p.numel() for p in pt.parameters()))
