"""faisalqureshi/ddpm-mnist mnist_single_digit/{model.py, train.py, infer.py} and common/ckpt.py: a
DDPM on MNIST digits: sinusoidal timestep embedding through an MLP, FiLM-conditioned GroupNorm/conv
residual blocks, a linear beta schedule with cumprod, q_sample by indexing the schedule with the
timesteps, AdamW, the (disabled on CPU) torch.amp GradScaler/autocast path, ancestral sampling, and
a checkpoint round trip (state dicts of model, optimizer and scaler, then load_state_dict).

Adapted: the Hugging Face MNIST loader -> 12 seeded numpy images in [0, 1] through TensorDataset;
the random streams (torch.randn / randn_like / randint, parameter initialisation) -> one numpy
RandomState, so the printed values do not depend on torch's stream; Denoiser(64, 256) -> (16, 32),
T=1000 -> 12, 10 epochs -> 2; TensorBoard, image grids, SLURM and files -> prints and a BytesIO.
Added (not in the source): an exponential moving average of the weights updated with
torch._foreach_lerp_, as diffusion trainers keep one (ema-pytorch, timm's ModelEmaV3).
"""
import argparse
import io
import math
from typing import Dict, Optional

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

rng = np.random.RandomState(42)


def randn(*size):
    return torch.tensor(rng.randn(*size), dtype=torch.float32)


def timestep_embedding(t, dim: int, max_period: int = 10_000) -> torch.Tensor:
    """
    Sinusoidal embeddings

    t: (B,) int 
    Returns (B, dim) sinusoidal embedding
    """
    device = t.device
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, device=device) / half)
    angles = t.float().unsqueeze(1) * freqs.unsqueeze(0)         # (B, half)
    emb = torch.cat([angles.sin(), angles.cos()], dim=1)         # (B, 2*half)
    if dim % 2:
        emb = torch.cat([emb, torch.zeros_like(emb[:, :1])], dim=1)
    return emb

class TimeMLP(nn.Module):
    """
    Learnable time embeddings.  Uses an MLP with SiLU activation functions.
    """
    def __init__(self, in_dim=128, hidden=256, out_dim=256):
        super().__init__()
        self.fc1 = nn.Linear(in_dim, hidden)
        self.fc2 = nn.Linear(hidden, out_dim)
    
    def forward(self, t) -> torch.Tensor:  # t: (B,)
        pe = timestep_embedding(t, self.fc1.in_features)
        return F.silu(self.fc2(F.silu(self.fc1(pe))))
    
class FiLMCond(nn.Module):
    """
    Conditions on time embeddings.  Here time embeddings are used to compute \\gamma and \\beta, 
    which are subsequently used to modulate x
    
    Group Norm -> (1 + \\gamma) h + \\beta -> SiLU -> Conv
    """

    def __init__(self, C: int, time_dim: int):
        super().__init__()
        self.norm = nn.GroupNorm(8, C)
        self.proj = nn.Linear(time_dim, 2 * C)  
        self.conv = nn.Conv2d(C, C, kernel_size=3, padding=1)
        nn.init.zeros_(self.proj.weight)
        nn.init.zeros_(self.proj.bias)

    def forward(self, x: torch.Tensor, t_emb: torch.Tensor) -> torch.Tensor:
        """
        x: (B,C,H,W)
        Returns time conditioned x (B,C,H,W)
        """

        # Group Norm
        h = self.norm(x)
        # Compute \gamma and \beta from time embeddings
        gam, bet = self.proj(t_emb).chunk(2, dim=1)  # (B,C), (B,C)
        # (1 + \gamma) h + \beta
        h = (1 + gam)[:, :, None, None] * h + bet[:, :, None, None]
        # SiLU activation func
        h = F.silu(h)
        # Convolution
        return self.conv(h)
    
