"""Soft actor-critic in the shape of thomashirtz/soft-actor-critic (agent.py, policy.py, critic.py,
utilities.py): twinned Q networks on cat([state, action]), a tanh-squashed Gaussian policy whose
log-prob uses Spinning Up's softplus correction, entropy tuning through log_alpha, eval_mode as a
context manager and Polyak updates through .data.copy_; with the hyperparameters and sizes
scripts read from numpy (np.float32 tau and bounds, a 0-d array size, a numpy clip value, a
numpy interpolation weight), the environment a small numpy pendulum, and the reparameterisation
noise drawn from numpy so that every printed number is deterministic."""
from contextlib import contextmanager

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Normal

rng = np.random.RandomState(0)


def mlp(units, keep_last_relu=False):
    layers = []
    for n_in, n_out in zip(units, units[1:]):
        layers += [nn.Linear(n_in, n_out), nn.ReLU()]
    return nn.Sequential(*(layers if keep_last_relu else layers[:-1]))


def init_from_numpy(module, seed):
    r = np.random.RandomState(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(r.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
    return module


@contextmanager
def eval_mode(net):
    was_training = net.training
    try:
        net.eval()
        yield net
    finally:
        if was_training:
            net.train()


class TwinQ(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden):
        super().__init__()
        self.q1 = mlp([obs_dim + act_dim] + hidden + [1])
        self.q2 = mlp([obs_dim + act_dim] + hidden + [1])

    def forward(self, state, action):
        x = torch.cat([state, action], dim=1)
        return self.q1(x), self.q2(x)


class Policy(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden):
        super().__init__()
        self.body = mlp([obs_dim] + hidden, keep_last_relu=True)
        self.mean = nn.Linear(hidden[-1], act_dim)
        self.log_std = nn.Linear(hidden[-1], act_dim)

    def evaluate(self, state, noise):
        x = self.body(state)
        mean = self.mean(x)
        std = self.log_std(x).clamp(min=-20, max=2).exp()
        dist = Normal(mean, std)
        sample = mean + std * noise                       # rsample with numpy's noise
        action = torch.tanh(sample)
        log_prob = dist.log_prob(sample).sum(axis=-1, keepdim=True)
        log_prob = log_prob - (2 * (np.log(2) - sample - F.softplus(-2 * sample))).sum(axis=1).unsqueeze(1)
        return action, log_prob


def soft_update(source, target, tau):
    for t, s in zip(target.parameters(), source.parameters()):
        t.data.copy_(t.data * (1.0 - tau) + s.data * tau)


class Pendulum:
    def __init__(self, seed):
        self.r = np.random.RandomState(seed)

    def reset(self):
        self.th, self.thd = self.r.uniform(-np.pi, np.pi), self.r.uniform(-1, 1)
        return np.array([np.cos(self.th), np.sin(self.th), self.thd], np.float32)

    def step(self, u):
        u = float(np.clip(u, -2.0, 2.0)[0])
        cost = (((self.th + np.pi) % (2 * np.pi)) - np.pi) ** 2 + 0.1 * self.thd ** 2 + 0.001 * u ** 2
        self.thd = float(np.clip(self.thd + (15.0 * np.sin(self.th) + 3.0 * u) * 0.05, -8, 8))
        self.th += self.thd * 0.05
        return np.array([np.cos(self.th), np.sin(self.th), self.thd], np.float32), -cost


obs_dim, act_dim, hidden = 3, np.array(1), [16, 16]       # a 0-d array as a size
gamma, tau = np.float64(0.99), np.float32(0.005)
low, high = np.float32(-2.0), np.float32(2.0)
batch_size = np.int64(16)

policy = init_from_numpy(Policy(obs_dim, int(act_dim), hidden), 1)
critic = init_from_numpy(TwinQ(obs_dim, int(act_dim), hidden), 2)
target = init_from_numpy(TwinQ(obs_dim, int(act_dim), hidden), 3)
soft_update(critic, target, tau=1)
print("target equals critic:", all(torch.equal(a, b) for a, b in zip(target.parameters(), critic.parameters())))
log_alpha = torch.zeros(1, requires_grad=True)
alpha = log_alpha.exp().detach()
target_entropy = -torch.Tensor([int(act_dim)]).item()
p_opt = optim.Adam(policy.parameters(), lr=np.float32(3e-3))
q_opt = optim.Adam(critic.parameters(), lr=3e-3)
a_opt = optim.Adam([log_alpha], lr=3e-3)

size = 200
S, A = torch.zeros(size, obs_dim), torch.zeros(size, act_dim)
R, S2, D = torch.zeros(size, 1), torch.zeros(size, obs_dim), torch.zeros(size, 1)
print("buffer shapes:", tuple(S.shape), tuple(A.shape), A.dtype)
env, count = Pendulum(7), 0
obs = env.reset()
for step in range(60):
    with torch.no_grad():
        a, _ = policy.evaluate(torch.as_tensor(obs).unsqueeze(0), torch.from_numpy(rng.randn(1, 1).astype(np.float32)))
    a = torch.clamp(a * high, low, high).squeeze(0).numpy()
    obs2, r = env.step(a)
    i = count % size
    S[i], A[i], R[i], S2[i], D[i] = torch.from_numpy(obs), torch.from_numpy(a), r, torch.from_numpy(obs2), 0.0
    count, obs = count + 1, obs2
    if count < batch_size:
        continue
    idx = rng.choice(min(count, size), batch_size)
    s, act, rew, s2, d = S[idx], A[idx], R[idx], S2[idx], D[idx]
    with torch.no_grad():
        a2, lp2 = policy.evaluate(s2, torch.from_numpy(rng.randn(batch_size, 1).astype(np.float32)))
        q1t, q2t = target(s2, a2)
        y = rew + (1 - d) * gamma * (torch.min(q1t, q2t) - alpha * lp2)
    q1, q2 = critic(s, act)
    l1, l2 = F.mse_loss(q1, y), F.mse_loss(q2, y)
    q_opt.zero_grad()
    ((l1 + l2) / 2).backward()
    torch.nn.utils.clip_grad_value_(critic.parameters(), np.uint8(1))
    q_opt.step()
    with eval_mode(critic):
        a_new, lp = policy.evaluate(s, torch.from_numpy(rng.randn(batch_size, 1).astype(np.float32)))
        p_loss = (alpha * lp - torch.min(*critic(s, a_new))).mean()
        p_opt.zero_grad()
        p_loss.backward()
        p_opt.step()
    a_loss = -(log_alpha * (lp + target_entropy).detach()).mean()
    a_opt.zero_grad()
    a_loss.backward()
    a_opt.step()
    alpha = log_alpha.exp().detach()
    soft_update(critic, target, tau)
    if step % 10 == 0:
        print(f"step {step:2d} q1 {l1.item():.4f} q2 {l2.item():.4f} pi {p_loss.item():.4f} "
              f"alpha {alpha.item():.5f} critic.training {critic.training}")

# the same Polyak step by lerp_ with numpy weights, and the clip with a numpy unsigned value
with torch.no_grad():
    moved = [t.clone().lerp_(s, np.uint8(2)) for t, s in zip(target.parameters(), critic.parameters())]
    gap = max((m - (2 * s - t)).abs().max().item() for m, t, s in zip(moved, target.parameters(), critic.parameters()))
print("lerp_ weight np.uint8(2) extrapolates to 2s - t:", gap < 1e-5)
g = torch.ones(3, requires_grad=True)
(g * torch.tensor([-3., 0.25, 3.])).sum().backward()
torch.nn.utils.clip_grad_value_([g], np.uint8(1))
print("clipped:", g.grad)
print("arange from numpy bounds:", torch.arange(np.uint8(250), np.uint8(10), np.int8(-60)))
print("final alpha:", round(alpha.item(), 5), "log_alpha grad:", log_alpha.grad)
