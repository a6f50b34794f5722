"""A torch.fft tutorial tour: the spectrum of a two-tone signal (rfft, rfftfreq, abs, topk), the
inverse (irfft), a low-pass filter, fft2 / fftshift of an image, norms, and a spectral loss
whose gradient flows back through rfft into a learnable signal; complex arithmetic demos."""
import math

import torch

n = 64
t = torch.arange(n) / n
signal = torch.sin(2 * math.pi * 5 * t) + 0.5 * torch.sin(2 * math.pi * 12 * t)
spectrum = torch.fft.rfft(signal)
freqs = torch.fft.rfftfreq(n, d=1 / n)
print(spectrum.shape, spectrum.dtype, freqs[:4])
magnitude = spectrum.abs()
top = torch.topk(magnitude, 2)
print(freqs[top.indices], top.values.round(decimals=3))
print(spectrum[[0, 5, 12]].abs().round(decimals=3), spectrum[5].angle().round(decimals=3))
recovered = torch.fft.irfft(spectrum, n=n)
print(recovered.dtype, torch.allclose(recovered, signal, atol=1e-5))

# low-pass: zero every frequency above 8
filtered_spec = spectrum.clone()
filtered_spec[freqs > 8] = 0
low = torch.fft.irfft(filtered_spec, n=n)
print(torch.allclose(low, torch.sin(2 * math.pi * 5 * t), atol=1e-5))

# full complex FFT and its inverse, with each norm
full = torch.fft.fft(signal)
print(full.shape, full[5].abs().round(decimals=3), torch.allclose(full[:33], spectrum, atol=1e-5))
for norm in ("backward", "ortho", "forward"):
    f = torch.fft.fft(signal, norm=norm)
    back = torch.fft.ifft(f, norm=norm)
    print(norm, round(f.abs().max().item(), 4), torch.allclose(back.real, signal, atol=1e-5))

# Parseval: energy is preserved by the orthonormal transform
print(round(signal.pow(2).sum().item(), 4),
      round(torch.fft.fft(signal, norm="ortho").abs().pow(2).sum().item(), 4))

# an image: fft2, fftshift puts the zero frequency in the middle
img = torch.outer(torch.cos(torch.arange(8.0)), torch.ones(8)) + torch.eye(8)
F2 = torch.fft.fftshift(torch.fft.fft2(img))
print(F2.shape, torch.view_as_real(F2[4, 4]).round(decimals=3), F2.abs().max().round(decimals=3))
print(torch.allclose(torch.fft.ifft2(torch.fft.fft2(img)).real, img, atol=1e-5))
print(torch.fft.rfft2(img).shape, torch.fft.irfft2(torch.fft.rfft2(img), s=img.shape).shape)

# a spectral loss: fit a signal's magnitude spectrum by gradient descent
target = torch.fft.rfft(torch.cos(2 * math.pi * 3 * torch.arange(16) / 16)).abs()
x = (torch.arange(16.0) / 16).requires_grad_()
opt = torch.optim.SGD([x], lr=0.01)
for step in range(3):
    opt.zero_grad()
    loss = (torch.fft.rfft(x).abs() - target).pow(2).sum()
    loss.backward()
    print(step, round(loss.item(), 4), round(x.grad.norm().item(), 4))
    opt.step()

# complex arithmetic
z = torch.tensor([3 + 4j, 1 - 1j])
print(z, z.dtype)
print(z.abs(), z.angle())
print(z.real, z.imag)
print(z * z.conj(), z / (1 + 1j))
print(torch.exp(1j * math.pi * torch.tensor([0.5, 1.0])))
w = torch.complex(torch.tensor([1.0, 2.0]), torch.tensor([0.0, -1.0]))
print(w, torch.polar(torch.tensor([2.0]), torch.tensor([math.pi / 2])))
print(torch.view_as_real(w))
print(torch.tensor([1.0, 2.0]) + 1j)
