"""Policy-based deep RL variants in the style of a DRL tutorial series (REINFORCE, actor-critic,
GAE, PPO with a MultivariateNormal policy, SAC with a learned temperature, DIAYN's skill
discriminator).  Weights and exploration noise come from numpy, so every number printed is
deterministic.  Exercises: Categorical over an implicit-dim Softmax, discounted normalised returns,
GAE written element by element into a tensor under no_grad, PPO's clipped surrogate where ratio
== 1 exactly on the first epoch (ties in torch.min and at clamp's bounds), diag_embed covariances,
log_prob / entropy of several distributions, a learned log-alpha, and F.nll_loss on skills."""
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical, MultivariateNormal, Normal, OneHotCategorical

warnings.simplefilter("ignore")
rng = np.random.RandomState(5)


def fill_from_numpy(module, seed, scale=0.5):
    r = np.random.RandomState(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(r.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))
    return module


def pick(prob):
    """Sample an action with numpy from a probability row (the same draw in every run)."""
    p = prob.detach().double().numpy()
    return int(rng.choice(len(p), p=p / p.sum()))


class Walk:
    """Reach cell 4 of a 5-cell line; state is (position, steps taken) scaled to [0, 1]."""

    def reset(self):
        self.pos, self.t = 2, 0
        return np.array([self.pos / 4.0, 0.0, 1.0, -1.0], dtype=np.float32)

    def step(self, a):
        self.pos = min(4, self.pos + 1) if a == 1 else max(0, self.pos - 1)
        self.t += 1
        done = self.pos == 4 or self.t >= 12
        r = 1.0 if self.pos == 4 else -0.1
        return np.array([self.pos / 4.0, self.t / 12.0, 1.0, -1.0], dtype=np.float32), r, done


env = Walk()

# REINFORCE with nn.Softmax() (implicit dim) and normalised discounted returns
policy = fill_from_numpy(nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2), nn.Softmax()), 1)
opt = torch.optim.Adam(policy.parameters(), lr=0.02)


def discounted(rs, gamma=0.9):
    out, run = np.zeros(len(rs)), 0.0
    for t in range(len(rs) - 1, -1, -1):
        run = rs[t] + run * gamma
        out[t] = run
    if len(rs) > 1:
        out -= out.mean()
        out /= out.std() + 1e-8
    return out


for episode in range(4):
    s = env.reset()
    ss, aa, rr = [], [], []
    while True:
        a = pick(policy(torch.FloatTensor(s)))
        s_, r, done = env.step(a)
        ss.append(s); aa.append(a); rr.append(r)
        s = s_
        if done:
            break
    states = torch.FloatTensor(np.array(ss))
    dist = Categorical(policy(states))
    loss = -torch.sum(dist.log_prob(torch.LongTensor(aa)) * torch.FloatTensor(discounted(rr)))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("reinforce", episode, len(rr), round(sum(rr), 2), round(loss.item(), 5),
          dist.entropy().mean().detach().numpy().round(5))

# one-step actor-critic with a shared trunk and a TD error as the advantage
trunk = nn.Sequential(nn.Linear(4, 16), nn.Tanh())
actor, critic = nn.Linear(16, 2), nn.Linear(16, 1)
for k, m in enumerate([trunk, actor, critic]):
    fill_from_numpy(m, 10 + k)
ac_opt = torch.optim.Adam(list(trunk.parameters()) + list(actor.parameters()) + list(critic.parameters()), lr=0.01)
s = env.reset()
for t in range(8):
    f = trunk(torch.FloatTensor(s))
    logits = actor(f)
    a = pick(F.softmax(logits, dim=-1))
    s_, r, done = env.step(a)
    with torch.no_grad():
        v_ = critic(trunk(torch.FloatTensor(s_))) * (0.0 if done else 1.0)
    v = critic(f)
    td = r + 0.9 * v_ - v
    dist = Categorical(logits=logits)
    loss = -dist.log_prob(torch.tensor(a)) * td.detach() + td.pow(2) - 0.01 * dist.entropy()
    ac_opt.zero_grad()
    loss.sum().backward()
    ac_opt.step()
    s = env.reset() if done else s_
    if t % 2 == 1:
        print("a2c", t, a, round(td.item(), 5), round(trunk[0].weight.grad.norm().item(), 5))


# PPO with GAE on a 1-D continuous action: MultivariateNormal(mu, diag_embed(std))
class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.feature = nn.Sequential(nn.Linear(3, 16), nn.ReLU())
        self.mu = nn.Sequential(nn.Linear(16, 1), nn.Tanh())
        self.log_std = nn.Parameter(torch.ones(size=[1]), requires_grad=True)

    def forward(self, s):
        return self.mu(self.feature(s)), self.log_std.exp()


actor = fill_from_numpy(Actor(), 20)
actor_old = Actor()
critic = fill_from_numpy(nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 1)), 21)
a_opt = torch.optim.Adam(actor.parameters(), lr=1e-3)
c_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)
T = 16
theta, omega = 0.5, 0.0
mem_s, mem_a, mem_r, mem_s_, mem_done = [], [], [], [], []
for t in range(T):
    s = [np.cos(theta), np.sin(theta), omega]
    with torch.no_grad():
        mean, std = actor(torch.tensor(s, dtype=torch.float))
    a = float(np.clip(mean.item() + std.item() * rng.randn(), -1, 1)) * 2.0
    omega = float(np.clip(omega + (15 * np.sin(theta) + 3 * a) * 0.05, -8, 8))
    theta = theta + omega * 0.05
    r = -(theta ** 2 + 0.1 * omega ** 2 + 0.001 * a ** 2)
    mem_s.append(s); mem_a.append(a / 2.0); mem_r.append((r + 8) / 8)
    mem_s_.append([np.cos(theta), np.sin(theta), omega]); mem_done.append(1 if t == T - 1 else 0)
