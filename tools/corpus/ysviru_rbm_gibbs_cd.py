"""Restricted Boltzmann machines trained by contrastive divergence, as the RBM scripts write
them: hidden and visible probabilities through sigmoid(matmul + bias.repeat(...)), samples from
torch.bernoulli / Tensor.bernoulli of probabilities that require grad (their grad_fn printed,
BernoulliBackward0), the in-place samplers' nodes (bernoulli_, exponential_, random_), positive
and negative statistics with torch.ger / matmul, in-place weight and bias updates (+=) of plain
tensors and of nn.Parameters under no_grad, a free-energy loss through softplus whose gradient
reaches the parameters, the reconstruction cost, and torch.FloatTensor(n, 1) bookkeeping.  The
Gibbs chain's stochastic steps use a fixed threshold where values are printed, so the output
does not depend on the random stream.  Inspired by ysviru/Restricted-Boltzmann-Machine-RBM-in-
PyTorch and invoker-LL/RBM."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.RandomState(21)
n_visible, n_hidden, n_samples = 12, 5, 40
data = torch.from_numpy((rng.rand(n_visible, n_samples) > 0.6).astype(np.float32))
W = torch.from_numpy((rng.randn(n_hidden, n_visible) * 0.05).astype(np.float32))
v_bias = torch.zeros(n_visible, 1)
h_bias = torch.zeros(n_hidden, 1)


def prob_hiddens(v):
    return torch.sigmoid(torch.matmul(W, v) + h_bias.repeat(1, v.shape[1]))


def prob_visibles(h):
    return torch.sigmoid(torch.matmul(W.t(), h) + v_bias.repeat(1, h.shape[1]))


# CD-k with the column-per-sample layout, k growing with the epoch (ceil(epoch / n * k))
batch_size, n_epochs, k_max, lr = 10, 3, 3, 0.2
batches = [data[:, i:i + batch_size] for i in range(0, n_samples, batch_size)]
for epoch in range(1, n_epochs + 1):
    k = int(math.ceil(epoch / n_epochs * k_max))
    cost_ = torch.FloatTensor(len(batches), 1)
    grad_ = torch.FloatTensor(len(batches), 1)
    for i, batch in enumerate(batches):
        pos_h = prob_hiddens(batch)
        h = (pos_h > 0.5).float()
        pos_stats = torch.matmul(h, batch.t())
        for _ in range(k):
            neg_v = prob_visibles(h)
            neg_h = prob_hiddens(neg_v)
            h = (neg_h > 0.5).float()
        neg_stats = torch.matmul(neg_h, neg_v.t())
        g = (pos_stats - neg_stats) / batch_size
        W += lr / epoch * g
        v_bias += lr / epoch * torch.sum(batch - neg_v, dim=1, keepdim=True) / batch_size
        h_bias += lr / epoch * torch.sum(pos_h - neg_h, dim=1).view(-1, 1) / batch_size
        cost_[i] = torch.mean(torch.sum((batch - neg_v) ** 2, dim=0))
        grad_[i] = torch.sum(torch.abs(g))
    print(f"epoch {epoch} k={k} avg_cost={torch.mean(cost_).item():.5f} "
          f"std_cost={torch.std(cost_).item():.5f} avg_grad={torch.mean(grad_).item():.5f}")
print("W", W.shape, W.dtype, round(W.abs().sum().item(), 4))
print("biases", v_bias.view(-1)[:4], h_bias.view(-1))

# a single visible vector: the 1-D branch of the scripts (view to a column)
p1 = torch.sigmoid(torch.matmul(W, data[:, 0]).view(n_hidden, 1) + h_bias)
print("single", p1.shape, prob_visibles(p1).shape)

# sampling: shapes, dtypes and 0/1 values (the values themselves depend on the stream)
torch.manual_seed(0)
p_h = prob_hiddens(data[:, :6])
h_s = torch.bernoulli(p_h)
v_s = prob_visibles(h_s).bernoulli()
print("samples", h_s.shape, h_s.dtype, v_s.shape, bool(((v_s == 0) | (v_s == 1)).all()))
print("p=1 and p=0 rows", torch.bernoulli(torch.tensor([[1.0, 0.0, 1.0]])))


# the nn.Module form: parameters, a free-energy difference as the loss, optimizer steps
class RBM(nn.Module):
    def __init__(self, n_vis, n_hid, k=1):
        super().__init__()
        self.W = nn.Parameter(torch.from_numpy((rng.randn(n_hid, n_vis) * 0.1).astype(np.float32)))
        self.v_bias = nn.Parameter(torch.zeros(n_vis))
        self.h_bias = nn.Parameter(torch.zeros(n_hid))
        self.k = k

    def v_to_h(self, v):
        p_h = torch.sigmoid(F.linear(v, self.W, self.h_bias))
        return p_h, torch.bernoulli(p_h)

    def h_to_v(self, h):
        p_v = torch.sigmoid(F.linear(h, self.W.t(), self.v_bias))
        return p_v, torch.bernoulli(p_v)

    def forward(self, v):
        p_h, h = self.v_to_h(v)
        for _ in range(self.k):
            p_v, v_k = self.h_to_v(h)
            p_h, h = self.v_to_h(v_k)
        return v, v_k

    def free_energy(self, v):
        vbias_term = v.mv(self.v_bias)
        wx_b = F.linear(v, self.W, self.h_bias)
        hidden_term = F.softplus(wx_b).sum(1)
        return (-hidden_term - vbias_term).mean()


rbm = RBM(n_visible, n_hidden, k=2)
optimizer = torch.optim.SGD(rbm.parameters(), lr=0.1, momentum=0.5)
v_in = data.t()[:8]
v, v1 = rbm(v_in)
print("sample node", repr(v1.grad_fn).split(" at ")[0], v1.requires_grad, v1.shape)
p_h, h = rbm.v_to_h(v_in)
print(h.grad_fn.name(), [type(f).__name__ for f, _ in h.grad_fn.next_functions])
print("sample prints as", repr(torch.bernoulli(torch.sigmoid(rbm.W[:1, :3] * 0 + 40))))
for step in range(3):
    v, v1 = rbm(v_in)
    v1 = (rbm.h_to_v((rbm.v_to_h(v_in)[0] > 0.5).float())[0] > 0.5).float()
    loss = rbm.free_energy(v) - rbm.free_energy(v1)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.5f} |gW| {rbm.W.grad.abs().sum().item():.5f}")
h_probs = torch.sigmoid(F.linear(v_in, rbm.W, rbm.h_bias))
sampled = torch.bernoulli(h_probs)
(sampled * 3).sum().backward()
print("zero gradient through a sample", rbm.W.grad.abs().sum().item() >= 0, rbm.h_bias.grad.shape)

with torch.no_grad():
    rbm.W += 0.01 * torch.ger(v_in[0, :n_hidden], v_in[1])
    rbm.v_bias.add_(0.01 * (v_in[0] - v_in[1]))
print("no_grad updates", rbm.W.requires_grad, rbm.W.grad_fn, round(rbm.v_bias.sum().item(), 4))

# in-place samplers on a tensor in the graph: PyTorch's nodes per overload, zero gradient
q = torch.tensor([0.2, 0.7, 0.5], requires_grad=True)
for name, fill in [("bernoulli_(p)", lambda r: r.bernoulli_(0.5)),
                   ("bernoulli_(tensor)", lambda r: r.bernoulli_(torch.tensor([0.1, 0.5, 0.9]))),
                   ("exponential_", lambda r: r.exponential_()),
                   ("random_(0, 2)", lambda r: r.random_(0, 2)),
                   ("random_(2)", lambda r: r.random_(2))]:
    r = fill(q * 1)
    r.sum().backward()
    print(name, type(r.grad_fn).__name__, q.grad)
    q.grad = None
s = torch.bernoulli(q, 0.5)
print("bernoulli(input, p)", repr(s.grad_fn).split(" at ")[0], s.requires_grad)
try:
    s.sum().backward()
except RuntimeError as e:
    print("RuntimeError:", e)
print("poisson", type(torch.poisson(q * 3).grad_fn).__name__)
