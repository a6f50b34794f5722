"""Actor-critic (and its REINFORCE variant) on CartPole, from
rohan1198/Reinforcement-Learning-Policy-Gradient-Methods 02_Actor_Critic (lib/network.py, lib/agent.py,
lib/loss.py, main.py) and 01_REINFORCE/lib/loss.py, with a TRPO-style natural-gradient step added on
the same policy (flat_grad of the log-likelihood with create_graph, a Fisher-vector product,
conjugate gradient, parameters_to_vector / vector_to_parameters), as TRPO tutorials write it.

Adapted: gym's CartPole-v0 replaced by a numpy stand-in with the same dynamics; weights drawn from
numpy and actions sampled with numpy from the policy's probabilities, so both libraries follow the
same trajectory; tensorboard and checkpoint saving left out; 6 episodes, hidden layers of 64.
"""
import math
from collections import namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

rng = np.random.RandomState(0)


class CartPole:
    """numpy stand-in for gym's CartPole-v0 (Euler dynamics, 200 steps), seeded."""
    def __init__(self, seed):
        self.rng = np.random.RandomState(seed)

    def reset(self):
        self.s = self.rng.uniform(-0.05, 0.05, 4)
        self.t = 0
        return self.s.astype(np.float32)

    def step(self, a):
        x, xd, th, thd = self.s
        force = 10.0 if a == 1 else -10.0
        ct, st = math.cos(th), math.sin(th)
        temp = (force + 0.05 * thd * thd * st) / 1.1
        tha = (9.8 * st - ct * temp) / (0.5 * (4.0 / 3.0 - 0.1 * ct * ct / 1.1))
        xa = temp - 0.05 * tha * ct / 1.1
        self.s = np.array([x + 0.02 * xd, xd + 0.02 * xa, th + 0.02 * thd, thd + 0.02 * tha])
        self.t += 1
        done = bool(abs(self.s[0]) > 2.4 or abs(self.s[2]) > 12 * 2 * math.pi / 360) or self.t >= 200
        return self.s.astype(np.float32), 1.0, done, {}


class ActorCriticNet(nn.Module):
    def __init__(self, input_shape, n_actions):
        super(ActorCriticNet, self).__init__()
        self.fc_a1 = nn.Linear(input_shape[0], 64)
        self.fc_a2 = nn.Linear(64, n_actions)
        self.fc_v1 = nn.Linear(input_shape[0], 64)
        self.fc_v2 = nn.Linear(64, 1)
        self.saved_actions = []
        self.rewards = []

    def forward(self, dims):
        adv = F.relu(self.fc_a1(dims))
        adv = self.fc_a2(adv)
        val = F.relu(self.fc_v1(dims))
        val = self.fc_v2(val)
        return torch.softmax(adv, dim=-1), val


def init_from_numpy(net):
    with torch.no_grad():
        for p in net.parameters():
            bound = 1.0 / math.sqrt(p.shape[-1] if p.dim() > 1 else 64)
            p.copy_(torch.tensor(rng.uniform(-bound, bound, tuple(p.shape)), dtype=torch.float32))


SavedAction = namedtuple("SavedAction", field_names=["log_prob", "value"])


def select_action(net, state):
    state = torch.from_numpy(state).float()
    probs, state_value = net(state)
    m = Categorical(probs)
    p = probs.detach().double().numpy()
    action = torch.tensor(rng.choice(len(p), p=p / p.sum()))   # (the script calls m.sample())
    net.saved_actions.append(SavedAction(m.log_prob(action), state_value))
    return action.item()


def finish_episode(net, gamma):
    R = 0
    policy_loss, value_loss, returns = [], [], []
    for r in net.rewards[::1]:
        R = R * gamma + r
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + 1e-5)
    for (log_prob, value), R in zip(net.saved_actions, returns):
        advantage = R - value.item()
        policy_loss.append(-log_prob * advantage)
        value_loss.append(F.smooth_l1_loss(value, torch.tensor([R])))
    return torch.stack(policy_loss).sum() + torch.stack(value_loss).sum()


