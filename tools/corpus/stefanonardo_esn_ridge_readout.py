"""Reservoir computing and Hebbian plasticity: an echo state network whose recurrent matrix is
sparsified with a permutation and rescaled to a spectral radius from torch.linalg.eigvals,
parameters built as nn.Parameter(torch.Tensor(...)) and rewritten through state_dict /
load_state_dict, a leaky tanh reservoir run step by step with F.linear, a washout, and the
readout fitted by ridge regression four ways (normal equations with torch.linalg.solve, the
inverse with a det check, torch.svd as scikit-learn's solver, and torch.linalg.lstsq) then
installed as new nn.Parameters; packed sequences through the reservoir; Hebb, Oja and Sanger
rules accumulated in a registered buffer under no_grad; and a Hopfield network storing patterns
with torch.outer and fill_diagonal_, recalled asynchronously with torch.sign and einsum.
Inspired by stefanonardo/pytorch-esn."""
import re

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

rng = np.random.RandomState(17)


class Reservoir(nn.Module):
    def __init__(self, input_size, hidden_size, leaking_rate, spectral_radius, density):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        self.leaking_rate, self.spectral_radius, self.density = leaking_rate, spectral_radius, density
        self.weight_ih_l0 = nn.Parameter(torch.Tensor(hidden_size, input_size))
        self.weight_hh_l0 = nn.Parameter(torch.Tensor(hidden_size, hidden_size))
        self.bias_ih_l0 = nn.Parameter(torch.Tensor(hidden_size))
        self.reset_parameters()

    def reset_parameters(self):
        weights = self.state_dict()
        for key, value in weights.items():
            if re.fullmatch("weight_ih_l[0-9]*", key) or re.fullmatch("bias_ih_l[0-9]*", key):
                value.copy_(torch.from_numpy(rng.uniform(-1, 1, tuple(value.shape)).astype(np.float32)))
            elif re.fullmatch("weight_hh_l[0-9]*", key):
                w_hh = torch.Tensor(self.hidden_size * self.hidden_size)
                w_hh.copy_(torch.from_numpy(rng.uniform(-1, 1, w_hh.shape).astype(np.float32)))
                zero = torch.from_numpy(rng.permutation(self.hidden_size * self.hidden_size))
                w_hh[zero[:int(self.hidden_size ** 2 * (1 - self.density))]] = 0
                w_hh = w_hh.view(self.hidden_size, self.hidden_size)
                eigs = torch.linalg.eigvals(w_hh)
                weights[key] = w_hh * (self.spectral_radius / torch.max(eigs.abs()))
        self.load_state_dict(weights)

    def forward(self, input, hidden):
        packed = isinstance(input, PackedSequence)
        if packed:
            data, batch_sizes = input.data, input.batch_sizes
            outputs, offset, finals = [], 0, {}
            for b in batch_sizes.tolist():
                hidden = hidden[:b]
                hidden = self.cell(data[offset:offset + b], hidden)
                outputs.append(hidden)
                offset += b
            return PackedSequence(torch.cat(outputs), batch_sizes, input.sorted_indices,
                                  input.unsorted_indices)
        outputs = []
        for t in range(input.size(0)):
            hidden = self.cell(input[t], hidden)
            outputs.append(hidden)
        return torch.stack(outputs), hidden

    def cell(self, x, h):
        new = torch.tanh(F.linear(x, self.weight_ih_l0, self.bias_ih_l0) + F.linear(h, self.weight_hh_l0))
        return (1 - self.leaking_rate) * h + self.leaking_rate * new


res = Reservoir(1, 30, leaking_rate=0.7, spectral_radius=0.9, density=0.4)
print(res.weight_hh_l0.eq(0).sum().item(), res.weight_hh_l0.requires_grad,
      round(torch.linalg.eigvals(res.weight_hh_l0).abs().max().item(), 4))
print(torch.linalg.eigvals(torch.tensor([[0.0, -1.0], [1.0, 0.0]])))

t = np.arange(0, 300) * 0.1
series = (np.sin(t) * np.cos(0.31 * t)).astype(np.float32)
u = torch.from_numpy(series[:-1]).view(-1, 1, 1)
y = torch.from_numpy(series[1:]).view(-1, 1)
washout = 30
with torch.no_grad():
    states, h_last = res(u[:240], torch.zeros(1, 30))
X = torch.cat([torch.ones(240 - washout, 1), states[washout:, 0]], dim=1)
target = y[washout:240]
lam = 1e-2
XTX, XTy = X.t() @ X, X.t() @ target
W_solve = torch.linalg.solve(XTX + lam * torch.eye(X.size(1)), XTy).t()
A = XTX + lam * torch.eye(X.size(1))
W_inv = torch.mm(torch.inverse(A), XTy).t() if torch.det(A) != 0 else torch.mm(torch.pinverse(A), XTy).t()
U, s, V = torch.svd(X)
idx = s > 1e-15
d = torch.zeros(s.size(0), 1)
d[idx] = s[idx][:, None] / (s[idx][:, None] ** 2 + lam)
W_svd = torch.mm(V, d * torch.mm(U.t(), target)).t()
W_lstsq = torch.linalg.lstsq(torch.cat([X, lam ** 0.5 * torch.eye(X.size(1))]),
                             torch.cat([target, torch.zeros(X.size(1), 1)])).solution.t()
