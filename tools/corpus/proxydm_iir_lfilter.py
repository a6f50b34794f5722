import torch
import math

def lfilter(b, a, x):
    # direct form I, python loop
    b = b / a[0]
    a = a / a[0]
    y = torch.zeros_like(x)
    for n in range(x.shape[-1]):
        acc = 0.0
        for k in range(len(b)):
            if n - k >= 0:
                acc = acc + b[k] * x[..., n - k]
        for k in range(1, len(a)):
            if n - k >= 0:
                acc = acc - a[k] * y[..., n - k]
        y[..., n] = acc
    return y

def one_pole(x, alpha):
    out = []
    prev = torch.zeros(x.shape[:-1])
    for i in range(x.shape[-1]):
        prev = alpha * prev + (1 - alpha) * x[..., i]
        out.append(prev)
    return torch.stack(out, dim=-1)

x = torch.zeros(2, 16)
x[:, 0] = 1.0
x[1] = torch.cos(torch.arange(16.0) * 0.3)
b = torch.tensor([0.2, 0.2])
a = torch.tensor([1.0, -0.6])
y = lfilter(b, a, x)
print(y)
print(y.dtype, y.shape)
alpha = torch.tensor(0.8, requires_grad=True)
z = one_pole(x, alpha)
loss = z.pow(2).sum()
loss.backward()
print(loss.item(), alpha.grad)
# biquad coefficients (RBJ cookbook) low pass
fs, f0, Q = 8000.0, 1000.0, 0.707
w0 = 2 * math.pi * f0 / fs
alp = math.sin(w0) / (2 * Q)
b = torch.tensor([(1 - math.cos(w0)) / 2, 1 - math.cos(w0), (1 - math.cos(w0)) / 2], dtype=torch.float64)
a = torch.tensor([1 + alp, -2 * math.cos(w0), 1 - alp], dtype=torch.float64)
imp = torch.zeros(32, dtype=torch.float64); imp[0] = 1
h = lfilter(b, a, imp)
print(h[:8])
# frequency response via fft
H = torch.fft.rfft(b, n=64) / torch.fft.rfft(a, n=64)
print(H.dtype, H.shape)
print(H.abs()[:6])
print(20 * torch.log10(H.abs()[[0, 8, 16, 32]]))
