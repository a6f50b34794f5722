"""S4D (state-spaces/s4 example style): complex diagonal kernel from view_as_real parameters,
Vandermonde exp products, rfft/irfft causal convolution, _optim hyperparameters on parameters,
AdamW with clipping; then ZOH/bilinear step-wise inference with a cached complex state. Starting
values come from numpy so only seeds-independent numbers are printed."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
import numpy as np
_rng = np.random.default_rng(0)
def nrandn(*shape, scale=1.0, dtype=None):
    a = _rng.standard_normal(shape) * scale
    t = torch.tensor(a.astype(np.float32))
    return t if dtype is None else t.to(dtype)
def nrand(*shape):
    return torch.tensor(_rng.random(shape).astype(np.float32))
def npinit(model, scale=0.3):
    with torch.no_grad():
        for p in model.parameters():
            if p.is_complex():
                re = _rng.standard_normal(tuple(p.shape)) * scale
                im = _rng.standard_normal(tuple(p.shape)) * scale
                p.copy_(torch.complex(torch.tensor(re.astype(np.float32)), torch.tensor(im.astype(np.float32))).to(p.dtype))
            else:
                p.copy_(torch.tensor((_rng.standard_normal(tuple(p.shape)) * scale).astype(np.float32)).to(p.dtype))

class S4DKernel(nn.Module):
    def __init__(self, d_model, N=64, dt_min=0.001, dt_max=0.1):
        super().__init__()
        H = d_model
        log_dt = torch.rand(H) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)
        C = torch.randn(H, N // 2, dtype=torch.cfloat)
        self.C = nn.Parameter(torch.view_as_real(C))
        self.register_parameter("log_dt", nn.Parameter(log_dt))
        log_A_real = torch.log(0.5 * torch.ones(H, N // 2))
        A_imag = math.pi * torch.arange(N // 2).repeat(H, 1)
        self.log_A_real = nn.Parameter(log_A_real)
        self.A_imag = nn.Parameter(A_imag)

    def forward(self, L):
        dt = torch.exp(self.log_dt)
        C = torch.view_as_complex(self.C)
        A = -torch.exp(self.log_A_real) + 1j * self.A_imag
        dtA = A * dt.unsqueeze(-1)
        K = dtA.unsqueeze(-1) * torch.arange(L, device=A.device)
        C = C * (torch.exp(dtA) - 1.) / A
        K = 2 * torch.einsum('hn, hnl -> hl', C, torch.exp(K)).real
        return K

class S4D(nn.Module):
    def __init__(self, d_model, d_state=64, dropout=0.0, transposed=True):
        super().__init__()
        self.h = d_model
        self.n = d_state
        self.transposed = transposed
        self.D = nn.Parameter(torch.randn(self.h))
        self.kernel = S4DKernel(self.h, N=self.n)
        self.activation = nn.GELU()
        self.output_linear = nn.Sequential(
            nn.Conv1d(self.h, 2 * self.h, kernel_size=1),
            nn.GLU(dim=-2),
        )

    def forward(self, u):
        if not self.transposed: u = u.transpose(-1, -2)
        L = u.size(-1)
        k = self.kernel(L=L)
        k_f = torch.fft.rfft(k, n=2 * L)
        u_f = torch.fft.rfft(u, n=2 * L)
        y = torch.fft.irfft(u_f * k_f, n=2 * L)[..., :L]
        y = y + u * self.D.unsqueeze(-1)
        y = self.activation(y)
        y = self.output_linear(y)
        if not self.transposed: y = y.transpose(-1, -2)
        return y, None

model = S4D(8, d_state=16, transposed=False)
with torch.no_grad():
    model.kernel.log_dt.copy_(nrand(8) * 4 - 6)
    model.kernel.C.copy_(nrandn(8, 8, 2, scale=0.7))
    model.D.copy_(nrandn(8))
    model.output_linear[0].weight.copy_(nrandn(16, 8, 1, scale=0.3))
    model.output_linear[0].bias.zero_()
x = nrandn(4, 32, 8)
y, _ = model(x)
print(y.shape, y.dtype)
print(model.kernel.C.shape, model.kernel.C.dtype)
k = model.kernel(32)
print(k.shape, k.dtype, round(k.abs().sum().item(), 3))
loss = y.pow(2).mean()
loss.backward()
for n, p in model.named_parameters():
    print(n, tuple(p.shape), p.grad is not None, round(p.grad.norm().item(), 4))

opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
for step in range(20):
    opt.zero_grad()
    x = nrandn(4, 32, 8)
    y, _ = model(x)
    loss = F.mse_loss(y, x.roll(1, dims=1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if step % 5 == 0:
        print(step, f"{loss.item():.4f}")


# -- step-wise inference: the same kernel as a recurrence with a cached state --
class S4DStepKernel(nn.Module):
    def __init__(self, H, N=8, disc="zoh"):
        super().__init__()
        self.disc = disc
        self.log_dt = nn.Parameter(nrand(H) * (math.log(0.1) - math.log(0.001)) + math.log(0.001))
        self.C = nn.Parameter(torch.view_as_real(torch.complex(nrandn(H, N // 2), nrandn(H, N // 2)) * 0.5 ** 0.5))
        self.log_A_real = nn.Parameter(torch.log(0.5 * torch.ones(H, N // 2)))
        self.register_buffer("A_imag", math.pi * torch.arange(N // 2).repeat(H, 1).float())

    def _discrete(self):
        dt = torch.exp(self.log_dt)
        A = -torch.exp(self.log_A_real) + 1j * self.A_imag
        dtA = A * dt[:, None]
        if self.disc == "zoh":
            dA = torch.exp(dtA)
            dB = (dA - 1.) / A
        else:
            dA = (1. + dtA / 2) / (1. - dtA / 2)
            dB = dt[:, None] / (1. - dtA / 2)
        return dA, dB

    def forward(self, L):
        dA, dB = self._discrete()
        C = torch.view_as_complex(self.C) * dB
        K = dA.unsqueeze(-1) ** torch.arange(L)   # Vandermonde
        return 2 * torch.einsum("hn,hnl->hl", C, K).real

    def step(self, u, state):
        dA, dB = self._discrete()
        C = torch.view_as_complex(self.C)
        state = dA * state + dB * u.unsqueeze(-1)
        y = 2 * torch.einsum("hn,bhn->bh", C, state).real
        return y, state

    def default_state(self, *batch_shape):
        return torch.zeros(*batch_shape, self.C.shape[0], self.C.shape[1], dtype=torch.cfloat)

for disc in ["zoh", "bilinear"]:
    k = S4DStepKernel(4, 8, disc)
    L = 12
    u = nrandn(3, 4, L)
    K = k(L)
    y_conv = torch.fft.irfft(torch.fft.rfft(u, n=2 * L) * torch.fft.rfft(K, n=2 * L), n=2 * L)[..., :L]
    state = k.default_state(3)
    print(disc, state.dtype, state.shape)
    ys = []
    with torch.no_grad():
        for t in range(L):
            y, state = k.step(u[..., t], state)
            ys.append(y)
    y_rec = torch.stack(ys, dim=-1)
    print(disc, y_conv.shape, y_rec.shape, torch.allclose(y_conv, y_rec, atol=1e-4), y_rec.requires_grad)
    print(disc, y_rec[0, 0, :4].numpy().round(4))
    y_conv.sum().backward()
    print(disc, k.C.grad.shape, round(k.C.grad.abs().sum().item(), 4), round(k.log_dt.grad.abs().sum().item(), 4))
    print("A_imag buffer grad", k.A_imag.grad, [n for n, _ in k.named_buffers()])
    sd = k.state_dict()
    print(sorted(sd.keys()), sd["C"].dtype)

# inference_mode caching
k = S4DStepKernel(2, 4)
with torch.inference_mode():
    K = k(5)
    print(K.is_inference(), K.requires_grad)
cache = {}
def cached_kernel(L):
    if L not in cache:
        cache[L] = k(L).detach()
    return cache[L]
print(cached_kernel(5) is cached_kernel(5), cached_kernel(6).shape)
