"""MFCCs from scratch: framing, pre-emphasis, power spectrum, mel, DCT-II matrix."""
import math
import torch


def create_dct(n_mfcc, n_mels, norm="ortho"):
    n = torch.arange(float(n_mels))
    k = torch.arange(float(n_mfcc)).unsqueeze(1)
    dct = torch.cos(math.pi / float(n_mels) * (n + 0.5) * k)
    if norm is None:
        dct *= 2.0
    else:
        dct[0] *= 1.0 / math.sqrt(2.0)
        dct *= math.sqrt(2.0 / float(n_mels))
    return dct.t()


sr = 16000
t = torch.linspace(0, 1, sr)
sig = torch.sin(2 * math.pi * 300 * t) * torch.exp(-3 * t)
pre = torch.cat([sig[:1], sig[1:] - 0.97 * sig[:-1]])
print("pre-emphasis:", pre.shape, f"{pre.abs().sum():.4f}")

frame_len, frame_step = 400, 160
frames = pre.unfold(0, frame_len, frame_step)
print("frames:", frames.shape, frames.stride())
frames = frames * torch.hamming_window(frame_len, periodic=False)
NFFT = 512
mag = torch.fft.rfft(frames, n=NFFT).abs()
pow_frames = (1.0 / NFFT) * mag ** 2
print("pow:", pow_frames.shape, pow_frames.dtype)

n_filt = 40
low_mel, high_mel = 0.0, 2595 * math.log10(1 + (sr / 2) / 700)
mel_points = torch.linspace(low_mel, high_mel, n_filt + 2)
hz_points = 700 * (10 ** (mel_points / 2595) - 1)
bins = torch.floor((NFFT + 1) * hz_points / sr).long()
print("bins:", bins[:6].tolist(), bins.dtype)
fbank = torch.zeros(n_filt, NFFT // 2 + 1)
for m in range(1, n_filt + 1):
    f_m_minus, f_m, f_m_plus = bins[m - 1].item(), bins[m].item(), bins[m + 1].item()
    for k in range(f_m_minus, f_m):
        fbank[m - 1, k] = (k - bins[m - 1]) / (bins[m] - bins[m - 1])
    for k in range(f_m, f_m_plus):
        fbank[m - 1, k] = (bins[m + 1] - k) / (bins[m + 1] - bins[m])
filter_banks = pow_frames @ fbank.T
filter_banks = torch.where(filter_banks == 0, torch.finfo(torch.float32).eps, filter_banks)
filter_banks = 20 * torch.log10(filter_banks)
print("fbanks:", filter_banks.shape, round(filter_banks.mean().item(), 3))

dct = create_dct(13, n_filt)
print("dct:", dct.shape, torch.allclose(dct.T @ dct, torch.eye(13), atol=1e-5))
mfcc = filter_banks @ dct
print("mfcc:", mfcc.shape)
print(mfcc[0, :4])
n = torch.arange(mfcc.shape[1])
cep_lifter = 22
lift = 1 + (cep_lifter / 2) * torch.sin(math.pi * n / cep_lifter)
mfcc = mfcc * lift
mfcc -= mfcc.mean(dim=0, keepdim=True) + 1e-8
print("cmn mean:", mfcc.mean(0).abs().max().item() < 1e-3)
print("mfcc std:", mfcc.std(0)[:3])

# deltas
padded = torch.nn.functional.pad(mfcc.T.unsqueeze(0), (2, 2), mode="replicate")
kernel = torch.arange(-2, 3, dtype=torch.float32).view(1, 1, 5).repeat(13, 1, 1) / 10
delta = torch.nn.functional.conv1d(padded, kernel.flip(-1), groups=13)
print("delta:", delta.shape, round(delta.abs().mean().item(), 4))
