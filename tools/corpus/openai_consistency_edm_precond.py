# Consistency training with EMA target network + EDM preconditioning and loss weighting
import math
import copy
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
sigma_data = 0.5
sigma_min, sigma_max, rho = 0.002, 80.0, 7.0

def karras_sigmas(n, sigma_min=sigma_min, sigma_max=sigma_max, rho=rho):
    ramp = torch.linspace(0, 1, n)
    min_inv_rho = sigma_min ** (1 / rho)
    max_inv_rho = sigma_max ** (1 / rho)
    sigmas = (max_inv_rho + ramp * (min_inv_rho - max_inv_rho)) ** rho
    return torch.cat([sigmas, sigmas.new_zeros([1])])

def append_dims(x, target_dims):
    dims_to_append = target_dims - x.ndim
    if dims_to_append < 0:
        raise ValueError(f"input has {x.ndim} dims but target_dims is {target_dims}, which is less")
    return x[(...,) + (None,) * dims_to_append]

def get_scalings_for_boundary_condition(sigma):
    c_skip = sigma_data ** 2 / ((sigma - sigma_min) ** 2 + sigma_data ** 2)
    c_out = (sigma - sigma_min) * sigma_data / (sigma ** 2 + sigma_data ** 2) ** 0.5
    c_in = 1 / (sigma ** 2 + sigma_data ** 2) ** 0.5
    return c_skip, c_out, c_in

def edm_scalings(sigma):
    c_skip = sigma_data ** 2 / (sigma ** 2 + sigma_data ** 2)
    c_out = sigma * sigma_data / (sigma ** 2 + sigma_data ** 2).sqrt()
    c_in = 1 / (sigma_data ** 2 + sigma ** 2).sqrt()
    c_noise = sigma.log() / 4
    return c_skip, c_out, c_in, c_noise

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 2))
    def forward(self, x, c_noise):
        return self.body(torch.cat([x, c_noise[:, None]], 1))

def denoise(model, x, sigma):
    c_skip, c_out, c_in = [append_dims(s, x.ndim) for s in get_scalings_for_boundary_condition(sigma)]
    return c_skip * x + c_out * model(c_in * x, 1000 * 0.25 * torch.log(sigma + 1e-44))

sig = karras_sigmas(6)
print("karras:", sig)
cs, co, ci = get_scalings_for_boundary_condition(sig[:-1])
print("c_skip", cs, "\nc_out", co)
print(append_dims(torch.tensor([1., 2.]), 4).shape)
try:
    append_dims(torch.zeros(2, 3), 1)
except ValueError as e:
    print("ValueError:", e)

model = Net()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.linspace(-0.3, 0.3, p.numel()).view_as(p) * math.cos(i))
target_model = copy.deepcopy(model)
target_model.requires_grad_(False)
print("target requires grad:", any(p.requires_grad for p in target_model.parameters()))

opt = torch.optim.RAdam(model.parameters(), lr=1e-3)
x = torch.stack([torch.linspace(-1, 1, 32), torch.linspace(-1, 1, 32) ** 2], 1)
z = torch.sin(torch.arange(64.)).view(32, 2)
N = 18
ema_decay = 0.95
sigmas = karras_sigmas(N)[:-1].flip(0)
for step in range(5):
    idx = torch.arange(32) % (N - 1)
    t = sigmas[idx]
    t2 = sigmas[idx + 1]
    x_t2 = x + append_dims(t2, 2) * z
    x_t = x + append_dims(t, 2) * z
    distiller = denoise(model, x_t2, t2)
    with torch.no_grad():
        distiller_target = denoise(target_model, x_t, t)
    weights = 1.0 / (t2 - t)
    loss = (weights * ((distiller - distiller_target) ** 2).mean(dim=1)).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    with torch.no_grad():
        for p_targ, p in zip(target_model.parameters(), model.parameters()):
            p_targ.lerp_(p, 1 - ema_decay)
    print(f"ct step {step} loss={loss.item():.6f}")
diff = sum((a - b).abs().sum() for a, b in zip(target_model.parameters(), model.parameters()))
print("ema gap", diff.item() > 0)
with torch.no_grad():
    for pt, p in zip(target_model.parameters(), model.parameters()):
        pt.mul_(ema_decay).add_(p.detach(), alpha=1 - ema_decay)
print(target_model.body[0].weight[0])

# EDM loss with lognormal sigma (printed values independent of the draw)
P_mean, P_std = -1.2, 1.2
rnd = torch.randn([32, 1])
sigma = (rnd * P_std + P_mean).exp()
print(sigma.shape, bool((sigma > 0).all()))
sigma_fixed = torch.exp(P_mean + P_std * torch.linspace(-2, 2, 32))
weight = (sigma_fixed ** 2 + sigma_data ** 2) / (sigma_fixed * sigma_data) ** 2
c_skip, c_out, c_in, c_noise = edm_scalings(sigma_fixed)
y = x + z * sigma_fixed[:, None]
D = c_skip[:, None] * y + c_out[:, None] * model(c_in[:, None] * y, c_noise)
edm_loss = weight[:, None] * (D - x) ** 2
print("edm loss", edm_loss.mean().item(), edm_loss.shape)
ln = torch.empty(4).log_normal_(mean=P_mean, std=P_std)
print(ln.dtype, ln.shape, bool((ln > 0).all()))

# one-step and multistep consistency sampling
with torch.no_grad():
    xT = z * sigma_max
    s1 = denoise(target_model, xT, torch.full((32,), sigma_max))
    ts = [sigma_max, 5.0, 1.0]
    xs = s1
    for tk in ts[1:]:
        xs = xs + math.sqrt(tk ** 2 - sigma_min ** 2) * z
        xs = denoise(target_model, xs, torch.full((32,), tk))
print("one-step", s1.mean(0), "multi", xs.mean(0))
