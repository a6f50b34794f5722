"""pytorch/examples-style actor-critic: shared body, action and value heads, SavedAction namedtuple."""
from collections import namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

SavedAction = namedtuple('SavedAction', ['log_prob', 'value'])
torch.manual_seed(543)
gamma = 0.9


class Bandit:
    """Two states; the right action is the state's index. One step per episode... chained 8 times."""

    def __init__(self):
        self.rng = np.random.RandomState(0)

    def reset(self):
        self.t = 0
        self.s = self.rng.randint(2)
        return np.array([1.0 - self.s, float(self.s)], dtype=np.float32)

    def step(self, a):
        r = 1.0 if a == self.s else 0.0
        self.t += 1
        self.s = self.rng.randint(2)
        return np.array([1.0 - self.s, float(self.s)], dtype=np.float32), r, self.t >= 8


class Policy(nn.Module):
    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(2, 32)
        self.action_head = nn.Linear(32, 2)
        self.value_head = nn.Linear(32, 1)
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        action_prob = F.softmax(self.action_head(x), dim=-1)
        state_values = self.value_head(x)
        return action_prob, state_values


model = Policy()
optimizer = optim.Adam(model.parameters(), lr=3e-2)
eps = np.finfo(np.float32).eps.item()


def select_action(state):
    state = torch.from_numpy(state).float()
    probs, state_value = model(state)
    m = Categorical(probs)
    action = m.sample()
    model.saved_actions.append(SavedAction(m.log_prob(action), state_value))
    return action.item()


def finish_episode():
    R = 0
    saved_actions = model.saved_actions
    policy_losses = []
    value_losses = []
    returns = []
    for r in model.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for (log_prob, value), R in zip(saved_actions, returns):
        advantage = R - value.item()
        policy_losses.append(-log_prob * advantage)
        value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))
    optimizer.zero_grad()
    loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
    loss.backward()
    optimizer.step()
    del model.rewards[:]
    del model.saved_actions[:]


env = Bandit()
running_reward = 0
totals = []
for i_episode in range(150):
    state = env.reset()
    ep_reward = 0
    done = False
    while not done:
        action = select_action(state)
        state, reward, done = env.step(action)
        model.rewards.append(reward)
        ep_reward += reward
    running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
    totals.append(ep_reward)
    if sum(model.rewards) in (0, 8):
        model.rewards[-1] += 1e-3  # keep std of returns non-zero
    finish_episode()

print("mean reward, first 20 episodes < last 20:", sum(totals[:20]) < sum(totals[-20:]))
print("learned (last 20 average >= 7):", sum(totals[-20:]) / 20 >= 7)
with torch.no_grad():
    probs, values = model(torch.eye(2))
print(probs.argmax(dim=1).tolist(), values.shape)
