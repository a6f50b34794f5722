# PETS: probabilistic ensemble with bounded log-variance + CEM planning on a point mass
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

class EnsembleLinear(nn.Module):
    def __init__(self, ensemble_size, in_features, out_features, weight_decay=0.0):
        super().__init__()
        self.ensemble_size = ensemble_size
        self.weight = nn.Parameter(torch.Tensor(ensemble_size, in_features, out_features))
        self.bias = nn.Parameter(torch.Tensor(ensemble_size, 1, out_features))
        self.weight_decay = weight_decay
        self.reset_parameters()

    def reset_parameters(self):
        with torch.no_grad():
            e, i, o = self.weight.shape
            self.weight.copy_(torch.cos(torch.arange(e * i * o, dtype=torch.float32)).view(e, i, o) / math.sqrt(i))
            self.bias.zero_()

    def forward(self, x):
        return torch.bmm(x, self.weight) + self.bias

    def extra_repr(self):
        return f"ensemble_size={self.ensemble_size}, weight={tuple(self.weight.shape)}"

class ProbEnsemble(nn.Module):
    def __init__(self, n=5, obs_dim=2, act_dim=1, hidden=32):
        super().__init__()
        self.obs_dim = obs_dim
        self.l1 = EnsembleLinear(n, obs_dim + act_dim, hidden, 2.5e-5)
        self.l2 = EnsembleLinear(n, hidden, hidden, 5e-5)
        self.l3 = EnsembleLinear(n, hidden, 2 * obs_dim, 1e-4)
        self.max_logvar = nn.Parameter(torch.ones(1, obs_dim) / 2.0)
        self.min_logvar = nn.Parameter(-torch.ones(1, obs_dim) * 10.0)
        self.register_buffer("mu", torch.zeros(obs_dim + act_dim))
        self.register_buffer("sigma", torch.ones(obs_dim + act_dim))

    def forward(self, x, ret_log_var=False):
        x = (x - self.mu) / self.sigma
        h = F.silu(self.l1(x))
        h = F.silu(self.l2(h))
        out = self.l3(h)
        mean, logvar = out[..., : self.obs_dim], out[..., self.obs_dim:]
        logvar = self.max_logvar - F.softplus(self.max_logvar - logvar)
        logvar = self.min_logvar + F.softplus(logvar - self.min_logvar)
        return (mean, logvar) if ret_log_var else (mean, torch.exp(logvar))

    def loss(self, mean, logvar, target, inc_var=True):
        inv_var = torch.exp(-logvar)
        if inc_var:
            mse = torch.mean(torch.mean(torch.pow(mean - target, 2) * inv_var, dim=-1), dim=-1)
            var_loss = torch.mean(torch.mean(logvar, dim=-1), dim=-1)
            total = torch.sum(mse) + torch.sum(var_loss)
        else:
            mse = torch.mean(torch.pow(mean - target, 2), dim=(1, 2))
            total = torch.sum(mse)
        total = total + 0.01 * torch.sum(self.max_logvar) - 0.01 * torch.sum(self.min_logvar)
        return total, mse

    def decay(self):
        return sum(m.weight_decay * 0.5 * torch.sum(torch.square(m.weight)) for m in [self.l1, self.l2, self.l3])

def point_mass(s, a, dt=0.1):
    pos, vel = s[..., 0], s[..., 1]
    a = a[..., 0].clamp(-1, 1)
    vel = vel + dt * a
    pos = pos + dt * vel
    return torch.stack([pos, vel], -1)

# dataset from a deterministic policy sweep
S = torch.stack(torch.meshgrid(torch.linspace(-1, 1, 8), torch.linspace(-1, 1, 8), indexing="ij"), -1).reshape(-1, 2)
A = torch.sin(torch.arange(S.shape[0], dtype=torch.float32))[:, None]
S2 = point_mass(S, A)
X = torch.cat([S, A], -1)
Y = S2 - S
model = ProbEnsemble()
model.mu.data = X.mean(0)
model.sigma.data = X.std(0).clamp_min(1e-12)
print(model.l1)
print("params", sum(p.numel() for p in model.parameters()))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
Xe = X.unsqueeze(0).repeat(5, 1, 1)
Ye = Y.unsqueeze(0).expand(5, -1, -1)
for it in range(30):
    mean, logvar = model(Xe, ret_log_var=True)
    loss, mse = model.loss(mean, logvar, Ye)
    loss = loss + model.decay()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 10 == 0:
        print(it, f"loss {loss.item():.4f}", "mse", mse.detach().numpy().round(4))
with torch.no_grad():
    mean, var = model(Xe)
    print("var range", var.min().item() > 0, tuple(var.shape))
    holdout = model.loss(mean, var.log(), Ye, inc_var=False)[1]
    sorted_loss, idx = torch.sort(holdout)
    elites = idx[:3].tolist()
    print("elites", len(elites), sorted_loss.shape)

# CEM over the TRUE dynamics (deterministic) to reach pos=1
def cost_fn(s):
    return (s[..., 0] - 1.0) ** 2 + 0.1 * s[..., 1] ** 2

H, N, K, iters = 10, 200, 20, 5
mean = torch.zeros(H, 1)
std = torch.ones(H, 1) * 0.5
gen = torch.Generator().manual_seed(0)
for i in range(iters):
    noise = torch.randn(N, H, 1, generator=gen)
    actions = (mean + std * noise).clamp(-1, 1)
    actions[0] = mean.clamp(-1, 1)
    s = torch.zeros(N, 2)
    total = torch.zeros(N)
    for t in range(H):
        s = point_mass(s, actions[:, t])
        total += cost_fn(s)
    elite_costs, elite_idx = torch.topk(-total, K, largest=True, sorted=True)
    elites = actions[elite_idx]
    new_mean, new_std = elites.mean(0), elites.std(0, unbiased=False)
    mean = 0.1 * mean + 0.9 * new_mean
    std = 0.1 * std + 0.9 * new_std
    print(f"iter {i} best {(-elite_costs[0]).item() <= total[0].item() + 1e-6} std {std.mean().item() > 0}")
print("plan shape", mean.shape, "first action sign", torch.sign(mean[0]).item())
