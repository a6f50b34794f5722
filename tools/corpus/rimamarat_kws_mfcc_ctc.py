"""Speech front end and models without torchaudio, in the style of RimAmarat/SpeechCommands' M5
keyword spotter and the usual CTC recipes (written for this corpus, not a copy): an HTK mel
filterbank built from torch.linspace / log10 / a min-of-slopes clamp, an orthonormal DCT-II
matrix, log-mel and MFCC features from torch.stft(return_complex=True) with a hann_window
buffer, .abs().pow(2) and matmul, an 80 dB floor via amax, delta features with a grouped
conv1d over replicate padding, frames from Tensor.unfold, istft round trip; an M5-style raw
waveform Conv1d(stride 16) / BatchNorm1d / MaxPool1d stack with avg_pool1d over the whole time
axis, log_softmax over dim 2 and nll_loss on .squeeze(); padded batches from pad_sequence; a
causal dilated Conv1d (padding then right trim) with gated tanh * sigmoid units; CTC training
with nn.CTCLoss(zero_infinity=True) over (T, N, C) log-probs with concatenated targets, tuple
lengths and int32 length tensors, greedy decoding with argmax + unique_consecutive, and an
impossible alignment that is inf without zero_infinity.  Every random draw comes from one numpy
RandomState.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rs = np.random.RandomState(21)
SR = 8000


def randn(*shape):
    return torch.from_numpy(rs.randn(*shape).astype(np.float32))


def init_(module, scale=0.5):
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() > 1:
                p.copy_(torch.from_numpy((scale * rs.randn(*p.shape) / np.sqrt(p[0].numel())).astype(np.float32)))
            elif "bias" in name:
                p.copy_(torch.from_numpy((0.05 * rs.randn(*p.shape)).astype(np.float32)))
    return module


def hz_to_mel(f):
    return 2595.0 * torch.log10(1.0 + f / 700.0)


def mel_to_hz(m):
    return 700.0 * (10.0 ** (m / 2595.0) - 1.0)


def mel_filterbank(n_freqs, sr, n_mels):
    freqs = torch.linspace(0, sr // 2, n_freqs)
    mels = torch.linspace(hz_to_mel(torch.tensor(0.0)), hz_to_mel(torch.tensor(sr / 2)), n_mels + 2)
    pts = mel_to_hz(mels)
    widths = pts[1:] - pts[:-1]
    slopes = pts.unsqueeze(0) - freqs.unsqueeze(1)
    down = -slopes[:, :-2] / widths[:-1]
    up = slopes[:, 2:] / widths[1:]
    return torch.max(torch.zeros(1), torch.min(down, up))


def dct_matrix(n_mfcc, n_mels):
    n = torch.arange(float(n_mels))
    k = torch.arange(float(n_mfcc)).unsqueeze(1)
    basis = torch.cos(math.pi / n_mels * (n + 0.5) * k)
    basis[0] *= 1.0 / math.sqrt(2.0)
    basis *= math.sqrt(2.0 / n_mels)
    return basis.t()


class Frontend(nn.Module):
    def __init__(self, n_fft=256, hop=80, n_mels=24, n_mfcc=10):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("window", torch.hann_window(n_fft))
        self.register_buffer("fb", mel_filterbank(n_fft // 2 + 1, SR, n_mels))
        self.register_buffer("dct", dct_matrix(n_mfcc, n_mels))

    def forward(self, wav):
        spec = torch.stft(wav, self.n_fft, self.hop, window=self.window, return_complex=True)
        power = spec.abs().pow(2.0)
        mel = torch.matmul(power.transpose(-1, -2), self.fb).transpose(-1, -2)
        db = 10.0 * torch.log10(torch.clamp(mel, min=1e-10))
        db = torch.max(db, db.amax(dim=(-2, -1), keepdim=True) - 80.0)
        return torch.matmul(db.transpose(-1, -2), self.dct).transpose(-1, -2)


t = torch.arange(SR // 2) / SR
tones = torch.stack([torch.sin(2 * math.pi * 300 * t), torch.sin(2 * math.pi * 1200 * t)])
wav = tones + 0.05 * randn(2, SR // 2)
front = Frontend()
feats = front(wav)
print("fb", tuple(front.fb.shape), round(front.fb.sum().item(), 3), "dct", tuple(front.dct.shape))
print("mfcc", tuple(feats.shape), feats.dtype, [round(v, 2) for v in feats[1, :4, 10].tolist()])
print("dct orthonormal:", torch.allclose(front.dct.t() @ front.dct, torch.eye(10), atol=1e-5))
frames = wav.unfold(-1, 200, 80)
print("frames", tuple(frames.shape), round(frames.pow(2).mean().item(), 4))
spec = torch.stft(wav[0], 128, 32, window=torch.hann_window(128), return_complex=True)
back = torch.istft(spec, 128, 32, window=torch.hann_window(128), length=wav.shape[1])
print("istft error < 1e-4:", bool((back - wav[0]).abs().max() < 1e-4), spec.dtype)
kernel = torch.tensor([-2.0, -1.0, 0.0, 1.0, 2.0]).view(1, 1, 5).repeat(10, 1, 1) / 10.0
delta = F.conv1d(F.pad(feats, (2, 2), mode="replicate"), kernel, groups=10)
print("delta", tuple(delta.shape), round(delta.abs().mean().item(), 4))
w = wav[:1].clone().requires_grad_()
front(w).sum().backward()
print("waveform grad finite:", bool(torch.isfinite(w.grad).all()), tuple(w.grad.shape))


class M5(nn.Module):
    def __init__(self, n_output=3, n_channel=8):
        super().__init__()
        self.conv1 = nn.Conv1d(1, n_channel, kernel_size=80, stride=16)
        self.bn1 = nn.BatchNorm1d(n_channel)
        self.pool1 = nn.MaxPool1d(4)
        self.conv2 = nn.Conv1d(n_channel, 2 * n_channel, kernel_size=3)
        self.bn2 = nn.BatchNorm1d(2 * n_channel)
        self.pool2 = nn.MaxPool1d(4)
        self.fc1 = nn.Linear(2 * n_channel, n_output)

    def forward(self, x):
        x = self.pool1(F.relu(self.bn1(self.conv1(x))))
        x = self.pool2(F.relu(self.bn2(self.conv2(x))))
        x = F.avg_pool1d(x, x.shape[-1])
        x = self.fc1(x.permute(0, 2, 1))
        return F.log_softmax(x, dim=2)


def pad_batch(batch):
    batch = [item.t() for item in batch]
    batch = nn.utils.rnn.pad_sequence(batch, batch_first=True, padding_value=0.0)
    return batch.permute(0, 2, 1)


labels = ["yes", "no", "up"]
clips = [randn(1, n) for n in (3000, 2800, 3000, 2500, 2900, 3000)]
batch = pad_batch(clips)
target = torch.tensor([labels.index(w) for w in ["yes", "no", "up", "yes", "no", "up"]])
model = init_(M5())
opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=1e-4)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
print("batch", tuple(batch.shape), "params", sum(p.numel() for p in model.parameters() if p.requires_grad))
for epoch in range(3):
    model.train()
    out = model(batch)
    loss = F.nll_loss(out.squeeze(), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    print(f"kws epoch {epoch} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.4f}")
model.eval()
with torch.no_grad():
    pred = model(batch).argmax(dim=-1)
print("pred", tuple(pred.shape), labels[pred[0].squeeze()] in labels, pred.squeeze().eq(target).sum().item() >= 0)


class CausalConv1d(nn.Conv1d):
    def __init__(self, cin, cout, kernel_size, dilation=1):
        super().__init__(cin, cout, kernel_size, dilation=dilation, padding=dilation * (kernel_size - 1))

    def forward(self, x):
        return super().forward(x)[:, :, :-self.padding[0]]


class CTCModel(nn.Module):
    def __init__(self, n_in=10, hidden=16, n_class=5):
        super().__init__()
        self.convs = nn.ModuleList([CausalConv1d(n_in if i == 0 else hidden, 2 * hidden, 2, 2 ** i)
                                    for i in range(3)])
        self.out = nn.Conv1d(hidden, n_class, 1)

    def forward(self, x):
        for conv in self.convs:
            f, g = conv(x).chunk(2, dim=1)
            h = torch.tanh(f) * torch.sigmoid(g)
            x = h
        return self.out(x)


ctc_model = init_(CTCModel())
probe = torch.zeros(1, 10, 12, requires_grad=True)
ctc_model(probe)[0, :, 5].sum().backward()
print("causal receptive field:", (probe.grad[0].abs().sum(0) != 0).int().tolist())
x = feats.repeat(2, 1, 1)[:, :, :40]
targets = torch.tensor([1, 2, 3, 2, 2, 4, 1, 3])
target_lengths = (2, 3, 1, 2)
input_lengths = torch.tensor([40, 36, 30, 40], dtype=torch.int32)
crit = nn.CTCLoss(blank=0, zero_infinity=True)
copt = torch.optim.Adam(ctc_model.parameters(), lr=0.02)
for step in range(4):
    logp = ctc_model(x).log_softmax(1).permute(2, 0, 1)
    loss = crit(logp, targets, input_lengths, torch.tensor(target_lengths))
    copt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(ctc_model.parameters(), 5.0)
    copt.step()
    print(f"ctc step {step} loss {loss.item():.4f} logp {tuple(logp.shape)}")
per_sample = F.ctc_loss(logp.detach(), targets, tuple(input_lengths.tolist()), target_lengths, reduction="none")
print("per sample", [round(v, 3) for v in per_sample.tolist()])
best = logp.detach().argmax(-1).t()
for row in best:
    collapsed = torch.unique_consecutive(row)
    print("greedy:", collapsed[collapsed != 0].tolist())
short = torch.from_numpy(rs.randn(2, 1, 5)).log_softmax(2)
print("impossible:", F.ctc_loss(short, torch.tensor([[1, 2, 3]]), [2], [3]).item(),
      F.ctc_loss(short, torch.tensor([[1, 2, 3]]), [2], [3], zero_infinity=True).item())
try:
    F.ctc_loss(logp.detach(), targets, input_lengths.float(), torch.tensor(target_lengths))
except RuntimeError as e:
    print("RuntimeError:", e)
