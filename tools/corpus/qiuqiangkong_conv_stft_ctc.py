"""A learnable-frontend speech pipeline: an STFT computed by two Conv1d layers whose kernels are
the windowed real and imaginary DFT bases (after reflect padding), checked against torch.stft,
inverted by overlap-add with F.fold and against torch.istft; a hand-built triangular mel
filterbank, log-mel and a DCT by matmul (MFCC); a small dilated Conv1d + bidirectional GRU
acoustic model trained for a few steps with CTC loss on padded and concatenated targets, greedy
CTC decoding; and the errors scripts hit: negative CTC lengths, a 4-D stft input.

Inspired by qiuqiangkong/torchlibrosa (torchlibrosa/stft.py); written for this corpus with a
numpy periodic Hann window instead of librosa, random signals and weights drawn with numpy.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rs = np.random.RandomState(5)
N_FFT, HOP = 64, 16


def hann(n):
    return 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)


class ConvSTFT(nn.Module):
    def __init__(self, n_fft, hop):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        k = np.arange(n_fft)
        basis = np.exp(-2j * np.pi * np.outer(k, k) / n_fft)[:, : n_fft // 2 + 1] * hann(n_fft)[:, None]
        self.real = nn.Conv1d(1, n_fft // 2 + 1, n_fft, stride=hop, bias=False)
        self.imag = nn.Conv1d(1, n_fft // 2 + 1, n_fft, stride=hop, bias=False)
        self.real.weight.data = torch.Tensor(basis.real.T)[:, None, :]
        self.imag.weight.data = torch.Tensor(basis.imag.T)[:, None, :]
        for p in self.parameters():
            p.requires_grad = False

    def forward(self, x):
        x = F.pad(x[:, None, :], (self.n_fft // 2, self.n_fft // 2), mode='reflect')
        return self.real(x), self.imag(x)


def overlap_add(frames, hop, n_fft):
    total = (frames.shape[-1] - 1) * hop + n_fft
    y = F.fold(frames, output_size=(1, total), kernel_size=(1, n_fft), stride=(1, hop))
    win = torch.Tensor(hann(n_fft) ** 2)[None, :, None].repeat(1, 1, frames.shape[-1])
    norm = F.fold(win, output_size=(1, total), kernel_size=(1, n_fft), stride=(1, hop))
    return (y / norm.clamp(min=1e-11))[:, 0, 0, n_fft // 2: total - n_fft // 2]


def mel_filterbank(sr, n_fft, n_mels):
    hz_to_mel = lambda f: 2595.0 * math.log10(1.0 + f / 700.0)
    mel = torch.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2), n_mels + 2)
    hz = 700.0 * (10 ** (mel / 2595.0) - 1.0)
    freqs = torch.linspace(0, sr / 2, n_fft // 2 + 1)
    lower = (freqs[None, :] - hz[:-2, None]) / (hz[1:-1, None] - hz[:-2, None])
    upper = (hz[2:, None] - freqs[None, :]) / (hz[2:, None] - hz[1:-1, None])
    return torch.clamp(torch.minimum(lower, upper), min=0.0)


wave = torch.from_numpy(rs.uniform(-1, 1, (3, 800)).astype(np.float32))
stft = ConvSTFT(N_FFT, HOP)
re, im = stft(wave)
ref = torch.stft(wave, N_FFT, HOP, window=torch.hann_window(N_FFT), return_complex=True)
print("conv stft", tuple(re.shape), "torch.stft", tuple(ref.shape), ref.dtype,
      "max diff < 1e-3:", bool((torch.complex(re, im) - ref).abs().max() < 1e-3))
full_re = torch.cat([re, re[:, 1:-1].flip(1)], 1)
full_im = torch.cat([im, -im[:, 1:-1].flip(1)], 1)
k = np.arange(N_FFT)
inv = np.exp(2j * np.pi * np.outer(k, k) / N_FFT) / N_FFT * hann(N_FFT)[None, :]
frames = torch.einsum('bkt,kn->bnt', full_re, torch.Tensor(inv.real)) - \
    torch.einsum('bkt,kn->bnt', full_im, torch.Tensor(inv.imag))
rebuilt = overlap_add(frames, HOP, N_FFT)
print("overlap-add", tuple(rebuilt.shape), "error < 1e-4:", bool((rebuilt - wave).abs().max() < 1e-4))
back = torch.istft(ref, N_FFT, HOP, window=torch.hann_window(N_FFT), length=800)
print("istft", tuple(back.shape), "error < 1e-4:", bool((back - wave).abs().max() < 1e-4))

fb = mel_filterbank(8000, N_FFT, 12)
power = re ** 2 + im ** 2
logmel = torch.log(torch.matmul(fb, power) + 1e-6)
n = torch.arange(12, dtype=torch.float32)
dct = torch.cos(math.pi / 12 * (n[None, :] + 0.5) * n[:, None]) * math.sqrt(2.0 / 12)
dct[0] /= math.sqrt(2.0)
mfcc = torch.matmul(dct[:8], logmel)
print("filterbank", tuple(fb.shape), "peaks", fb.max(dim=1).values.numpy().round(3)[:4])
print("log-mel", tuple(logmel.shape), "mean %.4f" % logmel.mean().item(), "mfcc", tuple(mfcc.shape),
      "c0 mean %.4f" % mfcc[:, 0].mean().item())


class Acoustic(nn.Module):
    def __init__(self, n_in, n_classes):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(n_in, 16, 3, padding=2, dilation=2), nn.GELU(),
                                  nn.Conv1d(16, 16, 3, padding=1))
        self.norm = nn.LayerNorm(16)
        self.rnn = nn.GRU(16, 12, batch_first=True, bidirectional=True)
        self.out = nn.Linear(24, n_classes)

    def forward(self, x):
        h = self.norm(self.conv(x).transpose(1, 2))
        h, _ = self.rnn(h)
        return self.out(h).log_softmax(-1).transpose(0, 1)


model = Acoustic(8, 7)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rs.normal(0, 0.2, tuple(p.shape)).astype(np.float32)))
feats = (mfcc - mfcc.mean(dim=2, keepdim=True)) / (mfcc.std(dim=2, keepdim=True) + 1e-5)
targets = torch.tensor([[1, 2, 2, 5], [3, 4, 0, 0], [6, 6, 1, 2]])
target_lengths = torch.tensor([4, 2, 4])
input_lengths = torch.tensor([51, 40, 45])
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
ctc = nn.CTCLoss(blank=0, zero_infinity=True)
for step in range(4):
    log_probs = model(feats)
    loss = ctc(log_probs, targets, input_lengths, target_lengths)
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    opt.step()
    print(step, tuple(log_probs.shape), "ctc %.4f" % loss.item())
flat = torch.cat([targets[0, :4], targets[1, :2], targets[2, :4]])
per_sample = F.ctc_loss(log_probs, flat, input_lengths, target_lengths, reduction='none')
print("concatenated targets", per_sample.detach().numpy().round(3))
for seq in log_probs.argmax(-1).T.tolist():
    decoded = [s for i, s in enumerate(seq) if s != 0 and (i == 0 or s != seq[i - 1])]
    print("greedy", decoded[:8])

for name, call in [
        ("negative input length",
         lambda: F.ctc_loss(log_probs, targets, torch.tensor([51, -1, 45]), target_lengths)),
        ("negative target length",
         lambda: F.ctc_loss(log_probs, targets, input_lengths, torch.tensor([4, -2, 4]))),
        ("input length past T",
         lambda: F.ctc_loss(log_probs, targets, torch.tensor([52, 40, 45]), target_lengths)),
        ("4-D stft input",
         lambda: torch.stft(wave.view(1, 1, 3, 800), N_FFT, HOP, window=torch.hann_window(N_FFT),
                            return_complex=True))]:
    try:
        call()
        print(name, "accepted")
    except (RuntimeError, NotImplementedError) as e:
        print(name, type(e).__name__, str(e).splitlines()[0][:70])