def flat_grad(y, params, **kwargs):
    grads = torch.autograd.grad(y, params, **kwargs)
    return torch.cat([g.view(-1) for g in grads])


def conjugate_gradient(Avp, b, iters=10, tol=1e-10):
    x = torch.zeros_like(b)
    r, p = b.clone(), b.clone()
    rr = torch.dot(r, r)
    for _ in range(iters):
        Ap = Avp(p)
        alpha = rr / torch.dot(p, Ap)
        x += alpha * p
        r -= alpha * Ap
        new_rr = torch.dot(r, r)
        if new_rr < tol:
            break
        p = r + new_rr / rr * p
        rr = new_rr
    return x


env = CartPole(1)
net = ActorCriticNet((4,), 2)
init_from_numpy(net)
print(net)
optimizer = optim.Adam(net.parameters(), lr=0.001)
running_reward = 10
best_mean_reward = None
for i in range(1, 7):
    state = env.reset()
    ep_reward = 0
    for t in range(1, 10000):
        action = select_action(net, state)
        state, reward, done, _ = env.step(action)
        net.rewards.append(reward)
        ep_reward += reward
        if done:
            break
    running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
    optimizer.zero_grad()
    loss = finish_episode(net, 0.99)
    loss.backward()
    optimizer.step()
    del net.rewards[:]
    del net.saved_actions[:]
    print(f"episode {i} | Last reward: {ep_reward} | Average Reward: {running_reward:.4f} | loss {loss.item():.4f}")
    if best_mean_reward is None or best_mean_reward < running_reward:
        if best_mean_reward is not None:
            print(f"Best mean reward updated {best_mean_reward:.3f} -> {running_reward:.3f} model saved!")
        best_mean_reward = running_reward

# A natural-gradient (TRPO) step on the actor, on states of one more episode.
actor = [net.fc_a1.weight, net.fc_a1.bias, net.fc_a2.weight, net.fc_a2.bias]
states, actions = [], []
state = env.reset()
for t in range(40):
    with torch.no_grad():
        probs, _ = net(torch.from_numpy(state))
    p = probs.double().numpy()
    a = int(rng.choice(2, p=p / p.sum()))
    states.append(state)
    actions.append(a)
    state, _, done, _ = env.step(a)
    if done:
        state = env.reset()
states = torch.tensor(np.array(states))
actions = torch.tensor(actions)
advantages = torch.linspace(-1.0, 1.0, len(actions))
probs, _ = net(states)
dist = Categorical(probs)
old_log_probs = dist.log_prob(actions).detach()
surrogate = (torch.exp(dist.log_prob(actions) - old_log_probs) * advantages).mean()
g = flat_grad(surrogate, actor, retain_graph=True)
print("surrogate", round(surrogate.item(), 6), "grad norm", round(g.norm().item(), 6), g.shape)
old_probs = probs.detach()


def fisher_vector_product(v):
    new_probs, _ = net(states)
    kl = (old_probs * (torch.log(old_probs) - torch.log(new_probs))).sum(-1).mean()
    grads = flat_grad(kl, actor, create_graph=True)
    return flat_grad(grads @ v, actor) + 0.1 * v


step_dir = conjugate_gradient(fisher_vector_product, g)
shs = 0.5 * (step_dir @ fisher_vector_product(step_dir))
step = step_dir * torch.sqrt(2 * 0.01 / shs)
print("step norm", round(step.norm().item(), 5), "shs", round(shs.item(), 6))
old_params = nn.utils.parameters_to_vector(actor)
nn.utils.vector_to_parameters(old_params + step, actor)
with torch.no_grad():
    new_probs, _ = net(states)
    kl = (old_probs * (torch.log(old_probs) - torch.log(new_probs))).sum(-1).mean()
    new_surrogate = (new_probs.gather(1, actions.unsqueeze(1)).squeeze(1) / old_probs.gather(1, actions.unsqueeze(1)).squeeze(1) * advantages).mean()
print("kl after step", round(kl.item(), 5), "surrogate after", round(new_surrogate.item(), 5))
print("returns grid", torch.arange(-1, 1, 0.1))
