"""The training-loop plumbing of vwxyzjn/cleanrl's single-file agents (ppo_continuous_action.py,
c51.py, pqn.py), written afresh on small numpy vector environments.

Exercises: preallocated rollout storage written row by row (obs[step] = next_obs, values[step] =
value.flatten()) with torch.Tensor(ndarray) conversions and a float64 reward array; a learned
log-std parameter broadcast with expand_as into a Normal whose log_prob / entropy are summed over
the action dim; GAE in torch where lastgaelam becomes a (1, n_envs) tensor through broadcasting;
minibatches indexed by numpy index arrays; PPO's clipped value loss, approx_kl and clip fraction;
explained variance with numpy; C51's categorical projection with floor / ceil, (l == u).float()
and per-row index_add_ into a zeros_like target; PQN's Q(lambda) targets, epsilon-greedy through
torch.where on an int64 random draw, LayerNorm, and RAdam with a hand-annealed learning rate.
Weights and all randomness come from numpy, so every printed number is deterministic.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

RNG = np.random.RandomState(0)


def numpy_init(module, gain=1.0):
    """Orthogonal weights from numpy's QR and zero biases (cleanrl's layer_init, minus torch's RNG)."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            rows, cols = m.weight.shape
            a = RNG.standard_normal((max(rows, cols), min(rows, cols)))
            q, r = np.linalg.qr(a)
            q = q * np.sign(np.diag(r))
            q = q if rows >= cols else q.T
            with torch.no_grad():
                m.weight.copy_(torch.from_numpy(gain * q[:rows, :cols]).float())
                m.bias.zero_()
    return module


class PendulumVec:
    """n independent pendulums; observations (n, 3) float32, rewards float64, as gymnasium returns."""

    def __init__(self, n):
        self.n = n
        self.th = RNG.uniform(-math.pi, math.pi, n)
        self.thd = RNG.uniform(-1, 1, n)
        self.t = 0

    def obs(self):
        return np.stack([np.cos(self.th), np.sin(self.th), self.thd], 1).astype(np.float32)

    def step(self, u):
        u = np.clip(u[:, 0], -2.0, 2.0)
        cost = (((self.th + np.pi) % (2 * np.pi)) - np.pi) ** 2 + 0.1 * self.thd ** 2 + 0.001 * u ** 2
        self.thd = np.clip(self.thd + (3 * 10.0 / 2 * np.sin(self.th) + 3.0 * u) * 0.05, -8, 8)
        self.th = self.th + self.thd * 0.05
        self.t += 1
        done = np.full(self.n, self.t % 12 == 0)
        return self.obs(), -cost, done


print("== PPO, continuous actions")


class Agent(nn.Module):
    def __init__(self):
        super().__init__()
        self.critic = numpy_init(nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1)))
        self.actor_mean = numpy_init(nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1)), 0.5)
        self.actor_logstd = nn.Parameter(torch.zeros(1, 1))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x)
        std = torch.exp(self.actor_logstd.expand_as(mean))
        probs = torch.distributions.Normal(mean, std)
        if action is None:
            action = mean + std * torch.from_numpy(RNG.standard_normal(tuple(mean.shape)).astype(np.float32))
        return action, probs.log_prob(action).sum(1), probs.entropy().sum(1), self.critic(x)


