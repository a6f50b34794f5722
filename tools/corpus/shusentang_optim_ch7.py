"""Chapter 7 (optimisation) of ShusenTang/Dive-into-DL-PyTorch, adapted: the 2-D trajectories of
gradient descent, momentum, AdaGrad, RMSProp, AdaDelta and Adam written by hand, then the same
algorithms trained on a small linear-regression problem both by hand and with torch.optim.
The airfoil data set is replaced by a synthetic standardised one built with numpy; minibatches are
taken in order so that nothing depends on a random stream."""
import math

import numpy as np
import torch
from torch import nn


def f_2d(x1, x2):
    return 0.1 * x1 ** 2 + 2 * x2 ** 2


def trace_2d(step, steps=20):
    x1, x2, s1, s2 = -5.0, -2.0, 0.0, 0.0
    out = [(x1, x2)]
    for _ in range(steps):
        x1, x2, s1, s2 = step(x1, x2, s1, s2)
        out.append((x1, x2))
    return out


eta, gamma = 0.4, 0.5


def gd_2d(x1, x2, s1, s2):
    return x1 - eta * 0.2 * x1, x2 - eta * 4 * x2, 0, 0


def momentum_2d(x1, x2, v1, v2):
    v1 = gamma * v1 + eta * 0.2 * x1
    v2 = gamma * v2 + eta * 4 * x2
    return x1 - v1, x2 - v2, v1, v2


def adagrad_2d(x1, x2, s1, s2):
    g1, g2, eps = 0.2 * x1, 4 * x2, 1e-6
    s1 += g1 ** 2
    s2 += g2 ** 2
    return x1 - eta / math.sqrt(s1 + eps) * g1, x2 - eta / math.sqrt(s2 + eps) * g2, s1, s2


for name, step in [("gd", gd_2d), ("momentum", momentum_2d), ("adagrad", adagrad_2d)]:
    res = trace_2d(step)
    print(name, "epoch 20, x1 %.6f, x2 %.6f" % res[-1], "f %.6f" % f_2d(*res[-1]))

# Same 2-D problem through autograd, as a tensor, to check the hand-written gradients.
x = torch.tensor([-5.0, -2.0], requires_grad=True)
f_2d(x[0], x[1]).backward()
print("autograd gradient at start", x.grad)

rs = np.random.RandomState(0)
raw = rs.standard_normal((150, 5)) @ rs.standard_normal((5, 6))
raw = (raw - raw.mean(axis=0)) / raw.std(axis=0)
features = torch.tensor(raw[:, :-1], dtype=torch.float32)
labels = torch.tensor(raw[:, -1], dtype=torch.float32)
print(features.shape, labels.shape, features.dtype)
w0 = rs.normal(0, 0.01, size=(features.shape[1], 1)).astype(np.float32)


def linreg(X, w, b):
    return torch.mm(X, w) + b


def squared_loss(y_hat, y):
    return ((y_hat - y.view(y_hat.size())) ** 2) / 2


def init_momentum_states():
    return (torch.zeros((features.shape[1], 1)), torch.zeros(1))


def sgd_momentum(params, states, hp):
    for p, v in zip(params, states):
        v.data = hp['momentum'] * v.data + hp['lr'] * p.grad.data
        p.data -= v.data


def init_adagrad_states():
    return init_momentum_states()


def adagrad(params, states, hp):
    for p, s in zip(params, states):
        s.data += p.grad.data ** 2
        p.data -= hp['lr'] * p.grad.data / torch.sqrt(s + 1e-6)


def init_rmsprop_states():
    return init_momentum_states()


def rmsprop(params, states, hp):
    for p, s in zip(params, states):
        s.data = hp['gamma'] * s.data + (1 - hp['gamma']) * p.grad.data ** 2
        p.data -= hp['lr'] * p.grad.data / torch.sqrt(s + 1e-6)


def init_adadelta_states():
    return [(torch.zeros((features.shape[1], 1)), torch.zeros((features.shape[1], 1))),
            (torch.zeros(1), torch.zeros(1))]


def adadelta(params, states, hp):
    rho, eps = hp['rho'], 1e-5
    for p, (s, delta) in zip(params, states):
        s[:] = rho * s + (1 - rho) * (p.grad.data ** 2)
        g = p.grad.data * torch.sqrt((delta + eps) / (s + eps))
        p.data -= g
        delta[:] = rho * delta + (1 - rho) * g * g


