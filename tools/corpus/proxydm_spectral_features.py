import torch
import math
sr = 800
t = torch.arange(800) / sr
x = torch.sin(2 * math.pi * 50 * t) + 0.5 * torch.sin(2 * math.pi * 120 * t)
n_fft, hop = 128, 64
win = torch.hann_window(n_fft)
S = torch.stft(x, n_fft, hop, window=win, center=True, return_complex=True)
mag = S.abs()
freqs = torch.linspace(0, sr / 2, n_fft // 2 + 1)
centroid = (freqs[:, None] * mag).sum(0) / mag.sum(0).clamp_min(1e-8)
print(centroid.shape, centroid[3:6])
bw = torch.sqrt(((freqs[:, None] - centroid) ** 2 * mag).sum(0) / mag.sum(0))
print(bw[3:6])
flat = torch.exp(torch.log(mag + 1e-10).mean(0)) / (mag.mean(0) + 1e-10)
print(flat[3:6])
cum = torch.cumsum(mag, dim=0)
rolloff = (cum < 0.85 * cum[-1:]).sum(0)
print(rolloff[3:8])
flux = torch.diff(mag, dim=1).clamp(min=0).pow(2).sum(0).sqrt()
print(flux.shape, flux[3:6])
zcr = (torch.sign(x[1:]) != torch.sign(x[:-1])).float().mean()
print(zcr)
frames = x.unfold(-1, n_fft, hop)
rms = frames.pow(2).mean(-1).sqrt()
print(frames.shape, rms[:4])
def hz_to_mel(f):
    return 2595.0 * torch.log10(1.0 + f / 700.0)
def mel_to_hz(m):
    return 700.0 * (10 ** (m / 2595.0) - 1.0)
n_mels = 8
m = torch.linspace(hz_to_mel(torch.tensor(0.0)), hz_to_mel(torch.tensor(sr / 2)), n_mels + 2)
hz = mel_to_hz(m)
fdiff = hz[1:] - hz[:-1]
ramps = hz.unsqueeze(0) - freqs.unsqueeze(1)
lower = -ramps[:, :-2] / fdiff[:-1]
upper = ramps[:, 2:] / fdiff[1:]
fb = torch.max(torch.zeros(1), torch.min(lower, upper))
print(fb.shape, fb.sum(0))
mel = fb.T @ mag.pow(2)
logmel = torch.log(mel + 1e-6)
print(logmel.shape, logmel[:, 4])
n = torch.arange(n_mels, dtype=torch.float32)
k = torch.arange(4, dtype=torch.float32).unsqueeze(1)
dct = torch.cos(math.pi / n_mels * (n + 0.5) * k)
dct[0] *= 1 / math.sqrt(2)
dct *= math.sqrt(2.0 / n_mels)
mfcc = dct @ logmel
print(mfcc.shape, mfcc[:, 4])
peak_bins = torch.topk(mag[:, 5], 2).indices
print(freqs[peak_bins])
print(torch.amax(mag, dim=0)[:3], torch.amin(mag, dim=(0, 1)))