s = torch.tensor(mem_s, dtype=torch.float)
a = torch.tensor(mem_a, dtype=torch.float).unsqueeze(dim=-1)
r = torch.tensor(mem_r, dtype=torch.float)
s_ = torch.tensor(mem_s_, dtype=torch.float)
with torch.no_grad():
    v = critic(s).squeeze()
    v_ = critic(s_).squeeze()
    delta = r + 0.9 * v_ - v
    gae = torch.zeros(size=[T])
    running = 0
    for t in range(T - 1, -1, -1):
        gae[t] = running * 0.9 * 0.95 * (1 - mem_done[t]) + delta[t]
        running = gae[t]
    gae = gae.unsqueeze(-1)
    ret = torch.zeros(size=[T])
    running = 0
    for t in range(T - 1, -1, -1):
        ret[t] = (v_[t] * 0.9 + r[t]) if mem_done[t] == 1 else running * 0.9 + r[t]
        running = ret[t]
    ret = ret.unsqueeze(-1)
print("gae", gae.squeeze().numpy().round(4)[:6], type(running).__name__, running.dtype, running.shape)


def log_prob(net, s, a):
    mean, std = net(s)
    std = torch.stack([std] * mean.shape[0], dim=0)
    dist = MultivariateNormal(loc=mean, covariance_matrix=torch.diag_embed(std))
    return dist.log_prob(a).unsqueeze(dim=-1), dist.entropy()


actor_old.load_state_dict(actor.state_dict())
with torch.no_grad():
    old_lp, _ = log_prob(actor_old, s, a)
for epoch in range(3):
    for i in range(0, T, 8):
        lp, ent = log_prob(actor, s[i:i + 8], a[i:i + 8])
        ratio = torch.exp(lp - old_lp[i:i + 8])
        surr1 = ratio * gae[i:i + 8]
        surr2 = torch.clamp(ratio, 0.8, 1.2) * gae[i:i + 8]
        loss = -torch.mean(torch.min(surr1, surr2))
        a_opt.zero_grad()
        loss.backward()
        a_opt.step()
        v_loss = F.mse_loss(critic(s[i:i + 8]), ret[i:i + 8])
        c_opt.zero_grad()
        v_loss.backward()
        c_opt.step()
    print("ppo", epoch, round(loss.item(), 6), round(v_loss.item(), 6), ratio.detach().squeeze().numpy().round(5)[:4],
          round(actor.log_std.grad.item(), 6), round(ent[0].item(), 5))


# SAC: tanh-squashed Gaussian, twin critics, a learned temperature log_alpha
class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(3, 16)
        self.mean = nn.Linear(16, 1)
        self.log_std = nn.Linear(16, 1)

    def forward(self, s):
        x = F.relu(self.l1(s))
        return self.mean(x), torch.clamp(self.log_std(x), -20, 2).exp()


pi = fill_from_numpy(Policy(), 30)
q1 = fill_from_numpy(nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1)), 31)
q2 = fill_from_numpy(nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1)), 32)
log_alpha = torch.zeros(1, requires_grad=True)
alpha_opt = torch.optim.Adam([log_alpha], lr=0.01)
pi_opt = torch.optim.Adam(pi.parameters(), lr=0.01)
target_entropy = -1.0
for step in range(4):
    idx = rng.randint(0, T, size=8)
    st = s[idx]
    mean, std = pi(st)
    dist = Normal(mean, std)
    u = mean + std * torch.from_numpy(rng.randn(8, 1).astype(np.float32))
    act = torch.tanh(u)
    logp = dist.log_prob(u) - torch.log(1 - act.pow(2) + 1e-6)
    sa = torch.cat([st, act], dim=-1)
    q_new = torch.min(q1(sa), q2(sa))
    alpha = log_alpha.exp()
    pi_loss = torch.mean(alpha.detach() * logp - q_new)
    pi_opt.zero_grad()
    pi_loss.backward()
    pi_opt.step()
    alpha_loss = -torch.mean(log_alpha * (logp + target_entropy).detach())
    alpha_opt.zero_grad()
    alpha_loss.backward()
    alpha_opt.step()
    print("sac", step, round(pi_loss.item(), 5), round(alpha_loss.item(), 5), round(log_alpha.item(), 5),
          round(pi.log_std.weight.grad.abs().sum().item(), 5))

# DIAYN: a skill-conditioned policy and a discriminator trained with nll_loss on log_softmax
skills = 4
disc = fill_from_numpy(nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, skills)), 40)
d_opt = torch.optim.Adam(disc.parameters(), lr=0.01)
z_dist = OneHotCategorical(probs=torch.ones(skills) / skills)
print("skill prior", z_dist.entropy().item(), z_dist.log_prob(torch.eye(skills)[1]).item(), z_dist.mean)
log_pz = torch.log(torch.tensor(1 / skills, dtype=torch.float))
for step in range(3):
    z = torch.eye(skills)[torch.from_numpy(rng.randint(0, skills, size=10))]
    pos = torch.from_numpy(rng.uniform(-1, 1, size=(10, 2)).astype(np.float32)) + 0.3 * z[:, :2]
    log_q = F.log_softmax(disc(pos), dim=-1)
    reward = (log_q * z).sum(-1) - log_pz
    d_loss = F.nll_loss(log_q, z.argmax(dim=-1))
    d_opt.zero_grad()
    d_loss.backward()
    d_opt.step()
    print("diayn", step, round(d_loss.item(), 5), reward.detach().numpy().round(4)[:4])
