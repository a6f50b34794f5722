"""Approximate Q-learning on CartPole, from yandexdataschool/Practical_RL week04_approx_rl/seminar_pytorch.ipynb.

Adapted: the notebook's blanks (network, epsilon-greedy action, TD loss with a where() on terminal states) filled with
the standard solution; gymnasium's CartPole replaced by a numpy stand-in with the same dynamics; starting weights
drawn from numpy so both libraries start equal; 4 epochs x 10 sessions.
"""
import math
import numpy as np
import torch
import torch.nn as nn

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


env = CartPole()
n_actions = env.n_actions
state_dim = (4,)
network = nn.Sequential()
network.add_module('layer1', nn.Linear(state_dim[0], 100))
network.add_module('relu1', nn.ReLU())
network.add_module('layer2', nn.Linear(100, 100))
network.add_module('relu2', nn.ReLU())
network.add_module('layer3', nn.Linear(100, n_actions))
init_from_numpy(network, 2)
def get_action(state, epsilon=0):
    state = torch.tensor(state[None], dtype=torch.float32)
    q_values = network(state).detach().numpy()
    if np.random.random() < epsilon:
        return int(np.random.choice(n_actions))
    return int(np.argmax(q_values))
s, _ = env.reset()
assert tuple(network(torch.tensor([s] * 3, dtype=torch.float32)).size()) == (3, n_actions)
assert isinstance(list(network.modules())[-1], nn.Linear)
assert isinstance(get_action(s), int)
def compute_td_loss(states, actions, rewards, next_states, is_done, gamma=0.99, check_shapes=False):
    states = torch.tensor(states, dtype=torch.float32)
    actions = torch.tensor(actions, dtype=torch.long)
    rewards = torch.tensor(rewards, dtype=torch.float32)
    next_states = torch.tensor(next_states, dtype=torch.float32)
    is_done = torch.tensor(is_done, dtype=torch.uint8)
    predicted_qvalues = network(states)
    predicted_qvalues_for_actions = predicted_qvalues[range(states.shape[0]), actions]
    predicted_next_qvalues = network(next_states)
    next_state_values = torch.max(predicted_next_qvalues, dim=-1)[0]
    assert next_state_values.dtype == torch.float32
    target_qvalues_for_actions = rewards + gamma * next_state_values
    target_qvalues_for_actions = torch.where(is_done.bool(), rewards, target_qvalues_for_actions)
    loss = torch.mean((predicted_qvalues_for_actions - target_qvalues_for_actions.detach()) ** 2)
    if check_shapes:
        assert predicted_next_qvalues.data.dim() == 2
        assert next_state_values.data.dim() == 1
        assert target_qvalues_for_actions.data.dim() == 1
    return loss
s, _ = env.reset()
a = int(np.random.randint(n_actions))
next_s, r, terminated, _, _ = env.step(a)
loss = compute_td_loss([s], [a], [r], [next_s], [terminated], check_shapes=True)
loss.backward()
assert len(loss.size()) == 0
assert np.any(next(network.parameters()).grad.detach().numpy() != 0)
print(loss.shape, loss.dtype)
opt = torch.optim.Adam(network.parameters(), lr=1e-4)
def generate_session(env, t_max=1000, epsilon=0, train=False):
    total_reward = 0
    s, _ = env.reset()
    for t in range(t_max):
        a = get_action(s, epsilon=epsilon)
        next_s, r, terminated, truncated, _ = env.step(a)
        if train:
            opt.zero_grad()
            compute_td_loss([s], [a], [r], [next_s], [terminated]).backward()
            opt.step()
        total_reward += r
        s = next_s
        if terminated or truncated:
            break
    return total_reward
epsilon = 0.5
for i in range(4):
    session_rewards = [generate_session(env, epsilon=epsilon, train=True) for _ in range(10)]
    print("layer3 bias", network.layer3.bias.detach().numpy().round(5))
    print("epoch #{}\tmean reward = {:.3f}\tepsilon = {:.3f}".format(i, np.mean(session_rewards), epsilon))
    epsilon *= 0.99
