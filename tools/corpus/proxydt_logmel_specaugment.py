import math
import numpy as np
import torch
import torch.nn.functional as F

# inputs drawn with NumPy so that what is printed does not depend on torch's random stream
rng = np.random.default_rng(0)


def randn(*shape, requires_grad=False):
    t = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    return t.requires_grad_() if requires_grad else t


def randint(low, high, size):
    return torch.from_numpy(rng.integers(low, high, size))


sr = 16000
n_fft = 400
hop = 160
n_mels = 40
t = torch.arange(0, 1.0, 1 / sr)
wave = 0.5 * torch.sin(2 * math.pi * 440 * t) + 0.1 * torch.sin(2 * math.pi * 1000 * t)
wave = wave.unsqueeze(0)
print(wave.shape, wave.dtype)

def hz_to_mel(f):
    return 2595.0 * torch.log10(1.0 + f / 700.0)

def mel_to_hz(m):
    return 700.0 * (10 ** (m / 2595.0) - 1.0)

def mel_filterbank(n_fft, n_mels, sr, fmin=0.0, fmax=None):
    fmax = fmax or sr / 2
    n_freqs = n_fft // 2 + 1
    all_freqs = torch.linspace(0, sr // 2, n_freqs)
    m_min = hz_to_mel(torch.tensor(fmin))
    m_max = hz_to_mel(torch.tensor(fmax))
    m_pts = torch.linspace(m_min, m_max, n_mels + 2)
    f_pts = mel_to_hz(m_pts)
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)
    down = (-1.0 * slopes[:, :-2]) / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    fb = torch.max(torch.zeros(1), torch.min(down, up))
    return fb  # (n_freqs, n_mels)

fb = mel_filterbank(n_fft, n_mels, sr)
print(fb.shape, round(fb.sum().item(), 3), fb.max().item() <= 1.0)
window = torch.hann_window(n_fft)
spec = torch.stft(wave, n_fft=n_fft, hop_length=hop, win_length=n_fft, window=window,
                  center=True, pad_mode="reflect", return_complex=True)
print(spec.shape, spec.dtype)
power = spec.abs() ** 2
print(power.shape, power.dtype)
mel = torch.matmul(power.transpose(1, 2), fb).transpose(1, 2)
logmel = torch.log(torch.clamp(mel, min=1e-10))
print(logmel.shape, round(logmel.mean().item(), 3), round(logmel.std().item(), 3))
db = 10.0 * torch.log10(torch.clamp(mel, min=1e-10))
db = torch.max(db, db.max() - 80.0)
print(round(db.max().item(), 2), round(db.min().item(), 2))
# peak frequency bin
peak = power[0].mean(dim=1).argmax()
print("peak bin", peak.item(), "hz", peak.item() * sr / n_fft)
# cmvn
feat = logmel[0].T
feat = (feat - feat.mean(0, keepdim=True)) / (feat.std(0, keepdim=True) + 1e-5)
print(feat.shape, round(feat.mean().item(), 5))
# deltas via conv1d
def deltas(x, win=2):
    denom = 2 * sum(i * i for i in range(1, win + 1))
    kernel = torch.arange(-win, win + 1, dtype=x.dtype).view(1, 1, -1).repeat(x.shape[1], 1, 1)
    xp = F.pad(x, (win, win), mode="replicate")
    return F.conv1d(xp, kernel, groups=x.shape[1]) / denom
d = deltas(logmel)
print(d.shape, round(d.abs().mean().item(), 4))
# stft no center, real view, istft roundtrip
s2 = torch.stft(wave, 256, hop_length=64, window=torch.hann_window(256), return_complex=True, center=False)
print(s2.shape, torch.view_as_real(s2).shape)
rec = torch.istft(torch.stft(wave, 256, 64, window=torch.hann_window(256), return_complex=True), 256, 64, window=torch.hann_window(256), length=wave.shape[-1])
print(rec.shape, (rec - wave).abs().max().item() < 1e-4)
# grad through stft magnitude
w = randn(1, 2048, requires_grad=True)
S = torch.stft(w, 512, 128, window=torch.hann_window(512), return_complex=True)
mag = S.abs().clamp(min=1e-7)
loss = torch.log(mag).mean()
loss.backward()
print(round(loss.item(), 4), w.grad.shape, round(w.grad.norm().item(), 4))
frames = wave.unfold(-1, n_fft, hop)
print(frames.shape)


