"""Spiking networks by hand: a Heaviside spike with a fast-sigmoid surrogate gradient (custom
autograd.Function with a class attribute scale, saved tensors, a None for a non-tensor argument),
synaptic and membrane state loops with a detached reset, einsum in the (equation, tuple) form,
max-over-time readout with LogSoftmax + NLLLoss, torch.heaviside, and a multi-output Function.
Inspired by fzenke/spytorch."""
import numpy as np
import torch
import torch.nn as nn


class FastSigmoidSpike(torch.autograd.Function):
    scale = 10.0

    @staticmethod
    def forward(ctx, v, threshold):
        ctx.save_for_backward(v)
        ctx.threshold = threshold
        out = torch.zeros_like(v)
        out[v > threshold] = 1.0
        return out

    @staticmethod
    def backward(ctx, grad_out):
        v, = ctx.saved_tensors
        return grad_out / (FastSigmoidSpike.scale * torch.abs(v - ctx.threshold) + 1.0) ** 2, None


class LifStep(torch.autograd.Function):
    """Spike and reset together: two outputs, one backward."""

    @staticmethod
    def forward(ctx, mem):
        spk = (mem > 1.0).float()
        ctx.save_for_backward(mem)
        return spk, mem - spk

    @staticmethod
    def backward(ctx, g_spk, g_mem):
        mem, = ctx.saved_tensors
        return g_spk / (1 + (np.pi * (mem - 1.0)) ** 2) + g_mem


spike = FastSigmoidSpike.apply
batch, steps, n_in, n_hid, n_out = 4, 12, 6, 5, 2
rs = np.random.RandomState(7)
x = torch.zeros(batch, steps, n_in)
x[torch.from_numpy(rs.rand(batch, steps, n_in) < 0.3)] = 1.0
y = torch.tensor([0, 1, 1, 0])
w1 = torch.tensor(rs.normal(0, 0.9, (n_in, n_hid)), dtype=torch.float32, requires_grad=True)
w2 = torch.tensor(rs.normal(0, 0.5, (n_hid, n_out)), dtype=torch.float32, requires_grad=True)
alpha, beta = float(np.exp(-1 / 5)), float(np.exp(-1 / 10))


def run(inputs):
    h = torch.einsum("btc,cd->btd", (inputs, w1))
    syn = torch.zeros(batch, n_hid)
    mem = torch.zeros(batch, n_hid)
    spikes, mems = [], []
    for t in range(steps):
        out = spike(mem, 1.0)
        reset = out.detach()
        syn, mem = alpha * syn + h[:, t], (beta * mem + syn) * (1.0 - reset)
        spikes.append(out)
        mems.append(mem)
    spk = torch.stack(spikes, dim=1)
    readout = torch.einsum("btc,cd->btd", (spk, w2)).cumsum(1)
    return readout, spk, torch.stack(mems, 1)


opt = torch.optim.Adam([w1, w2], lr=5e-2)
for epoch in range(4):
    readout, spk, mems = run(x)
    m, _ = torch.max(readout, 1)
    loss = nn.NLLLoss()(nn.LogSoftmax(dim=1)(m), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(epoch, f"{loss.item():.5f}", int(spk.sum().item()), f"{w1.grad.abs().sum().item():.5f}")
print(spk.shape, spk.dtype, mems.shape, readout.grad_fn.name())
print(spk.sum(dim=(0, 1)), mems[0, -1])

v = torch.tensor([-0.5, 0.9, 1.0, 1.4], dtype=torch.float64, requires_grad=True)
s = spike(v, 1.0)
print(s, s.grad_fn.name())
print(torch.autograd.grad(s.sum(), v)[0])
print(torch.heaviside(v.detach() - 1.0, torch.tensor(0.5, dtype=torch.float64)))
mem = torch.tensor([0.5, 1.2, 2.0], requires_grad=True)
spk, rest = LifStep.apply(mem)
print(spk, rest, spk.grad_fn is rest.grad_fn)
(spk.sum() + (rest ** 2).sum()).backward()
print(mem.grad)