class Denoiser(nn.Module):
    """
    Predicts noise
    """

    def __init__(self, base_ch: int = 64, time_dim: int = 256):
        super().__init__()

        self.time = TimeMLP(in_dim=128, hidden=256, out_dim=time_dim)            
        self.in_conv = nn.Conv2d(1, base_ch, 3, padding=1)
        self.b1a = FiLMCond(base_ch, time_dim); 
        self.b1b = FiLMCond(base_ch, time_dim)
        self.b2a = FiLMCond(base_ch, time_dim); 
        self.b2b = FiLMCond(base_ch, time_dim)
        self.b3a = FiLMCond(base_ch, time_dim); 
        self.b3b = FiLMCond(base_ch, time_dim)
        self.b4a = FiLMCond(base_ch, time_dim); 
        self.b4b = FiLMCond(base_ch, time_dim)
        self.out_norm = nn.GroupNorm(8, base_ch)
        self.out_conv = nn.Conv2d(base_ch, 1, 3, padding=1)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """
        x: x_t
        t: t
        Returns noise \\epsilon (x_t, t)
        """

        # Construct time embedding    
        e = self.time(t)
        # Compute h from x using initial convolution
        h = self.in_conv(x)
        # Residual layers
        r = h; h = self.b1a(h, e); h = self.b1b(h, e); h = h + r
        r = h; h = self.b2a(h, e); h = self.b2b(h, e); h = h + r
        r = h; h = self.b3a(h, e); h = self.b3b(h, e); h = h + r
        r = h; h = self.b4a(h, e); h = self.b4b(h, e); h = h + r
        # Group norm followed by SiLU activation function
        h = F.silu(self.out_norm(h))
        # Another convolution
        return self.out_conv(h)  # predict ε

def precompute_schedules(T: int, beta_start: float, beta_end: float, device: torch.device) -> Dict[str, torch.Tensor]:
    beta = torch.linspace(beta_start, beta_end, T, device=device)
    alpha = 1.0 - beta
    abar = torch.cumprod(alpha, dim=0)
    sqrt_alpha = alpha.sqrt()
    sqrt_abar = abar.sqrt()
    sqrt_one_minus_abar = (1.0 - abar).sqrt()
    abar_prev = torch.cat([torch.tensor([1.0], device=device), abar[:-1]], dim=0)
    posterior_var = (1.0 - abar_prev) / (1.0 - abar + 1e-12) * beta
    posterior_var[0] = 0.0
    return {
        "beta": beta, "alpha": alpha, "abar": abar,
        "sqrt_alpha": sqrt_alpha, "sqrt_abar": sqrt_abar,
        "sqrt_one_minus_abar": sqrt_one_minus_abar,
        "posterior_var": posterior_var,
    }

def q_sample(x0: torch.Tensor, t: torch.Tensor, sched: Dict[str, torch.Tensor]):
    s = sched["sqrt_abar"][t].view(-1, 1, 1, 1)
    r = sched["sqrt_one_minus_abar"][t].view(-1, 1, 1, 1)
    eps = randn(*x0.shape)
    x_t = s * x0 + r * eps
    return x_t, eps

@torch.no_grad()
def generate_images(model: nn.Module, sched: Dict[str, torch.Tensor], n: int = 16, device: Optional[torch.device] = None):
    model.eval()
    device = device or next(model.parameters()).device
    x = randn(n, 1, 28, 28)
    beta = sched["beta"]; sqrt_alpha = sched["sqrt_alpha"]; sqrt_one_minus_abar = sched["sqrt_one_minus_abar"]
    post_var = sched["posterior_var"]
    T = beta.numel()

    for ti in reversed(range(T)):
        t = torch.full((n,), ti, device=device, dtype=torch.long)
        eps_hat = model(x, t)
        mean = (x - (beta[ti] / (sqrt_one_minus_abar[ti] + 1e-12)) * eps_hat) / (sqrt_alpha[ti] + 1e-12)
        if ti > 0:
            x = mean + torch.sqrt(post_var[ti]) * randn(*x.shape)
        else:
            x = mean
    return (x.clamp(-1, 1) + 1) / 2  # [0,1]

args = argparse.Namespace(T=12, beta_start=1e-4, beta_end=2e-2, lr=2e-4, epochs=2, batch_size=6)
device = torch.device("cpu")
xs = rng.rand(12, 1, 28, 28).astype(np.float32)
mnist_loader = DataLoader(TensorDataset(torch.from_numpy(xs), torch.full((12,), 5)), batch_size=args.batch_size)
n_train = len(mnist_loader.dataset)

