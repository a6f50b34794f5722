# VP-SDE / VE-SDE: schedules, marginal, Euler-Maruyama and predictor-corrector, prob-flow ODE
import math
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(1)

class VPSDE:
    def __init__(self, beta_min=0.1, beta_max=20.0, N=1000):
        self.beta_0 = beta_min
        self.beta_1 = beta_max
        self.N = N
        self.discrete_betas = torch.linspace(beta_min / N, beta_max / N, N)
        self.alphas = 1. - self.discrete_betas
        self.alphas_cumprod = torch.cumprod(self.alphas, dim=0)
        self.sqrt_alphas_cumprod = torch.sqrt(self.alphas_cumprod)
        self.sqrt_1m_alphas_cumprod = torch.sqrt(1. - self.alphas_cumprod)

    @property
    def T(self):
        return 1

    def sde(self, x, t):
        beta_t = self.beta_0 + t * (self.beta_1 - self.beta_0)
        drift = -0.5 * beta_t[:, None] * x
        diffusion = torch.sqrt(beta_t)
        return drift, diffusion

    def marginal_prob(self, x, t):
        log_mean_coeff = -0.25 * t ** 2 * (self.beta_1 - self.beta_0) - 0.5 * t * self.beta_0
        mean = torch.exp(log_mean_coeff[:, None]) * x
        std = torch.sqrt(1. - torch.exp(2. * log_mean_coeff))
        return mean, std

    def prior_logp(self, z):
        shape = z.shape
        N = np.prod(shape[1:])
        logps = -N / 2. * np.log(2 * np.pi) - torch.sum(z ** 2, dim=(1,)) / 2.
        return logps

    def log_snr(self, t):
        mean, std = self.marginal_prob(torch.ones(t.shape[0], 1), t)
        return 2 * (torch.log(mean.squeeze(-1)) - torch.log(std))

class VESDE:
    def __init__(self, sigma_min=0.01, sigma_max=50, N=1000):
        self.sigma_min = sigma_min
        self.sigma_max = sigma_max
        self.discrete_sigmas = torch.exp(torch.linspace(np.log(self.sigma_min), np.log(self.sigma_max), N))
    def sde(self, x, t):
        sigma = self.sigma_min * (self.sigma_max / self.sigma_min) ** t
        drift = torch.zeros_like(x)
        diffusion = sigma * torch.sqrt(torch.tensor(2 * (np.log(self.sigma_max) - np.log(self.sigma_min)), device=t.device))
        return drift, diffusion
    def marginal_prob(self, x, t):
        std = self.sigma_min * (self.sigma_max / self.sigma_min) ** t
        return x, std

sde = VPSDE()
t = torch.tensor([1e-3, 0.25, 0.5, 0.75, 1.0])
x = torch.ones(5, 2)
mean, std = sde.marginal_prob(x, t)
print("mean", mean[:, 0])
print("std", std)
print("log-snr", sde.log_snr(t))
print("alphas_cumprod[-1]", sde.alphas_cumprod[-1].item(), sde.sqrt_1m_alphas_cumprod[::250])
print("prior logp", sde.prior_logp(torch.zeros(3, 2)))
ve = VESDE()
d, g = ve.sde(x, t)
print("VE diffusion", g, ve.discrete_sigmas[[0, -1]])

class TinyScore(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 16)
        self.fc2 = nn.Linear(16, 2)
    def forward(self, x, t):
        h = torch.nn.functional.silu(self.fc1(torch.cat([x, t[:, None]], -1)))
        return self.fc2(h)

score_model = TinyScore()
with torch.no_grad():
    for p in score_model.parameters():
        p.copy_(torch.arange(p.numel()).reshape(p.shape).float().mul(0.01).sin())

def score_fn(x, t):
    _, std = sde.marginal_prob(x, t)
    return score_model(x, t) / std[:, None]

# Euler-Maruyama (deterministic noise for reproducibility)
def em_sampler(x, n_steps=20, eps=1e-3):
    ts = torch.linspace(sde.T, eps, n_steps)
    dt = -(sde.T - eps) / n_steps
    for i, tt in enumerate(ts):
        vec_t = torch.ones(x.shape[0]) * tt
        drift, diffusion = sde.sde(x, vec_t)
        drift = drift - diffusion[:, None] ** 2 * score_fn(x, vec_t)
        z = torch.cos(torch.arange(x.numel(), dtype=torch.float32) + i).view_as(x)
        x_mean = x + drift * dt
        x = x_mean + diffusion[:, None] * np.sqrt(-dt) * z
    return x_mean

def langevin_corrector(x, t, snr=0.16, n=1):
    for _ in range(n):
        grad = score_fn(x, t)
        noise = torch.sin(x * 7)
        grad_norm = torch.norm(grad.reshape(grad.shape[0], -1), dim=-1).mean()
        noise_norm = torch.norm(noise.reshape(noise.shape[0], -1), dim=-1).mean()
        alpha = torch.ones_like(t)
        step_size = (snr * noise_norm / grad_norm) ** 2 * 2 * alpha
        x_mean = x + step_size[:, None] * grad
        x = x_mean + torch.sqrt(step_size * 2)[:, None] * noise
    return x, x_mean

x_init = torch.stack([torch.linspace(-1, 1, 8), torch.linspace(1, -1, 8)], 1)
with torch.no_grad():
    samples = em_sampler(x_init.clone())
    print("EM samples mean/std", samples.mean().item(), samples.std().item())
    xc, xm = langevin_corrector(x_init.clone(), torch.full((8,), 0.5))
    print("corrector", xc.abs().sum().item(), xm.shape)

# probability-flow ODE drift and divergence by autograd
def ode_drift(x, t):
    drift, diffusion = sde.sde(x, t)
    return drift - 0.5 * diffusion[:, None] ** 2 * score_fn(x, t)

def div_fn(fn, x, t):
    with torch.enable_grad():
        x = x.clone().requires_grad_(True)
        out = fn(x, t)
        div = torch.zeros(x.shape[0])
        for i in range(x.shape[1]):
            div += torch.autograd.grad(out[:, i].sum(), x, create_graph=False, retain_graph=True)[0][:, i]
    return div

tt = torch.full((8,), 0.3)
print("divergence", div_fn(ode_drift, x_init, tt))
with torch.no_grad():
    print("no_grad outside, grad enabled:", torch.is_grad_enabled())
    print(div_fn(ode_drift, x_init, tt).requires_grad)
