"""Capsule network pieces: a primary-capsule Conv2d reshaped into 8-d capsules, the squash
non-linearity (by hand, and in the norm/clamp/tanh form), three iterations of routing-by-
agreement with the agreement computed on detached predictions (einsum and matmul forms), the
margin loss with one-hot targets from `torch.sparse.torch.eye(n).index_select`, a masked
reconstruction decoder and Adam steps; prints capsule lengths, losses and gradient norms.

Inspired by spikefairway/CapsNet-PyTorch (squash.py, primary_caps.py, digit_caps.py); written
for this corpus: small sizes (12x12 inputs, 5 classes), every parameter and input drawn with
numpy so both libraries start equal.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rs = np.random.RandomState(11)


def numpy_init(module, scale=0.15):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rs.normal(0.0, scale, tuple(p.shape)).astype(np.float32)))


def squash(s, dim=-1):
    sq = (s ** 2).sum(dim=dim, keepdim=True)
    return sq / (1.0 + sq) * s / torch.sqrt(sq + 1e-9)


def squash_tanh(s, dim=-1):
    eps = torch.finfo(s.dtype).eps
    n = torch.clamp(torch.norm(s, p=2, dim=dim, keepdim=True), min=eps)
    return s * (torch.tanh(n) / n)


class PrimaryCaps(nn.Module):
    def __init__(self, cin, units, size):
        super().__init__()
        self.size = size
        self.conv = nn.Conv2d(cin, units * size, kernel_size=3, stride=2)

    def forward(self, x):
        u = self.conv(x)
        u = u.view(x.size(0), self.size, -1).transpose(1, 2)
        return squash(u, dim=2)


class DigitCaps(nn.Module):
    def __init__(self, n_in, n_out, d_in, d_out, iters=3):
        super().__init__()
        self.iters = iters
        self.W = nn.Parameter(torch.empty(n_in, n_out, d_out, d_in))

    def forward(self, u):
        u_hat = torch.einsum('iodk,bik->biod', self.W, u)
        detached = u_hat.detach()
        b = torch.zeros(u.size(0), u_hat.size(1), u_hat.size(2))
        for it in range(self.iters):
            c = F.softmax(b, dim=2)
            if it == self.iters - 1:
                s = (c.unsqueeze(-1) * u_hat).sum(dim=1)
                return squash(s), c
            s = (c.unsqueeze(-1) * detached).sum(dim=1)
            v = squash(s)
            b = b + torch.matmul(detached.unsqueeze(-2), v[:, None, :, :, None]).squeeze(-1).squeeze(-1)


class CapsNet(nn.Module):
    def __init__(self, classes=5):
        super().__init__()
        self.conv = nn.Conv2d(1, 12, kernel_size=3)
        self.primary = PrimaryCaps(12, 4, 8)
        self.digits = DigitCaps(4 * 4 * 4, classes, 8, 12)
        self.decoder = nn.Sequential(nn.Linear(12 * classes, 48), nn.ReLU(inplace=True),
                                     nn.Linear(48, 144), nn.Sigmoid())

    def forward(self, x):
        v, c = self.digits(self.primary(F.relu(self.conv(x))))
        return v, c


def margin_loss(v, target, m_plus=0.9, m_minus=0.1, lam=0.5):
    lengths = v.norm(dim=-1)
    zero = torch.zeros(1)
    left = torch.max(m_plus - lengths, zero) ** 2
    right = torch.max(lengths - m_minus, zero) ** 2
    return (target * left + lam * (1.0 - target) * right).sum(dim=1).mean()


model = CapsNet()
numpy_init(model)
images = torch.from_numpy(rs.rand(4, 1, 12, 12).astype(np.float32))
labels = torch.LongTensor([0, 3, 4, 1])
target = torch.sparse.torch.eye(5).index_select(dim=0, index=labels)
print("target", target.dtype, target.tolist()[1])

u = model.primary(F.relu(model.conv(images)))
print("primary", tuple(u.shape), "max length", round(u.norm(dim=-1).max().item(), 4))
print("squash forms agree in direction:",
      bool(F.cosine_similarity(squash(u), squash_tanh(u), dim=-1).min() > 0.999))

opt = torch.optim.Adam(model.parameters(), lr=2e-3)
for step in range(3):
    v, c = model(images)
    recon = model.decoder((v * target.unsqueeze(-1)).flatten(1))
    rec_loss = F.mse_loss(recon, images.view(4, -1), reduction='sum') / images.size(0)
    loss = margin_loss(v, target) + 0.0005 * rec_loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, tuple(v.shape), "loss %.5f" % loss.item(),
          "W grad %.5f" % model.digits.W.grad.norm().item())

lengths = v.norm(dim=-1)
print("couplings sum to one:", torch.allclose(c.sum(dim=2), torch.ones(4, 64)))
print("predicted", lengths.argmax(dim=1).tolist(), "lengths", lengths.detach().numpy().round(4)[0])
print("conv grad %.5f" % model.conv.weight.grad.norm().item(),
      "grad on detached routing path only through last step:", model.digits.W.grad is not None)
zero_caps = torch.zeros(2, 3, requires_grad=True)
squash(zero_caps).sum().backward()
print("squash at zero", zero_caps.grad.tolist()[0])
print("stdv init", round(1.0 / math.sqrt(64), 5))