num_envs, num_steps, gamma, lam = 2, 16, 0.99, 0.95
envs = PendulumVec(num_envs)
agent = Agent()
optimizer = optim.Adam(agent.parameters(), lr=3e-3, eps=1e-5)
obs = torch.zeros((num_steps, num_envs, 3))
actions = torch.zeros((num_steps, num_envs, 1))
logprobs = torch.zeros((num_steps, num_envs))
rewards = torch.zeros((num_steps, num_envs))
dones = torch.zeros((num_steps, num_envs))
values = torch.zeros((num_steps, num_envs))
next_obs = torch.Tensor(envs.obs())
next_done = torch.zeros(num_envs)
for iteration in range(1, 3):
    optimizer.param_groups[0]["lr"] = (1.0 - (iteration - 1.0) / 2) * 3e-3
    for step in range(num_steps):
        obs[step] = next_obs
        dones[step] = next_done
        with torch.no_grad():
            action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[step] = value.flatten()
        actions[step] = action
        logprobs[step] = logprob
        o, reward, done = envs.step(action.cpu().numpy())
        rewards[step] = torch.tensor(reward).view(-1)
        next_obs, next_done = torch.Tensor(o), torch.Tensor(done)
    print("storage", obs.dtype, rewards.dtype, next_done.dtype, torch.tensor(reward).dtype,
          f"reward sum {rewards.sum().item():.4f}")
    with torch.no_grad():
        next_value = agent.get_value(next_obs).reshape(1, -1)
        advantages = torch.zeros_like(rewards)
        lastgaelam = 0
        for t in reversed(range(num_steps)):
            if t == num_steps - 1:
                nextnonterminal, nextvalues = 1.0 - next_done, next_value
            else:
                nextnonterminal, nextvalues = 1.0 - dones[t + 1], values[t + 1]
            delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
            advantages[t] = lastgaelam = delta + gamma * lam * nextnonterminal * lastgaelam
        returns = advantages + values
    print("lastgaelam", tuple(lastgaelam.shape), "returns", tuple(returns.shape), f"{returns.mean().item():.4f}")
    b_obs, b_logprobs, b_actions = obs.reshape((-1, 3)), logprobs.reshape(-1), actions.reshape((-1, 1))
    b_adv, b_ret, b_val = advantages.reshape(-1), returns.reshape(-1), values.reshape(-1)
    b_inds = np.arange(num_envs * num_steps)
    clipfracs = []
    for epoch in range(2):
        RNG.shuffle(b_inds)
        for start in range(0, len(b_inds), 8):
            mb = b_inds[start:start + 8]
            _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_actions[mb])
            logratio = newlogprob - b_logprobs[mb]
            ratio = logratio.exp()
            with torch.no_grad():
                approx_kl = ((ratio - 1) - logratio).mean()
                clipfracs += [((ratio - 1.0).abs() > 0.2).float().mean().item()]
            mb_adv = (b_adv[mb] - b_adv[mb].mean()) / (b_adv[mb].std() + 1e-8)
            pg_loss = torch.max(-mb_adv * ratio, -mb_adv * torch.clamp(ratio, 0.8, 1.2)).mean()
            newvalue = newvalue.view(-1)
            v_clipped = b_val[mb] + torch.clamp(newvalue - b_val[mb], -0.2, 0.2)
            v_loss = 0.5 * torch.max((newvalue - b_ret[mb]) ** 2, (v_clipped - b_ret[mb]) ** 2).mean()
            loss = pg_loss - 0.01 * entropy.mean() + 0.5 * v_loss
            optimizer.zero_grad()
            loss.backward()
            gn = nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
            optimizer.step()
    y_pred, y_true = b_val.cpu().numpy(), b_ret.cpu().numpy()
    var_y = np.var(y_true)
    explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
    print(f"iter {iteration}: lr {optimizer.param_groups[0]['lr']:.5f} v_loss {v_loss.item():.4f} "
          f"pg_loss {pg_loss.item():.5f} kl {approx_kl.item():.6f} clipfrac {np.mean(clipfracs):.4f} "
          f"grad norm {gn.item():.4f} explained_var {explained_var:.4f} logstd {agent.actor_logstd.item():.5f}")

print("== C51 projection")
n_atoms, v_min, v_max = 11, -10.0, 10.0


class C51(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("atoms", torch.linspace(v_min, v_max, steps=n_atoms))
        self.network = numpy_init(nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 2 * n_atoms)))

    def get_action(self, x, action=None):
        pmfs = torch.softmax(self.network(x).view(len(x), 2, n_atoms), dim=2)
        q_values = (pmfs * self.atoms).sum(2)
        if action is None:
            action = torch.argmax(q_values, 1)
        return action, pmfs[torch.arange(len(x)), action]