net = Denoiser(base_ch=16, time_dim=32).to(device)
with torch.no_grad():
    for name, p in net.named_parameters():
        if p.abs().sum() > 0:  # FiLM projections stay zero-initialised, as the model sets them
            p.copy_(torch.tensor(rng.normal(0, 0.05, size=tuple(p.shape)), dtype=torch.float32))
print("parameters:", sum(p.numel() for p in net.parameters()), [n for n, _ in net.named_children()])
print("zero-initialised:", [n for n, p in net.named_parameters() if p.abs().sum() == 0][:4])
ema = [p.detach().clone() for p in net.parameters()]
opt = torch.optim.AdamW(net.parameters(), lr=args.lr)
sched = precompute_schedules(args.T, args.beta_start, args.beta_end, device)
for k, v in sched.items():
    print(f"{k:20s}", v.dtype, tuple(v.shape), [round(x, 6) for x in v[:3].tolist()], round(v[-1].item(), 6))
print("timestep_embedding:", timestep_embedding(torch.tensor([0, 5, 11]), 7).shape,
      timestep_embedding(torch.tensor([5]), 6).round(decimals=4).tolist())

use_amp = bool(device.type == "cuda")
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
autocast_ctx = lambda: torch.amp.autocast("cuda", enabled=use_amp)
global_step = 0
for epoch in range(1, args.epochs + 1):
    net.train()
    running = 0.0
    for x0, _ in mnist_loader:
        x0 = (x0.to(device) * 2) - 1
        B = x0.size(0)
        t = torch.tensor(rng.randint(0, args.T, size=B), dtype=torch.long)
        with autocast_ctx():
            x_t, eps = q_sample(x0, t, sched)
            eps_hat = net(x_t, t)
            loss = F.mse_loss(eps_hat, eps)
        opt.zero_grad(set_to_none=True)
        if use_amp:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        with torch.no_grad():
            torch._foreach_lerp_(ema, [p.detach() for p in net.parameters()], 0.1)
        running += loss.item() * B
        global_step += 1
    epoch_loss = running / n_train
    print(f"[Epoch {epoch}/{args.epochs}] loss={epoch_loss:.6f}", x_t.dtype, tuple(eps_hat.shape))
print("ema distance:", round(sum((e - p.detach()).norm().item() for e, p in zip(ema, net.parameters())), 6))

with torch.no_grad():
    imgs = generate_images(net, sched, n=4, device=device).cpu()
print("samples:", tuple(imgs.shape), imgs.dtype, round(imgs.mean().item(), 5), round(imgs.min().item(), 5),
      round(imgs.max().item(), 5))
grid = imgs.view(2, 2, 28, 28).permute(0, 2, 1, 3).reshape(56, 56)
print("grid:", tuple(grid.shape), round(grid[27:29, 27:29].sum().item(), 5))

state = {"model": net.state_dict(), "optimizer": opt.state_dict(), "scaler": scaler.state_dict(),
         "epoch": epoch, "global_step": global_step, "args": vars(args), "exp_name": "single-digit"}
buffer = io.BytesIO()
torch.save(state, buffer)
buffer.seek(0)
ckpt = torch.load(buffer, map_location="cpu", weights_only=False)
print("Top-level keys:", list(ckpt.keys()), ckpt["scaler"], ckpt["epoch"], ckpt["global_step"])
st = ckpt["model"]
print(f"- state_dict: {len(st)} tensors, total params: {sum(v.numel() for v in st.values())}", list(st.keys())[:4])
net2 = Denoiser(base_ch=16, time_dim=32)
print(net2.load_state_dict(ckpt["model"]))
opt2 = torch.optim.AdamW(net2.parameters(), lr=1.0)
opt2.load_state_dict(ckpt["optimizer"])
print("optimizer:", opt2.param_groups[0]["lr"], opt2.param_groups[0]["weight_decay"], opt2.state_dict()["state"][0]["step"])
net2.eval()
t = torch.full((3,), 7, dtype=torch.long)
x = randn(3, 1, 28, 28)
with torch.no_grad():
    print("reloaded model agrees:", torch.allclose(net2(x, t), net(x, t)), round(net2(x, t).std().item(), 5))