def init_adam_states():
    return [(torch.zeros((features.shape[1], 1)), torch.zeros((features.shape[1], 1))),
            (torch.zeros(1), torch.zeros(1))]


def adam(params, states, hp):
    beta1, beta2, eps = 0.9, 0.999, 1e-6
    for p, (v, s) in zip(params, states):
        v[:] = beta1 * v + (1 - beta1) * p.grad.data
        s[:] = beta2 * s + (1 - beta2) * p.grad.data ** 2
        v_hat = v / (1 - beta1 ** hp['t'])
        s_hat = s / (1 - beta2 ** hp['t'])
        p.data -= hp['lr'] * v_hat / (torch.sqrt(s_hat) + eps)
    hp['t'] += 1


def batches(batch_size):
    for i in range(0, features.shape[0], batch_size):
        yield features[i:i + batch_size], labels[i:i + batch_size]


def train_scratch(trainer, states, hp, batch_size=10, num_epochs=2):
    w = torch.nn.Parameter(torch.from_numpy(w0.copy()), requires_grad=True)
    b = torch.nn.Parameter(torch.zeros(1, dtype=torch.float32), requires_grad=True)

    def eval_loss():
        return squared_loss(linreg(features, w, b), labels).mean().item()

    ls = [eval_loss()]
    for _ in range(num_epochs):
        for batch_i, (X, y) in enumerate(batches(batch_size)):
            l = squared_loss(linreg(X, w, b), y).mean()
            if w.grad is not None:
                w.grad.data.zero_()
                b.grad.data.zero_()
            l.backward()
            trainer([w, b], states, hp)
            if (batch_i + 1) * batch_size % 50 == 0:
                ls.append(eval_loss())
    return ls, w.detach(), b.detach()


def train_torch(optimizer_fn, hp, batch_size=10, num_epochs=2):
    net = nn.Sequential(nn.Linear(features.shape[-1], 1))
    with torch.no_grad():
        net[0].weight.copy_(torch.from_numpy(w0.T.copy()))
        net[0].bias.zero_()
    loss = nn.MSELoss()
    optimizer = optimizer_fn(net.parameters(), **hp)

    def eval_loss():
        return loss(net(features).view(-1), labels).item() / 2

    ls = [eval_loss()]
    for _ in range(num_epochs):
        for batch_i, (X, y) in enumerate(batches(batch_size)):
            l = loss(net(X).view(-1), y) / 2
            optimizer.zero_grad()
            l.backward()
            optimizer.step()
            if (batch_i + 1) * batch_size % 50 == 0:
                ls.append(eval_loss())
    return ls, net[0].weight.detach().t(), net[0].bias.detach(), optimizer


cases = [
    ("momentum", sgd_momentum, init_momentum_states, {'lr': 0.02, 'momentum': 0.5},
     torch.optim.SGD, {'lr': 0.02, 'momentum': 0.5}),
    ("adagrad", adagrad, init_adagrad_states, {'lr': 0.1},
     torch.optim.Adagrad, {'lr': 0.1}),
    ("rmsprop", rmsprop, init_rmsprop_states, {'lr': 0.01, 'gamma': 0.9},
     torch.optim.RMSprop, {'lr': 0.01, 'alpha': 0.9}),
    ("adadelta", adadelta, init_adadelta_states, {'rho': 0.9},
     torch.optim.Adadelta, {'rho': 0.9}),
    ("adam", adam, init_adam_states, {'lr': 0.01, 't': 1},
     torch.optim.Adam, {'lr': 0.01}),
]
for name, trainer, init_states, hp, opt_fn, opt_hp in cases:
    ls, w, b = train_scratch(trainer, init_states(), hp)
    print(name, "scratch losses", ["%.5f" % v for v in ls])
    ls_t, w_t, b_t, opt = train_torch(opt_fn, opt_hp)
    print(name, "torch.optim losses", ["%.5f" % v for v in ls_t])
    print(name, "weights", w.view(-1), "bias", b)
    print(name, "scratch vs torch.optim max weight gap below 1e-3:",
          bool((w - w_t).abs().max() < 1e-3))
    state_keys = sorted(opt.state_dict()['state'][0].keys())
    print(name, type(opt).__name__, "state keys", state_keys)
