"""pytorch/examples-style REINFORCE: Categorical policy, log_prob, discounted normalised returns."""
import random
from itertools import count

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

gamma = 0.99
seed = 543


class Corridor:
    """Walk right from cell 0 to cell 5 within 40 moves: -0.1 per move, +1 on arrival."""

    def reset(self, seed=None):
        self.pos, self.t = 0, 0
        return self._obs(), {}

    def _obs(self):
        return np.eye(6, dtype=np.float32)[self.pos]

    def step(self, action):
        self.t += 1
        self.pos = min(5, self.pos + 1) if action == 1 else max(0, self.pos - 1)
        terminated = self.pos == 5
        reward = 1.0 if terminated else -0.1
        truncated = self.t >= 40
        return self._obs(), reward, terminated, truncated, {}


class Policy(nn.Module):
    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(6, 32)
        self.dropout = nn.Dropout(p=0.1)
        self.affine2 = nn.Linear(32, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)


env = Corridor()
random.seed(seed)
torch.manual_seed(seed)
policy = Policy()
optimizer = optim.Adam(policy.parameters(), lr=2e-2)
eps = np.finfo(np.float32).eps.item()


def select_action(state):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = policy(state)
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()


def finish_episode():
    R = 0
    policy_loss = []
    returns = []
    for r in policy.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    optimizer.zero_grad()
    policy_loss = torch.cat(policy_loss).sum()
    policy_loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]


lengths = []
for i_episode in count(1):
    state, _ = env.reset(seed=seed)
    for t in range(1, 10000):
        action = select_action(state)
        state, reward, terminated, truncated, _ = env.step(action)
        policy.rewards.append(reward)
        if terminated or truncated:
            break
    lengths.append(t)
    finish_episode()
    if i_episode >= 60:
        break

print("episodes:", len(lengths))
print("early episodes are longer than late ones:", sum(lengths[:10]) > sum(lengths[-10:]))
print("solved (5 steps) by the end:", lengths[-1] <= 7)

probs = torch.tensor([[0.25, 0.75]])
m = Categorical(probs)
print(m.log_prob(torch.tensor([1])), m.entropy())
print(m.probs, m.sample().shape, m.sample((4,)).shape)
