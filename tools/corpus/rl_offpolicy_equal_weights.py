"""Off-policy RL idioms (DQN/DDPG/TD3/SAC/C51 style) with weights and data from numpy, so every
number is deterministic: a numpy replay buffer, gather on chosen actions, double-Q targets under
no_grad, clipped target noise, a tanh-squashed Gaussian log-prob, a categorical (C51) projection,
Polyak soft updates of target networks and a hard copy by load_state_dict."""
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal

rng = np.random.RandomState(0)


def fill_from_numpy(module, seed):
    r = np.random.RandomState(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(r.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
    return module


class Replay:
    def __init__(self, obs_dim, act_dim, size):
        self.s = np.zeros((size, obs_dim), np.float32); self.a = np.zeros((size, act_dim), np.float32)
        self.r = np.zeros((size, 1), np.float32); self.s2 = np.zeros((size, obs_dim), np.float32)
        self.d = np.zeros((size, 1), np.float32); self.ptr, self.n, self.size = 0, 0, size

    def add(self, s, a, r, s2, d):
        self.s[self.ptr], self.a[self.ptr], self.r[self.ptr], self.s2[self.ptr], self.d[self.ptr] = s, a, r, s2, d
        self.ptr = (self.ptr + 1) % self.size; self.n = min(self.n + 1, self.size)

    def sample(self, k):
        i = rng.randint(0, self.n, size=k)
        return tuple(torch.FloatTensor(x[i]) for x in (self.s, self.a, self.r, self.s2, self.d))


obs_dim, act_dim, n_actions = 3, 1, 4
buf = Replay(obs_dim, act_dim, 64)
for t in range(80):
    s = rng.randn(obs_dim).astype(np.float32)
    a = rng.uniform(-1, 1, act_dim).astype(np.float32)
    buf.add(s, a, float(-np.sum(s ** 2)), np.tanh(s + a.mean()), float(t % 17 == 16))
print("buffer", buf.n, buf.ptr, buf.r[:3].ravel().round(4))

# DQN with a double-Q target
q_net = fill_from_numpy(nn.Sequential(nn.Linear(obs_dim, 16), nn.ReLU(), nn.Linear(16, n_actions)), 1)
q_targ = copy.deepcopy(q_net)
opt = torch.optim.Adam(q_net.parameters(), lr=1e-2)
for step in range(5):
    s, a, r, s2, d = buf.sample(8)
    actions = (a * 2 + 2).long().clamp(0, n_actions - 1)
    q = q_net(s).gather(1, actions)
    with torch.no_grad():
        best = q_net(s2).argmax(dim=1, keepdim=True)
        target = r + 0.99 * (1 - d) * q_targ(s2).gather(1, best)
    loss = F.smooth_l1_loss(q, target)
    opt.zero_grad(); loss.backward()
    norm = nn.utils.clip_grad_norm_(q_net.parameters(), 1.0)
    opt.step()
    print(f"dqn step {step}: loss {loss.item():.5f} grad norm {norm.item():.5f}")
print(q_targ.load_state_dict(q_net.state_dict()))

# TD3-style twin critics with clipped target-policy noise (noise from numpy)
actor = fill_from_numpy(nn.Sequential(nn.Linear(obs_dim, 16), nn.ReLU(), nn.Linear(16, act_dim), nn.Tanh()), 2)
critics = [fill_from_numpy(nn.Sequential(nn.Linear(obs_dim + act_dim, 16), nn.ReLU(), nn.Linear(16, 1)), k) for k in (3, 4)]
actor_t, critics_t = copy.deepcopy(actor), copy.deepcopy(critics)
c_opt = torch.optim.Adam([p for c in critics for p in c.parameters()], lr=3e-3)
a_opt = torch.optim.Adam(actor.parameters(), lr=3e-3)
for step in range(4):
    s, a, r, s2, d = buf.sample(8)
    with torch.no_grad():
        noise = torch.from_numpy(rng.randn(8, act_dim).astype(np.float32) * 0.2).clamp(-0.5, 0.5)
        a2 = (actor_t(s2) + noise).clamp(-1.0, 1.0)
        sa2 = torch.cat([s2, a2], 1)
        y = r + 0.99 * (1 - d) * torch.min(critics_t[0](sa2), critics_t[1](sa2))
    sa = torch.cat([s, a], 1)
    c_loss = F.mse_loss(critics[0](sa), y) + F.mse_loss(critics[1](sa), y)
    c_opt.zero_grad(); c_loss.backward(); c_opt.step()
    if step % 2 == 1:
        a_loss = -critics[0](torch.cat([s, actor(s)], 1)).mean()
        a_opt.zero_grad(); a_loss.backward(); a_opt.step()
        with torch.no_grad():
            for net, targ in [(actor, actor_t)] + list(zip(critics, critics_t)):
                for p, p_t in zip(net.parameters(), targ.parameters()):
                    p_t.data.mul_(0.995); p_t.data.add_(0.005 * p.data)
        print(f"td3 step {step}: critic {c_loss.item():.5f} actor {a_loss.item():.5f}")
print("target sum", round(sum(p.sum().item() for p in actor_t.parameters()), 4))

# SAC-style squashed Gaussian: rsample with numpy noise, the tanh log-prob correction
mu_head = fill_from_numpy(nn.Linear(obs_dim, 2 * act_dim), 5)
s, *_ = buf.sample(6)
mu, log_std = mu_head(s).chunk(2, dim=-1)
std = log_std.clamp(-20, 2).exp()
dist = Normal(mu, std)
eps = torch.from_numpy(rng.randn(6, act_dim).astype(np.float32))
u = mu + std * eps
logp = dist.log_prob(u).sum(-1) - (2 * (np.log(2) - u - F.softplus(-2 * u))).sum(-1)
act = torch.tanh(u)
(0.2 * logp - act.sum(-1)).mean().backward()
print(dist)
print(logp.detach().numpy().round(4), act.detach().view(-1).numpy().round(4))
print(mu_head.weight.grad.numpy().round(4))

# C51 categorical projection of a shifted support
atoms = torch.linspace(-2.0, 2.0, 9); dz = 0.5
probs = F.softmax(fill_from_numpy(nn.Linear(obs_dim, 9), 6)(s), dim=-1)
tz = (torch.FloatTensor(rng.randn(6, 1).astype(np.float32)) + 0.9 * atoms).clamp(-2.0, 2.0)
proj = ((1 - (tz.unsqueeze(1) - atoms.view(1, -1, 1)).abs() / dz).clamp(0, 1) * probs.unsqueeze(1)).sum(-1)
print(proj.sum(-1).detach().numpy().round(4), proj[0].detach())