def time_mask(spec, T=20, num_masks=2, starts=None, widths=None):
    cloned = spec.clone()
    len_spectro = cloned.shape[2]
    for i in range(num_masks):
        t = widths[i]
        t_zero = starts[i]
        if t_zero == t_zero + t:
            return cloned
        mask_end = t_zero + t
        cloned[0][:, t_zero:mask_end] = cloned.mean()
    return cloned

spec = randn(1, 40, 100)
out = time_mask(spec, widths=[5, 10], starts=[3, 50])
print((out != spec).sum().item(), out.shape)

def spec_augment_batch(x, lengths, F_=8, T_=10, n_freq=2, n_time=2, seed_vals=None):
    B, C, L = x.shape
    mask = torch.zeros_like(x, dtype=torch.bool)
    freq_idx = torch.arange(C).view(1, C, 1)
    time_idx = torch.arange(L).view(1, 1, L)
    f0 = torch.tensor([[2, 20], [5, 30], [0, 10]])[:B]
    fw = torch.tensor([[3, 4], [8, 1], [0, 5]])[:B]
    t0 = torch.tensor([[10, 40], [0, 70], [5, 5]])[:B]
    tw = torch.tensor([[5, 9], [2, 3], [10, 1]])[:B]
    for k in range(n_freq):
        m = (freq_idx >= f0[:, k].view(B, 1, 1)) & (freq_idx < (f0[:, k] + fw[:, k]).view(B, 1, 1))
        mask |= m
    for k in range(n_time):
        m = (time_idx >= t0[:, k].view(-1, 1, 1)) & (time_idx < (t0[:, k] + tw[:, k])[:, None, None])
        mask = mask | m
    pad = time_idx >= lengths.view(-1, 1, 1)
    out = x.masked_fill(mask, 0.0).masked_fill(pad, 0.0)
    return out, mask

x = randn(3, 40, 100)
lengths = torch.tensor([100, 80, 64])
out, mask = spec_augment_batch(x, lengths)
print(mask.shape, mask.dtype, mask.sum(dim=(1, 2)))
print((out == 0).sum(dim=(1, 2)))
print(out.dtype, mask.float().mean().item())
# torch.where-based with mean value fill
mv = x.mean(dim=(1, 2), keepdim=True)
out2 = torch.where(mask, mv, x)
print(out2.shape, torch.allclose(out2[mask], mv.expand_as(x)[mask]))
# random masks with torch.rand compared (only shapes/dtypes printed)
B, C, L = 4, 80, 200
width = (torch.rand(B, 1) * 27).long()
start = (torch.rand(B, 1) * (C - width)).long()
ar = torch.arange(C)[None, :]
fmask = (ar >= start) & (ar < start + width)
print(fmask.shape, fmask.dtype, width.dtype, start.dtype)
# in-place masked_fill_ with grad
y = randn(2, 10, 20, requires_grad=True)
z = y * 2
z.masked_fill_(torch.arange(20) >= 15, 0.0)
z.sum().backward()
print(y.grad[0, 0], y.grad.sum())
# index_fill / narrow style
s = randn(1, 10, 30)
s2 = s.index_fill(2, torch.arange(5, 10), 0.0)
print((s2 == 0).sum().item())
s3 = s.clone()
s3.narrow(1, 2, 3).zero_()
print((s3 == 0).sum().item())
s4 = s.clone()
s4[:, :, torch.tensor([1, 2, 3])] = s4.mean()
print(torch.isclose(s4[0, 0, 1], s.mean()).item())
# time warp via interpolate
warped = torch.nn.functional.interpolate(s, size=40, mode="linear", align_corners=False)
print(warped.shape)
left = torch.nn.functional.interpolate(s[:, :, :12], size=(15,), mode="linear", align_corners=False)
right = torch.nn.functional.interpolate(s[:, :, 12:], size=(15,), mode="linear", align_corners=False)
print(torch.cat([left, right], -1).shape, round(left.sum().item(), 4))
img = s.unsqueeze(0)
w2 = torch.nn.functional.interpolate(img, size=(10, 40), mode="bicubic", align_corners=True)
print(w2.shape, round(w2.sum().item(), 3))
