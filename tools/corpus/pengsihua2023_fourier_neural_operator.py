"""A 1-D Fourier neural operator: a spectral convolution that keeps the lowest modes of an rfft,
mixes channels there with a complex (cfloat) weight through einsum, writes them into a zero
complex spectrum by slice assignment and returns with irfft(n=...); a pointwise Conv1d branch,
GELU, permutes and a Linear head; Adam on an MSE loss learns sin(kx) -> -cos(kx)/k.

Source: pengsihua2023/Deep-Learning-Lecture-Notes, "07. 研究级/数学专题/神经算子(Neural Operators).md".
Adapted: 24 samples of 64 grid points instead of 1000 of 256, width 8 and 6 modes, 4 Adam steps;
every parameter (real and imaginary parts) and the frequencies are drawn with numpy (no torch
random stream); the plot is replaced by printed predictions, the complex weight's gradient and
the spectrum's dtypes.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rs = np.random.RandomState(7)


def numpy_init(module):
    """Overwrite every real parameter with a numpy draw, so both libraries start equal."""
    with torch.no_grad():
        for p in module.parameters():
            if not p.is_complex():
                p.copy_(torch.from_numpy(rs.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))


class SpectralConv1d(nn.Module):
    def __init__(self, in_channels, out_channels, modes):
        super().__init__()
        self.out_channels = out_channels
        self.modes = modes
        scale = 1.0 / (in_channels * out_channels)
        real = rs.rand(in_channels, out_channels, modes)
        imag = rs.rand(in_channels, out_channels, modes)
        self.weights = nn.Parameter(scale * torch.complex(torch.from_numpy(real).float(),
                                                          torch.from_numpy(imag).float()))

    def forward(self, x):
        x_ft = torch.fft.rfft(x)
        out_ft = torch.zeros(x.shape[0], self.out_channels, x.size(-1) // 2 + 1, dtype=torch.cfloat)
        out_ft[:, :, :self.modes] = torch.einsum("bix,iox->box", x_ft[:, :, :self.modes], self.weights)
        return torch.fft.irfft(out_ft, n=x.size(-1))


class FNO1d(nn.Module):
    def __init__(self, modes=6, width=8):
        super().__init__()
        self.conv0 = SpectralConv1d(1, width, modes)
        self.conv1 = SpectralConv1d(width, width, modes)
        self.w0 = nn.Conv1d(1, width, 1)
        self.w1 = nn.Conv1d(width, width, 1)
        self.fc = nn.Linear(width, 1)

    def forward(self, x):
        x = x.permute(0, 2, 1)
        x = F.gelu(self.conv0(x) + self.w0(x))
        x = self.conv1(x) + self.w1(x)
        return self.fc(x.permute(0, 2, 1)).squeeze(-1)


grid_size, n_train = 64, 24
x = torch.linspace(0, 2 * np.pi, grid_size).unsqueeze(0).repeat(n_train, 1)
k = torch.from_numpy(rs.randint(1, 5, (n_train, 1)))
inputs = torch.sin(k * x).unsqueeze(-1)
target = (-torch.cos(k * x) / k).unsqueeze(-1)
print("k", k.dtype, "inputs", tuple(inputs.shape), inputs.dtype, "target", target.dtype)

model = FNO1d()
numpy_init(model)
print(model)
print("complex weight", model.conv0.weights.dtype, tuple(model.conv0.weights.shape))
spectrum = torch.fft.rfft(inputs.permute(0, 2, 1))
print("rfft", spectrum.dtype, tuple(spectrum.shape), "irfft", torch.fft.irfft(spectrum, n=grid_size).dtype)

optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for step in range(4):
    optimizer.zero_grad()
    out = model(inputs)
    loss = F.mse_loss(out.unsqueeze(-1), target)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.6f}")

g = model.conv0.weights.grad
print("weight grad", g.dtype, tuple(g.shape))
# Mode 0 is skipped: sin(kx) has no mean, so its gradient is rounding noise (~1e-10).
print(g[0, :2, 1:4])
print("grad norms", [round(p.grad.abs().pow(2).sum().sqrt().item(), 5) for p in model.parameters()])
with torch.no_grad():
    pred = model(torch.sin(3 * x[:1]).unsqueeze(-1))
print("prediction", pred.dtype, tuple(pred.shape))
print(pred[0, :6])
print("true      ", -torch.cos(3 * x[0, :6]) / 3)