for name, Wr in (("solve", W_solve), ("inv", W_inv), ("svd", W_svd), ("lstsq", W_lstsq)):
    readout = nn.Linear(30, 1)
    readout.bias = nn.Parameter(Wr[:, 0])
    readout.weight = nn.Parameter(Wr[:, 1:])
    with torch.no_grad():
        pred, _ = res(u[240:], h_last)
        err = F.mse_loss(readout(pred[:, 0]), y[240:]).item()
    print(name, Wr.shape, err < 1e-2, readout.weight.requires_grad)
print("agree", torch.allclose(W_solve, W_svd, atol=1e-2), torch.allclose(W_solve, W_lstsq, atol=1e-2))

# a batch of padded sequences through the reservoir as a PackedSequence
seqs = torch.from_numpy(rng.randn(7, 3, 1).astype(np.float32))
packed = pack_padded_sequence(seqs, [7, 5, 2])
with torch.no_grad():
    out = res(packed, torch.zeros(3, 30))
padded, lengths = pad_packed_sequence(out)
print(type(out).__name__, out.data.shape, padded.shape, lengths, padded[5:, 2].abs().sum().item())


def hebb_rule(x, y, w):
    return y.T @ x / x.shape[0]


def oja_rule(x, y, w):
    delta_w = y.T @ x / x.shape[0]
    delta_w -= torch.pow(y, 2).mean(0).unsqueeze(-1) * w
    return delta_w


def sanger_rule(x, y, w):
    return (y.T @ x - torch.tril(y.T @ y) @ w) / x.shape[0]


class HebbianLinear(nn.Module):
    def __init__(self, n_in, n_out, rule, lr):
        super().__init__()
        bound = (6 / n_in) ** 0.5
        self.w = nn.Parameter(torch.from_numpy(rng.uniform(-bound, bound, (n_out, n_in)).astype(np.float32)))
        self.rule, self.lr = rule, lr
        self.register_buffer("dw", torch.zeros_like(self.w))

    def forward_hebbian(self, x):
        with torch.no_grad():
            y = x @ self.w.t()
            self.dw += self.rule(x, y, self.w)
        return y

    def apply_weight_change(self):
        with torch.no_grad():
            self.w += self.lr * self.dw
        self.dw = torch.zeros_like(self.w)


scales = torch.tensor([2.5, 1.2, 0.6, 0.2, 0.1])
for name, rule, lr in (("hebb", hebb_rule, 1e-3), ("oja", oja_rule, 5e-2), ("sanger", sanger_rule, 5e-2)):
    layer = HebbianLinear(5, 2, rule, lr)
    for _ in range(60):
        layer.forward_hebbian(torch.from_numpy(rng.randn(20, 5).astype(np.float32)) * scales)
        layer.apply_weight_change()
    print(name, layer.w.norm(dim=1).detach().numpy().round(3), layer.w.detach().abs().argmax(1).tolist(),
          layer.w.grad, list(layer.state_dict()))


class Hopfield:
    def __init__(self, n):
        self.n = n
        self.weights = torch.zeros(n, n)

    def store(self, patterns):
        self.patterns = patterns.clone()
        self.weights.zero_()
        for p in patterns:
            self.weights += torch.outer(p, p)
        self.weights /= self.n
        self.weights.fill_diagonal_(0)
        return self

    def energy(self, s):
        return -0.5 * torch.sum(s * (self.weights @ s))

    def recall(self, s, order):
        s = s.clone()
        energies = [self.energy(s).item()]
        for i in order:
            s[i] = torch.sign(torch.einsum("j,j->", self.weights[i], s))
            energies.append(self.energy(s).item())
        return s, energies


patterns = torch.from_numpy(np.sign(rng.randn(3, 40)).astype(np.float32))
net = Hopfield(40).store(patterns)
probe = patterns[1].clone()
probe[torch.from_numpy(rng.permutation(40)[:8])] *= -1
state, energies = net.recall(probe, rng.randint(0, 40, 150).tolist())
print("energy", round(energies[0], 3), round(energies[-1], 3), all(a >= b - 1e-6 for a, b in zip(energies, energies[1:])))
print("overlaps", torch.tensor([torch.sum(state * p) / 40 for p in patterns]))
print(torch.sign(torch.tensor([-0.5, 0.0, 2.0])), net.weights.diagonal().abs().sum())
