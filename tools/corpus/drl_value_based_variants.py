"""Value-based deep RL variants in the style of a DQN tutorial series (DQN, Double DQN, Dueling,
D3QN, prioritized replay, NoisyNet, DRQN) on a tiny deterministic balance task.  Weights, noise
and replay sampling come from numpy, so every printed number is deterministic: a tensor replay
buffer filled row by row, Q(s)[arange, a] selection, double-Q targets, a dueling head with the
mean advantage removed, importance-weighted TD loss with priorities read back from the TD error,
factorized Gaussian noisy layers with registered noise buffers, and an LSTM Q-network that
carries its hidden state across steps."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.RandomState(7)


def fill_from_numpy(module, seed, scale=0.4):
    r = np.random.RandomState(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(torch.from_numpy(r.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))
    return module


class Balance:
    """A pole on a cart, integrated with Euler steps: action 0 pushes left, 1 pushes right."""

    def __init__(self):
        self.r = np.random.RandomState(3)

    def reset(self):
        self.state = self.r.uniform(-0.05, 0.05, size=4)
        self.t = 0
        return self.state.astype(np.float32), {}

    def step(self, a):
        x, v, th, w = self.state
        force = 10.0 if a == 1 else -10.0
        temp = (force + 0.05 * w * w * math.sin(th)) / 1.1
        acc_th = (9.8 * math.sin(th) - math.cos(th) * temp) / (0.5 * (4.0 / 3.0 - 0.1 * math.cos(th) ** 2 / 1.1))
        acc_x = temp - 0.05 * acc_th * math.cos(th) / 1.1
        self.state = np.array([x + 0.02 * v, v + 0.02 * acc_x, th + 0.02 * w, w + 0.02 * acc_th])
        self.t += 1
        done = bool(abs(self.state[0]) > 2.4 or abs(self.state[2]) > 0.21 or self.t >= 30)
        return self.state.astype(np.float32), 1.0, done, False, {}


class TensorReplay:
    def __init__(self, s_dim, capacity):
        self.s = torch.zeros(size=[capacity, s_dim], dtype=torch.float)
        self.a = torch.zeros(size=[capacity], dtype=torch.long)
        self.s_ = torch.zeros(size=[capacity, s_dim], dtype=torch.float)
        self.r = torch.zeros(size=[capacity], dtype=torch.float)
        self.done = torch.zeros(size=[capacity], dtype=torch.float)
        self.capacity, self.counter = capacity, 0

    def store(self, s, a, s_, r, done):
        i = self.counter % self.capacity
        self.s[i] = torch.tensor(s, dtype=torch.float)
        self.a[i] = torch.tensor(a, dtype=torch.long)
        self.s_[i] = torch.tensor(s_, dtype=torch.float)
        self.r[i] = torch.tensor(r, dtype=torch.float)
        self.done[i] = torch.tensor(1 if done else 0, dtype=torch.long)
        self.counter += 1

    def sample(self, k):
        index = rng.randint(0, min(self.capacity, self.counter), size=k).tolist()
        return self.s[index], self.a[index], self.s_[index], self.r[index], self.done[index], index


env = Balance()
buf = TensorReplay(4, 200)
for episode in range(6):
    s, _ = env.reset()
    while True:
        a = int(rng.randint(2))
        s_, r, done, _, _ = env.step(a)
        x, _, th, _ = s_
        shaped = (2.4 - abs(x)) / 2.4 - 0.8 + (0.21 - abs(th)) / 0.21 - 0.5
        buf.store(s, a, s_, shaped, done)
        s = s_
        if done:
            break
print("stored", buf.counter, "dtypes", buf.s.dtype, buf.a.dtype, buf.done.dtype)
print("done flags", buf.done[:buf.counter].sum().item(), "reward sum", round(buf.r[:buf.counter].sum().item(), 4))


class QNet(nn.Module):
    def __init__(self, s_dim, hidden, a_num):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(s_dim, hidden), nn.ReLU(), nn.Linear(hidden, a_num))

    def forward(self, s):
        return self.net(s)


class DuelingQ(nn.Module):
    def __init__(self, s_dim, hidden, a_num):
        super().__init__()
        self.feature = nn.Sequential(nn.Linear(s_dim, hidden), nn.ReLU())
        self.v = nn.Linear(hidden, 1)
        self.adv = nn.Linear(hidden, a_num)

    def forward(self, s):
        f = self.feature(s)
        adv = self.adv(f)
        return self.v(f) + adv - torch.mean(adv, dim=-1, keepdim=True)


def td_step(q_net, q_target, opt, double, weights=None):
    s, a, s_, r, done, index = buf.sample(16)
    q = q_net(s)[torch.LongTensor(range(len(r))), a]
    with torch.no_grad():
        if double:
            a_ = torch.argmax(q_net(s_), dim=1, keepdim=True)
            q_ = q_target(s_).gather(dim=1, index=a_).squeeze(dim=1)
        else:
            q_ = torch.max(q_target(s_), dim=1).values
        td_target = r + (1 - done) * 0.9 * q_
    if weights is None:
        loss = F.mse_loss(q, td_target)
    else:
        w = weights(index)
        loss = torch.mean(w * (q - td_target) ** 2)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item(), (td_target - q).detach(), index


for name, cls, double in [("dqn", QNet, False), ("double", QNet, True), ("dueling", DuelingQ, False),
                          ("d3qn", DuelingQ, True)]:
    q_net = fill_from_numpy(cls(4, 16, 2), 11)
    q_target = cls(4, 16, 2)
    q_target.load_state_dict(q_net.state_dict())
    opt = torch.optim.Adam(q_net.parameters(), lr=0.01)
    losses = []
    for step in range(12):
        loss, _, _ = td_step(q_net, q_target, opt, double)
        losses.append(round(loss, 5))
        if step % 5 == 4:
            q_target.load_state_dict(q_net.state_dict())
    probe = q_net(buf.s[:3])
    print(name, losses[:3], losses[-1], probe.detach().numpy().round(4).tolist())

# prioritized replay: importance weights from priorities, priorities updated from |TD error|
priority = np.ones(buf.capacity, dtype=np.float64)
beta = 0.4


def is_weights(index):
    p = priority[: buf.counter] ** 0.6
    prob = p / p.sum()
    w = (len(p) * prob[index]) ** (-beta)
    return torch.tensor(w / w.max(), dtype=torch.float)


q_net = fill_from_numpy(DuelingQ(4, 16, 2), 12)
q_target = DuelingQ(4, 16, 2)
q_target.load_state_dict(q_net.state_dict())
opt = torch.optim.Adam(q_net.parameters(), lr=0.01)
for step in range(6):
    loss, td, index = td_step(q_net, q_target, opt, True, is_weights)
    priority[index] = np.abs(td.numpy()) + 1e-3
    beta = min(1.0, beta + 0.1)
    print("per", step, round(loss, 5), np.round(priority[index][:4], 4).tolist())


class NoisyLinear(nn.Module):
    """Factorized Gaussian noisy layer; the noise buffers are refilled from numpy."""

    def __init__(self, in_f, out_f, std_init=0.5):
        super().__init__()
        self.in_f, self.out_f = in_f, out_f
        self.weight_mu = nn.Parameter(torch.empty(out_f, in_f))
        self.weight_sigma = nn.Parameter(torch.empty(out_f, in_f))
        self.register_buffer("weight_epsilon", torch.empty(out_f, in_f))
        self.bias_mu = nn.Parameter(torch.empty(out_f))
        self.bias_sigma = nn.Parameter(torch.empty(out_f))
        self.register_buffer("bias_epsilon", torch.empty(out_f))
        bound = 1 / math.sqrt(in_f)
        r = np.random.RandomState(in_f * 100 + out_f)
        with torch.no_grad():
            self.weight_mu.copy_(torch.from_numpy(r.uniform(-bound, bound, (out_f, in_f)).astype(np.float32)))
            self.bias_mu.copy_(torch.from_numpy(r.uniform(-bound, bound, out_f).astype(np.float32)))
        self.weight_sigma.data.fill_(std_init / math.sqrt(in_f))
        self.bias_sigma.data.fill_(std_init / math.sqrt(out_f))
        self.reset_noise()

    @staticmethod
    def _scale_noise(size):
        x = torch.from_numpy(rng.randn(size).astype(np.float32))
        return x.sign().mul(x.abs().sqrt())

    def reset_noise(self):
        eps_in, eps_out = self._scale_noise(self.in_f), self._scale_noise(self.out_f)
        self.weight_epsilon.copy_(eps_out.ger(eps_in))
        self.bias_epsilon.copy_(eps_out)

    def forward(self, x):
        if self.training:
            return F.linear(x, self.weight_mu + self.weight_sigma * self.weight_epsilon,
                            self.bias_mu + self.bias_sigma * self.bias_epsilon)
        return F.linear(x, self.weight_mu, self.bias_mu)


noisy = nn.Sequential(NoisyLinear(4, 16), nn.ReLU(), NoisyLinear(16, 2))
noisy_t = nn.Sequential(NoisyLinear(4, 16), nn.ReLU(), NoisyLinear(16, 2))
noisy_t.load_state_dict(noisy.state_dict())
print("noisy state", [(k, tuple(v.shape)) for k, v in noisy.state_dict().items()][:6])
print("buffers", sorted(n for n, _ in noisy.named_buffers()))
opt = torch.optim.Adam(noisy.parameters(), lr=0.01)
for step in range(5):
    loss, _, _ = td_step(noisy, noisy_t, opt, True)
    for m in list(noisy.modules()) + list(noisy_t.modules()):
        if isinstance(m, NoisyLinear):
            m.reset_noise()
    print("noisy", step, round(loss, 5), round(noisy[0].weight_sigma.grad.abs().sum().item(), 5))
noisy.eval()
print("greedy", noisy(buf.s[:4]).argmax(dim=1).tolist(), noisy.training, noisy[0].training)


class DRQN(nn.Module):
    def __init__(self, s_dim, hidden, a_num):
        super().__init__()
        self.lstm = nn.LSTM(s_dim, hidden, batch_first=True)
        self.head = nn.Linear(hidden, a_num)

    def forward(self, s, hidden=None):
        self.lstm.flatten_parameters()
        out, hidden = self.lstm(s, hidden)
        return self.head(out), hidden


drqn = fill_from_numpy(DRQN(4, 8, 2), 21)
drqn_t = DRQN(4, 8, 2)
drqn_t.load_state_dict(drqn.state_dict())
opt = torch.optim.Adam(drqn.parameters(), lr=0.01)
# acting: one step at a time, the (h, c) state carried between calls
hidden = None
acts = []
with torch.no_grad():
    for t in range(6):
        q, hidden = drqn(buf.s[t].view(1, 1, -1), hidden)
        acts.append(int(q.argmax()))
print("drqn acting", acts, tuple(hidden[0].shape), tuple(hidden[1].shape))
# learning on sequences of 5 consecutive transitions
for step in range(4):
    starts = rng.randint(0, buf.counter - 5, size=6)
    seq = torch.stack([torch.arange(int(st), int(st) + 5) for st in starts])
    s, a, s_, r, done = buf.s[seq], buf.a[seq], buf.s_[seq], buf.r[seq], buf.done[seq]
    q, _ = drqn(s)
    q = q.gather(2, a.unsqueeze(-1)).squeeze(-1)
    with torch.no_grad():
        q_, _ = drqn_t(s_)
        target = r + 0.9 * (1 - done) * q_.max(dim=-1)[0]
    loss = F.smooth_l1_loss(q, target)
    opt.zero_grad()
    loss.backward()
    gn = nn.utils.clip_grad_norm_(drqn.parameters(), 10.0)
    opt.step()
    print("drqn", step, tuple(q.shape), round(loss.item(), 5), round(gn.item(), 5))
print("lstm grads", [(n, round(p.grad.norm().item(), 5)) for n, p in drqn.lstm.named_parameters()])
