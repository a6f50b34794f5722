"""Single-file policy-gradient variants in the manner of seungeunrho/minimalRL (ppo.py, vtrace.py,
acer.py, ppo-lstm.py, a3c.py), written afresh on a tiny numpy pole-balancing task.

Exercises what those scripts lean on: transitions kept as Python lists and turned into tensors
with torch.tensor (lists of float32 ndarrays, nested [a] / [r] lists, a float64 dtype for the
reward column), GAE computed over `delta.detach().numpy()[::-1]` and rebuilt with torch.tensor,
gather on chosen actions, exp(log(pi_a) - log(mu_a)) ratios against a torch.min with a 0-d
threshold tensor, tensor-plus-ndarray arithmetic inside no_grad (V-trace), ACER's truncated
importance weights (clamp(max=), (1 - c / rho).clamp(min=0)) and its q_ret recursion with
.item(), a recurrent policy whose LSTM state is carried between steps and detached for the
update (backward(retain_graph=True)), and A3C's hand-off of a worker's gradients through
`global_param._grad = local_param.grad`.  Weights come from numpy and actions are chosen by
numpy from the policy's probabilities, so every printed number is deterministic.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class Pole:
    """A small deterministic cart-pole: 4 float32 observations, 2 actions, reward 1 per step."""

    def __init__(self, seed):
        self.rng = np.random.RandomState(seed)

    def reset(self):
        self.s = self.rng.uniform(-0.05, 0.05, 4)
        self.t = 0
        return self.s.astype(np.float32)

    def step(self, a):
        x, xd, th, thd = self.s
        force = 10.0 if a == 1 else -10.0
        c, s = math.cos(th), math.sin(th)
        tmp = (force + 0.05 * thd * thd * s) / 1.1
        tha = (9.8 * s - c * tmp) / (0.5 * (4.0 / 3.0 - 0.1 * c * c / 1.1))
        xa = tmp - 0.05 * tha * c / 1.1
        self.s = np.array([x + 0.02 * xd, xd + 0.02 * xa, th + 0.02 * thd, thd + 0.02 * tha])
        self.t += 1
        done = bool(abs(self.s[0]) > 2.4 or abs(self.s[2]) > 0.21 or self.t >= 40)
        return self.s.astype(np.float32), 1.0, done


def numpy_weights(module, seed, scale=0.3):
    rs = np.random.RandomState(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rs.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))


CHOOSER = np.random.RandomState(7)


def choose(prob):
    p = prob.detach().numpy().astype(np.float64)
    return int(CHOOSER.choice(len(p), p=p / p.sum()))


class PolicyValue(nn.Module):
    def __init__(self, hidden=32, heads=("pi", "v")):
        super().__init__()
        self.fc1 = nn.Linear(4, hidden)
        self.fc_pi = nn.Linear(hidden, 2)
        self.fc_v = nn.Linear(hidden, 2 if "q" in heads else 1)

    def pi(self, x, softmax_dim=0):
        return F.softmax(self.fc_pi(F.relu(self.fc1(x))), dim=softmax_dim)

    def v(self, x):
        return self.fc_v(F.relu(self.fc1(x)))


def batch(data):
    s, a, r, s2, p, d = zip(*data)
    return (torch.tensor(list(s), dtype=torch.float), torch.tensor([[x] for x in a]),
            torch.tensor([[x] for x in r]), torch.tensor(list(s2), dtype=torch.float),
            torch.tensor([[0.0 if x else 1.0] for x in d]), torch.tensor([[x] for x in p]))


def gae(delta, gamma, lmbda):
    out, running = [], 0.0
    for d in delta[::-1]:
        running = gamma * lmbda * running + d[0]
        out.append([running])
    out.reverse()
    return torch.tensor(out, dtype=torch.float)


def rollout(env, model, horizon):
    data, s, done = [], env.reset(), False
    while not done and len(data) < horizon:
        prob = model.pi(torch.from_numpy(s).float())
        a = choose(prob)
        s2, r, done = env.step(a)
        data.append((s, a, r / 100.0, s2, prob[a].item(), done))
        s = s2
    return data


print("== PPO (clipped ratio, GAE over numpy deltas)")
ppo = PolicyValue()
numpy_weights(ppo, 1)
opt = optim.Adam(ppo.parameters(), lr=5e-3)
env = Pole(0)
for it in range(3):
    s, a, r, s2, mask, prob_a = batch(rollout(env, ppo, 20))
    if it == 0:
        print("dtypes", s.dtype, a.dtype, r.dtype, mask.dtype, prob_a.dtype, tuple(s.shape), tuple(a.shape))
    for k in range(2):
        td_target = r + 0.98 * ppo.v(s2) * mask
        delta = td_target - ppo.v(s)
        adv = gae(delta.detach().numpy(), 0.98, 0.95)
        pi_a = ppo.pi(s, softmax_dim=1).gather(1, a)
        ratio = torch.exp(torch.log(pi_a) - torch.log(prob_a))
        surr = torch.min(ratio * adv, torch.clamp(ratio, 0.9, 1.1) * adv)
        loss = -surr + F.smooth_l1_loss(ppo.v(s), td_target.detach())
        opt.zero_grad()
        loss.mean().backward()
        opt.step()
        print(f"it {it} epoch {k}: steps {len(s)} loss {loss.mean().item():.5f} "
              f"ratio [{ratio.min().item():.4f}, {ratio.max().item():.4f}] adv0 {adv[0, 0].item():.5f}")

print("== V-trace (0-d thresholds, tensors mixed with ndarrays)")
vt = PolicyValue()
numpy_weights(vt, 2)
opt = optim.Adam(vt.parameters(), lr=5e-3)
rho_bar, c_bar = torch.tensor(1.0), torch.tensor(1.0)
for it in range(2):
    s, a, r, s2, mask, mu_a = batch(rollout(env, vt, 15))
    with torch.no_grad():
        pi_a = vt.pi(s, softmax_dim=1).gather(1, a) * torch.tensor(0.9 + 0.2 * (np.arange(len(s))[:, None] % 2))
        v, v2 = vt.v(s), vt.v(s2)
        ratio = torch.exp(torch.log(pi_a) - torch.log(mu_a))
        rhos = torch.min(rho_bar, ratio)
        cs = torch.min(c_bar, ratio).numpy()
        delta = rhos * (r + 0.98 * v2 * mask - v).numpy()
        acc, vs_minus_v = 0.0, [[0.0]]
        for i in range(len(delta) - 1, -1, -1):
            acc = 0.98 * cs[i][0] * acc + delta[i][0]
            vs_minus_v.append([acc])
        vs_minus_v.reverse()
        vs_minus_v = torch.tensor(vs_minus_v, dtype=torch.float)
        vs = vs_minus_v[:-1] + v.numpy()
        advantage = r + 0.98 * (vs_minus_v[1:] + v2.numpy()) - v.numpy()
    print("types", type(delta).__name__, type(cs).__name__, vs.dtype, advantage.dtype, rhos.dtype, tuple(vs.shape))
    pi_a = vt.pi(s, softmax_dim=1).gather(1, a)
    loss = -rhos * torch.log(pi_a) * advantage + F.smooth_l1_loss(vt.v(s), vs)
    opt.zero_grad()
    loss.mean().backward()
    opt.step()
    print(f"vtrace it {it}: loss {loss.mean().item():.5f} rhos mean {rhos.mean().item():.5f} vs[0] {vs[0, 0].item():.5f}")

print("== ACER (truncated importance weights, q_ret recursion)")
acer = PolicyValue(heads=("pi", "q"))
numpy_weights(acer, 3)
opt = optim.Adam(acer.parameters(), lr=2e-3)
for it in range(2):
    seq = rollout(env, acer, 10)
    s = torch.tensor(np.stack([t[0] for t in seq]), dtype=torch.float)
    a = torch.tensor([[t[1]] for t in seq])
    r = [t[2] for t in seq]
    behaviour = torch.tensor(np.stack([np.array([0.6, 0.4]) if i % 2 else np.array([0.3, 0.7])
                                       for i in range(len(seq))]), dtype=torch.float)
    done_mask = [0.0 if t[5] else 1.0 for t in seq]
    q = acer.v(s)
    q_a = q.gather(1, a)
    pi = acer.pi(s, softmax_dim=1)
    pi_a = pi.gather(1, a)
    v = (q * pi).sum(1).unsqueeze(1).detach()
    rho = pi.detach() / behaviour
    rho_a = rho.gather(1, a)
    rho_bar_a = rho_a.clamp(max=1.0)
    correction = (1 - 1.0 / rho).clamp(min=0)
    q_ret = v[-1] * done_mask[-1]
    q_ret_lst = []
    for i in reversed(range(len(r))):
        q_ret = r[i] + 0.98 * q_ret
        q_ret_lst.append(q_ret.item())
        q_ret = rho_bar_a[i] * (q_ret - q_a[i]) + v[i]
    q_ret_lst.reverse()
    q_ret = torch.tensor(q_ret_lst, dtype=torch.float).unsqueeze(1)
    loss1 = -rho_bar_a * torch.log(pi_a) * (q_ret - v)
    loss2 = -correction * pi.detach() * torch.log(pi) * (q.detach() - v)
    loss = loss1 + loss2.sum(1) + F.smooth_l1_loss(q_a, q_ret)
    opt.zero_grad()
    loss.mean().backward()
    opt.step()
    print(f"acer it {it}: loss shape {tuple(loss.shape)} mean {loss.mean().item():.5f} "
          f"q_ret[0] {q_ret[0, 0].item():.5f} correction>0 {int((correction > 0).sum())}")

print("== PPO-LSTM (hidden state carried, detached for the update)")


class RecurrentPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.lstm = nn.LSTM(16, 8)
        self.fc_pi = nn.Linear(8, 2)
        self.fc_v = nn.Linear(8, 1)

    def pi(self, x, hidden):
        x = F.relu(self.fc1(x)).view(-1, 1, 16)
        x, hidden = self.lstm(x, hidden)
        return F.softmax(self.fc_pi(x), dim=2), hidden

    def v(self, x, hidden):
        x = F.relu(self.fc1(x)).view(-1, 1, 16)
        x, _ = self.lstm(x, hidden)
        return self.fc_v(x)


rec = RecurrentPolicy()
numpy_weights(rec, 4)
opt = optim.Adam(rec.parameters(), lr=5e-3)
hidden = (torch.zeros([1, 1, 8]), torch.zeros([1, 1, 8]))
s_np, data, first_hidden = env.reset(), [], None
for t in range(12):
    prob, new_hidden = rec.pi(torch.from_numpy(s_np).float(), hidden)
    prob = prob.view(-1)
    a = choose(prob)
    s2, rwd, done = env.step(a)
    if first_hidden is None:
        first_hidden = hidden
    data.append((s_np, a, rwd / 100.0, s2, prob[a].item(), done))
    s_np, hidden = s2, new_hidden
    if done:
        break
s, a, r, s2, mask, prob_a = batch(data)
h0 = (first_hidden[0].detach(), first_hidden[1].detach())
print("hidden", tuple(hidden[0].shape), hidden[0].requires_grad, h0[0].requires_grad)
for k in range(2):
    v_prime = rec.v(s2, h0).squeeze(1)
    td_target = r + 0.98 * v_prime * mask
    v_s = rec.v(s, h0).squeeze(1)
    adv = gae((td_target - v_s).detach().numpy(), 0.98, 0.95)
    pi, _ = rec.pi(s, h0)
    pi_a = pi.squeeze(1).gather(1, a)
    ratio = torch.exp(torch.log(pi_a) - torch.log(prob_a))
    loss = -torch.min(ratio * adv, torch.clamp(ratio, 0.9, 1.1) * adv) + F.smooth_l1_loss(v_s, td_target.detach())
    opt.zero_grad()
    loss.mean().backward(retain_graph=True)
    opt.step()
    print(f"lstm epoch {k}: v_s {tuple(v_s.shape)} loss {loss.mean().item():.5f}")

print("== A3C gradient hand-off (global_param._grad = local_param.grad)")
global_model = PolicyValue()
numpy_weights(global_model, 5)
global_model.share_memory()
g_opt = optim.Adam(global_model.parameters(), lr=1e-2)
for worker in range(2):
    local = PolicyValue()
    local.load_state_dict(global_model.state_dict())
    data = rollout(Pole(10 + worker), local, 8)
    s, a, r, s2, mask, _ = batch(data)
    R = 0.0 if data[-1][5] else local.v(s2[-1]).item()
    targets = []
    for rew in [t[2] for t in data][::-1]:
        R = 0.98 * R + rew
        targets.append([R])
    targets.reverse()
    td_target = torch.tensor(targets)
    advantage = td_target - local.v(s)
    loss = -torch.log(local.pi(s, softmax_dim=1).gather(1, a)) * advantage.detach() \
        + F.smooth_l1_loss(local.v(s), td_target.detach())
    g_opt.zero_grad()
    loss.mean().backward()
    for gp, lp in zip(global_model.parameters(), local.parameters()):
        gp._grad = lp.grad
    print("worker", worker, "td_target", td_target.dtype, "grad shared", global_model.fc1.weight.grad is local.fc1.weight.grad)
    g_opt.step()
    print(f"  loss {loss.mean().item():.5f} global fc_v.bias {global_model.fc_v.bias.item():.5f}")
print("global grad norm", f"{torch.nn.utils.clip_grad_norm_(global_model.parameters(), 100.0).item():.5f}")