q_network, target_network = C51(), C51()
print(target_network.load_state_dict(q_network.state_dict()))
print("buffers", [n for n, _ in q_network.named_buffers()], q_network.atoms[1] - q_network.atoms[0])
c51_opt = optim.Adam(q_network.parameters(), lr=1e-3, eps=0.01 / 8)
for it in range(3):
    o = torch.from_numpy(RNG.standard_normal((8, 3)).astype(np.float32))
    o2 = torch.from_numpy(RNG.standard_normal((8, 3)).astype(np.float32))
    r = torch.from_numpy(RNG.uniform(-2, 2, (8, 1)).astype(np.float32))
    d = torch.from_numpy((RNG.uniform(size=(8, 1)) < 0.25).astype(np.float32))
    a = torch.from_numpy(RNG.randint(0, 2, (8, 1)))
    with torch.no_grad():
        _, next_pmfs = target_network.get_action(o2)
        next_atoms = r + 0.9 * target_network.atoms * (1 - d)
        delta_z = target_network.atoms[1] - target_network.atoms[0]
        tz = next_atoms.clamp(v_min, v_max)
        b = (tz - v_min) / delta_z
        l = b.floor().clamp(0, n_atoms - 1)
        u = b.ceil().clamp(0, n_atoms - 1)
        d_m_l = (u + (l == u).float() - b) * next_pmfs
        d_m_u = (b - l) * next_pmfs
        target_pmfs = torch.zeros_like(next_pmfs)
        for i in range(target_pmfs.size(0)):
            target_pmfs[i].index_add_(0, l[i].long(), d_m_l[i])
            target_pmfs[i].index_add_(0, u[i].long(), d_m_u[i])
    _, old_pmfs = q_network.get_action(o, a.flatten())
    loss = (-(target_pmfs * old_pmfs.clamp(min=1e-5, max=1 - 1e-5).log()).sum(-1)).mean()
    c51_opt.zero_grad()
    loss.backward()
    c51_opt.step()
    print(f"c51 {it}: mass {target_pmfs.sum(1).min().item():.5f}..{target_pmfs.sum(1).max().item():.5f} "
          f"exact hits {int((l == u).sum())} loss {loss.item():.5f} q {(old_pmfs * q_network.atoms).sum(1).mean().item():.5f}")
    if it == 1:
        target_network.load_state_dict(q_network.state_dict())

print("== PQN, Q(lambda) targets and epsilon-greedy through torch.where")
pqn = numpy_init(nn.Sequential(nn.Linear(3, 16), nn.LayerNorm(16), nn.ReLU(), nn.Linear(16, 2)))
pqn_opt = optim.RAdam(pqn.parameters(), lr=2e-3)
n_envs, n_steps = 3, 6
pobs = torch.zeros((n_steps, n_envs, 3))
pact = torch.zeros((n_steps, n_envs))
prew = torch.zeros((n_steps, n_envs))
pdone = torch.zeros((n_steps, n_envs))
pval = torch.zeros((n_steps, n_envs))
envs = PendulumVec(n_envs)
next_obs, next_done = torch.Tensor(envs.obs()), torch.zeros(n_envs)
for step in range(n_steps):
    pobs[step], pdone[step] = next_obs, next_done
    epsilon = max(1.0 - step / 4, 0.05)
    random_actions = torch.from_numpy(RNG.randint(0, 2, (n_envs,)))
    with torch.no_grad():
        q_values = pqn(next_obs)
        max_actions = torch.argmax(q_values, dim=1)
        pval[step] = q_values[torch.arange(n_envs), max_actions].flatten()
    explore = torch.from_numpy(RNG.uniform(size=n_envs)).float() < epsilon
    action = torch.where(explore, random_actions, max_actions)
    pact[step] = action
    o, reward, done = envs.step(np.where(action.numpy()[:, None] == 1, 1.0, -1.0))
    prew[step] = torch.tensor(reward).view(-1)
    next_obs, next_done = torch.Tensor(o), torch.Tensor(done)
print("actions", pact.dtype, action.dtype, explore.dtype, pact[:, 0].tolist())
with torch.no_grad():
    returns = torch.zeros_like(prew)
    for t in reversed(range(n_steps)):
        if t == n_steps - 1:
            next_value, _ = torch.max(pqn(next_obs), dim=-1)
            returns[t] = prew[t] + 0.99 * next_value * (1.0 - next_done)
        else:
            returns[t] = prew[t] + 0.99 * (0.65 * returns[t + 1] + 0.35 * pval[t + 1]) * (1.0 - pdone[t + 1])
print("q(lambda) returns", f"{returns.mean().item():.4f}", tuple(returns.shape))
b_obs, b_act, b_ret = pobs.reshape((-1, 3)), pact.reshape(-1), returns.reshape(-1)
inds = np.arange(n_envs * n_steps)
for epoch in range(2):
    RNG.shuffle(inds)
    for start in range(0, len(inds), 6):
        mb = inds[start:start + 6]
        old_val = pqn(b_obs[mb]).gather(1, b_act[mb].unsqueeze(-1).long()).squeeze()
        loss = F.mse_loss(b_ret[mb], old_val)
        pqn_opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(pqn.parameters(), 10.0)
        pqn_opt.step()
    print(f"pqn epoch {epoch}: td loss {loss.item():.4f} q {old_val.mean().item():.4f}")
