"""REINFORCE on CartPole, from yandexdataschool/Practical_RL week06_policy_based/reinforce_pytorch.ipynb.

Adapted: the notebook's <YOUR CODE> blanks filled with the standard solution (softmax policy, discounted returns,
entropy-regularised policy-gradient loss, Adam step); gymnasium's CartPole replaced by a numpy stand-in with the
same dynamics; starting weights drawn from numpy so both libraries start equal; 3 iterations x 12 sessions.
"""
import math
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

np.random.seed(0)


class CartPole:
    """numpy stand-in for gymnasium's CartPole-v1 (same dynamics), seeded."""
    def __init__(self):
        self.n_actions = 2
        self.rng = np.random.RandomState(0)
    def reset(self):
        self.s = self.rng.uniform(-0.05, 0.05, 4)
        self.t = 0
        return self.s.astype('float32'), {}
    def step(self, a):
        x, xd, th, thd = self.s
        f = 10.0 if a == 1 else -10.0
        ct, st = math.cos(th), math.sin(th)
        temp = (f + 0.05 * thd * thd * st) / 1.1
        tha = (9.8 * st - ct * temp) / (0.5 * (4.0 / 3.0 - 0.1 * ct * ct / 1.1))
        xa = temp - 0.05 * tha * ct / 1.1
        self.s = np.array([x + 0.02 * xd, xd + 0.02 * xa, th + 0.02 * thd, thd + 0.02 * tha])
        self.t += 1
        terminated = bool(abs(self.s[0]) > 2.4 or abs(self.s[2]) > 0.2095)
        return self.s.astype('float32'), 1.0, terminated, self.t >= 200, {}


def init_from_numpy(module, seed):
    """Starting weights from numpy, so both libraries start from the same point."""
    rs = np.random.RandomState(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.tensor(rs.randn(*p.shape) * 0.1, dtype=torch.float32))


import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
env = CartPole()
n_actions = env.n_actions
state_dim = (4,)
model = nn.Sequential(
    nn.Linear(state_dim[0], 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, n_actions)
)
init_from_numpy(model, 1)


def predict_probs(states):
    states = torch.tensor(states, dtype=torch.float32)
    with torch.no_grad():
        logits = model(states)
    return F.softmax(logits, dim=-1).numpy()
test_states = np.array([env.reset()[0] for _ in range(5)])
test_probas = predict_probs(test_states)
assert isinstance(test_probas, np.ndarray), "you must return np array and not %s" % type(test_probas)
assert tuple(test_probas.shape) == (test_states.shape[0], n_actions)
assert np.allclose(np.sum(test_probas, axis=1), 1), "probabilities do not sum to 1"
print(test_probas.dtype, test_probas.shape)
def generate_session(env, t_max=1000):
    states, actions, rewards = [], [], []
    s = env.reset()[0]
    for t in range(t_max):
        action_probs = predict_probs(np.array([s]))[0]
        a = np.random.choice(n_actions, p=action_probs)
        new_s, r, terminated, truncated, info = env.step(a)
        states.append(s); actions.append(a); rewards.append(r)
        s = new_s
        if terminated or truncated:
            break
    return states, actions, rewards
states, actions, rewards = generate_session(env)
def get_cumulative_rewards(rewards, gamma=0.99):
    G = [0.0] * len(rewards)
    acc = 0.0
    for i in reversed(range(len(rewards))):
        acc = rewards[i] + gamma * acc
        G[i] = acc
    return G
assert len(get_cumulative_rewards(list(range(100)))) == 100
assert np.allclose(get_cumulative_rewards([0, 0, 1, 0, 0, 1, 0], gamma=0.9), [1.40049, 1.5561, 1.729, 0.81, 0.9, 1.0, 0.0])
print("looks good!")
optimizer = torch.optim.Adam(model.parameters(), 1e-3)
def train_on_session(states, actions, rewards, gamma=0.99, entropy_coef=1e-2):
    states = torch.tensor(states, dtype=torch.float32)
    actions = torch.tensor(actions, dtype=torch.int64)
    cumulative_returns = np.array(get_cumulative_rewards(rewards, gamma))
    cumulative_returns = torch.tensor(cumulative_returns, dtype=torch.float32)
    logits = model(states)
    probs = nn.functional.softmax(logits, -1)
    log_probs = nn.functional.log_softmax(logits, -1)
    assert all(isinstance(v, torch.Tensor) for v in [logits, probs, log_probs])
    log_probs_for_actions = torch.sum(log_probs * F.one_hot(actions, n_actions), dim=1)
    entropy = -(probs * log_probs).sum(-1).mean()
    loss = -(log_probs_for_actions * cumulative_returns).mean() - entropy_coef * entropy
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return np.sum(rewards)
for i in range(3):
    rewards = [train_on_session(*generate_session(env)) for _ in range(12)]
    print("first-layer weight norm %.5f" % model[0].weight.norm().item())
    print("mean reward: %.3f" % (np.mean(rewards)))
