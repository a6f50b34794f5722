"""Multi-resolution STFT loss (kan-bayashi ParallelWaveGAN style): spectral convergence and
log-magnitude L1 over three resolutions, with gradients."""
import math
import torch
import torch.nn.functional as F


def stft(x, fft_size, hop_size, win_length, window):
    x_stft = torch.stft(x, fft_size, hop_size, win_length, window, return_complex=True)
    real = x_stft.real
    imag = x_stft.imag
    return torch.sqrt(torch.clamp(real ** 2 + imag ** 2, min=1e-7)).transpose(2, 1)


class SpectralConvergengeLoss(torch.nn.Module):
    def forward(self, x_mag, y_mag):
        return torch.norm(y_mag - x_mag, p="fro") / torch.norm(y_mag, p="fro")


class LogSTFTMagnitudeLoss(torch.nn.Module):
    def forward(self, x_mag, y_mag):
        return F.l1_loss(torch.log(y_mag), torch.log(x_mag))


class STFTLoss(torch.nn.Module):
    def __init__(self, fft_size=1024, shift_size=120, win_length=600, window="hann_window"):
        super().__init__()
        self.fft_size = fft_size
        self.shift_size = shift_size
        self.win_length = win_length
        self.register_buffer("window", getattr(torch, window)(win_length))
        self.spectral_convergenge_loss = SpectralConvergengeLoss()
        self.log_stft_magnitude_loss = LogSTFTMagnitudeLoss()

    def forward(self, x, y):
        x_mag = stft(x, self.fft_size, self.shift_size, self.win_length, self.window)
        y_mag = stft(y, self.fft_size, self.shift_size, self.win_length, self.window)
        sc_loss = self.spectral_convergenge_loss(x_mag, y_mag)
        mag_loss = self.log_stft_magnitude_loss(x_mag, y_mag)
        return sc_loss, mag_loss


class MultiResolutionSTFTLoss(torch.nn.Module):
    def __init__(self, fft_sizes=[1024, 2048, 512], hop_sizes=[120, 240, 50],
                 win_lengths=[600, 1200, 240], window="hann_window"):
        super().__init__()
        self.stft_losses = torch.nn.ModuleList()
        for fs, ss, wl in zip(fft_sizes, hop_sizes, win_lengths):
            self.stft_losses += [STFTLoss(fs, ss, wl, window)]

    def forward(self, x, y):
        sc_loss = 0.0
        mag_loss = 0.0
        for f in self.stft_losses:
            sc_l, mag_l = f(x, y)
            sc_loss += sc_l
            mag_loss += mag_l
        sc_loss /= len(self.stft_losses)
        mag_loss /= len(self.stft_losses)
        return sc_loss, mag_loss


sr = 8000
t = torch.arange(8000) / sr
y = torch.sin(2 * math.pi * 440 * t).unsqueeze(0).repeat(2, 1)
x = torch.sin(2 * math.pi * 450 * t).unsqueeze(0).repeat(2, 1)
x = x.clone().requires_grad_(True)
crit = MultiResolutionSTFTLoss()
print(crit)
print([b.shape for b in crit.buffers()])
sc, mag = crit(x, y)
print("sc %.4f mag %.4f" % (sc.item(), mag.item()))
(sc + mag).backward()
print("grad:", x.grad.shape, "%.6f" % x.grad.abs().mean().item())
sc0, mag0 = crit(y, y)
print(sc0.item(), mag0.item())
win_hamm = STFTLoss(512, 128, 512, "hamming_window")
print(win_hamm.window.shape, win_hamm.window[:3])
print([round(v.item(), 4) for v in win_hamm(x.detach(), y)])
