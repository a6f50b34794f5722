"""DDSP-style harmonic synthesiser: cumsum phase, harmonic amplitudes, filtered noise, FFT reverb."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def upsample(signal, factor):
    signal = signal.permute(0, 2, 1)
    signal = F.interpolate(signal, size=signal.shape[-1] * factor, mode="linear")
    return signal.permute(0, 2, 1)


def remove_above_nyquist(amplitudes, pitch, sampling_rate):
    n_harm = amplitudes.shape[-1]
    pitches = pitch * torch.arange(1, n_harm + 1).to(pitch)
    aa = (pitches < sampling_rate / 2).float() + 1e-4
    return amplitudes * aa


def harmonic_synth(pitch, amplitudes, sampling_rate):
    n_harmonic = amplitudes.shape[-1]
    omega = torch.cumsum(2 * math.pi * pitch / sampling_rate, 1)
    omegas = omega * torch.arange(1, n_harmonic + 1).to(omega)
    signal = (torch.sin(omegas) * amplitudes).sum(-1, keepdim=True)
    return signal


def amp_to_impulse_response(amp, target_size):
    amp = torch.stack([amp, torch.zeros_like(amp)], -1)
    amp = torch.view_as_complex(amp)
    amp = torch.fft.irfft(amp)
    filter_size = amp.shape[-1]
    amp = torch.roll(amp, filter_size // 2, -1)
    win = torch.hann_window(filter_size, dtype=amp.dtype, device=amp.device)
    amp = amp * win
    amp = F.pad(amp, (0, int(target_size) - int(filter_size)))
    amp = torch.roll(amp, -filter_size // 2, -1)
    return amp


def fft_convolve(signal, kernel):
    signal = F.pad(signal, (0, signal.shape[-1]))
    kernel = F.pad(kernel, (kernel.shape[-1], 0))
    output = torch.fft.irfft(torch.fft.rfft(signal) * torch.fft.rfft(kernel))
    output = output[..., output.shape[-1] // 2:]
    return output


sr, block = 16000, 160
frames = 50
pitch = torch.full((1, frames, 1), 220.0)
pitch[:, 25:] = 330.0
amps = torch.linspace(1.0, 0.1, 8).expand(1, frames, 8).contiguous()
amps = remove_above_nyquist(amps, pitch, sr)
amps = amps / amps.sum(-1, keepdim=True)
total_amp = torch.full((1, frames, 1), 0.5)
amps = amps * total_amp
print("amps:", amps.shape, round(amps.sum().item(), 4))
pitch_up = upsample(pitch, block)
amps_up = upsample(amps, block)
print("upsampled:", pitch_up.shape, amps_up.shape)
harmonic = harmonic_synth(pitch_up, amps_up, sr)
print("harmonic:", harmonic.shape, "rms %.4f" % harmonic.pow(2).mean().sqrt())

param = torch.linspace(-3, 1, 65).expand(1, frames, 65)
param = 2 * torch.sigmoid(param) ** math.log(10) + 1e-7
impulse = amp_to_impulse_response(param, block)
print("impulse:", impulse.shape, impulse.dtype)
torch.manual_seed(0)
noise = torch.rand(impulse.shape[0], impulse.shape[1], block) * 2 - 1
noise = fft_convolve(noise, impulse).contiguous()
noise = noise.reshape(noise.shape[0], -1, 1)
print("noise:", noise.shape)

signal = harmonic + noise
# reverb: exponentially decaying noise IR via FFT convolution
ir_len = 4000
tt = torch.arange(ir_len) / sr
ir = torch.exp(-tt * 20) * torch.cos(2 * math.pi * 50 * tt)
ir[0] = 1.0
dry = harmonic.squeeze(-1)
wet = fft_convolve(dry, F.pad(ir, (0, dry.shape[-1] - ir_len)).unsqueeze(0))
print("wet:", wet.shape, "rms %.4f" % wet.pow(2).mean().sqrt())
spec = torch.stft(dry[0], 1024, 256, window=torch.hann_window(1024), return_complex=True).abs()
peak = spec[:, :10].mean(-1).argmax() * sr / 1024
print("peak bin Hz:", peak.item())

# learnable amplitudes: gradient through the synth
a = torch.zeros(1, frames, 8, requires_grad=True)
target = harmonic.detach()
pred = harmonic_synth(pitch_up, upsample(torch.softmax(a, -1) * 0.5, block), sr)
loss = F.l1_loss(pred, target)
loss.backward()
print("loss %.5f grad %s %.5f" % (loss.item(), tuple(a.grad.shape), a.grad.abs().sum().item()))
