# Spectral solvers on periodic grids with torch.fft: heat, Poisson, viscous Burgers (course-notes style)
import math
import torch

torch.set_printoptions(precision=5, sci_mode=False)

N = 64
L = 2 * math.pi
x = torch.arange(N, dtype=torch.float64) * (L / N)
k = torch.fft.fftfreq(N, d=L / N / (2 * math.pi)).to(torch.float64)
print("k[:6]", k[:6], k.dtype)
kr = torch.fft.rfftfreq(N, d=1.0 / N)
print("rfftfreq", kr.shape, kr[:4], kr.dtype)

# heat equation u_t = nu u_xx, exact decay of Fourier modes
nu = 0.1
u0 = torch.sin(x) + 0.5 * torch.sin(3 * x)
u_hat = torch.fft.fft(u0)
T = 1.0
uT = torch.fft.ifft(u_hat * torch.exp(-nu * k ** 2 * T)).real
exact = math.exp(-nu * T) * torch.sin(x) + 0.5 * math.exp(-9 * nu * T) * torch.sin(3 * x)
print("heat max err < 1e-12:", (uT - exact).abs().max().item() < 1e-12)
print(uT[:4])

# Poisson -u'' = f with f = sin(2x) + cos(5x)
f = torch.sin(2 * x) + torch.cos(5 * x)
f_hat = torch.fft.rfft(f)
kk = torch.fft.rfftfreq(N, d=1.0 / N).to(torch.float64)
u_hat = torch.zeros_like(f_hat)
u_hat[1:] = f_hat[1:] / kk[1:] ** 2
u = torch.fft.irfft(u_hat, n=N)
print("poisson err < 1e-12:", (u - (torch.sin(2 * x) / 4 + torch.cos(5 * x) / 25)).abs().max().item() < 1e-12)
print("u_hat dtype", u_hat.dtype, "shape", tuple(u_hat.shape))

# spectral derivative
du = torch.fft.ifft(1j * k * torch.fft.fft(torch.exp(torch.sin(x)))).real
print("derivative err < 1e-12:", (du - torch.cos(x) * torch.exp(torch.sin(x))).abs().max().item() < 1e-12)

# viscous Burgers, pseudo-spectral with RK4 and 2/3 dealiasing
nu = 0.05
dealias = (k.abs() < (2 / 3) * (N / 2)).to(torch.float64)
def rhs(v_hat):
    v = torch.fft.ifft(v_hat).real
    vx = torch.fft.ifft(1j * k * v_hat).real
    return -dealias * torch.fft.fft(v * vx) - nu * k ** 2 * v_hat

v_hat = torch.fft.fft(torch.sin(x))
dt = 1e-3
for step in range(500):
    k1 = rhs(v_hat)
    k2 = rhs(v_hat + 0.5 * dt * k1)
    k3 = rhs(v_hat + 0.5 * dt * k2)
    k4 = rhs(v_hat + dt * k3)
    v_hat = v_hat + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
v = torch.fft.ifft(v_hat).real
print("burgers t=0.5: max %.5f min %.5f mean ~0: %s" % (v.max(), v.min(), abs(v.mean().item()) < 1e-12))
print("energy %.6f" % (0.5 * (v ** 2).mean()).item())
print(v[::8])

# 2D Poisson with fft2
n = 32
xs = torch.linspace(0, L, n + 1, dtype=torch.float64)[:-1]
X, Y = torch.meshgrid(xs, xs, indexing="ij")
f2 = torch.sin(X) * torch.cos(2 * Y)
kx = torch.fft.fftfreq(n, 1.0 / n).to(torch.float64)
KX, KY = torch.meshgrid(kx, kx, indexing="ij")
K2 = KX ** 2 + KY ** 2
K2[0, 0] = 1.0
u2 = torch.fft.ifft2(torch.fft.fft2(f2) / K2).real
print("2d poisson err < 1e-12:", (u2 - f2 / 5).abs().max().item() < 1e-12)
print(torch.fft.fftshift(kx)[:5], torch.fft.ifftshift(torch.fft.fftshift(kx)).equal(kx))
spec = torch.fft.fft(torch.cos(3 * x)).abs() / N
print("peak modes", torch.topk(spec, 2).indices.sort().values.tolist())
print(torch.fft.fft(torch.tensor([1.0, 2.0, 3.0, 4.0])))
print(torch.fft.rfft(torch.tensor([1.0, 2.0, 3.0, 4.0]), norm="ortho"))
