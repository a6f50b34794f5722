"""fastai course-v3 "from the foundations" 02_fully_connected / 03_minibatch_training: a two-layer
network's forward and hand-written backward pass (lin_grad, relu_grad, mse_grad) checked against
autograd, the same as Module classes, then a minibatch loop with nn.Sequential, a hand-rolled
optimizer and accuracy. Data and weights come from numpy, so both libraries see the same."""
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

rng = np.random.RandomState(0)
x_train = torch.tensor(rng.rand(64, 20).astype(np.float32))
y_train = torch.tensor((rng.rand(64) * 9).astype(np.float32))
x_valid = torch.tensor(rng.rand(16, 20).astype(np.float32))


def normalize(x, m, s): return (x - m) / s


train_mean, train_std = x_train.mean(), x_train.std()
x_train = normalize(x_train, train_mean, train_std)
x_valid = normalize(x_valid, train_mean, train_std)
print(round(x_train.mean().item(), 4), round(x_train.std().item(), 4))

n, m = x_train.shape
nh = 10
w1 = torch.tensor(rng.randn(m, nh).astype(np.float32)) / math.sqrt(m)
b1 = torch.zeros(nh)
w2 = torch.tensor(rng.randn(nh, 1).astype(np.float32)) / math.sqrt(nh)
b2 = torch.zeros(1)


def lin(x, w, b): return x @ w + b
def relu(x): return x.clamp_min(0.) - 0.5
def mse(output, targ): return (output.squeeze(-1) - targ).pow(2).mean()


t = relu(lin(x_valid, w1, b1))
print(t.mean().item() > -1, t.shape)


def model(xb):
    l1 = lin(xb, w1, b1)
    l2 = relu(l1)
    return lin(l2, w2, b2)


preds = model(x_train)
print(preds.shape, round(mse(preds, y_train).item(), 4))


def mse_grad(inp, targ):
    inp.g = 2. * (inp.squeeze() - targ).unsqueeze(-1) / inp.shape[0]


def relu_grad(inp, out):
    inp.g = (inp > 0).float() * out.g


def lin_grad(inp, out, w, b):
    inp.g = out.g @ w.t()
    w.g = (inp.unsqueeze(-1) * out.g.unsqueeze(1)).sum(0)
    b.g = out.g.sum(0)


def forward_and_backward(inp, targ):
    l1 = inp @ w1 + b1
    l2 = relu(l1)
    out = l2 @ w2 + b2
    loss = mse(out, targ)
    mse_grad(out, targ)
    lin_grad(l2, out, w2, b2)
    relu_grad(l1, l2)
    lin_grad(inp, l1, w1, b1)
    return loss


loss = forward_and_backward(x_train, y_train)
w1g, b1g, w2g, b2g, ig = w1.g.clone(), b1.g.clone(), w2.g.clone(), b2.g.clone(), x_train.g.clone()
xt2 = x_train.clone().requires_grad_(True)
w12, b12, w22, b22 = [t.clone().requires_grad_(True) for t in (w1, b1, w2, b2)]


def forward(inp, targ):
    l1 = inp @ w12 + b12
    l2 = relu(l1)
    out = l2 @ w22 + b22
    return mse(out, targ)


loss2 = forward(xt2, y_train)
loss2.backward()
for name, a, b in [("w1", w1g, w12.grad), ("b1", b1g, b12.grad), ("w2", w2g, w22.grad),
                   ("b2", b2g, b22.grad), ("inp", ig, xt2.grad)]:
    print(name, tuple(a.shape), torch.allclose(a, b, rtol=1e-3, atol=1e-5))


class Module():
    def __call__(self, *args):
        self.args = args
        self.out = self.forward(*args)
        return self.out

    def forward(self): raise Exception('not implemented')
    def backward(self): self.bwd(self.out, *self.args)


class Relu(Module):
    def forward(self, inp): return inp.clamp_min(0.) - 0.5
    def bwd(self, out, inp): inp.g = (inp > 0).float() * out.g


class Lin(Module):
    def __init__(self, w, b): self.w, self.b = w, b
    def forward(self, inp): return inp @ self.w + self.b

    def bwd(self, out, inp):
        inp.g = out.g @ self.w.t()
        self.w.g = torch.einsum("bi,bj->ij", inp, out.g)
        self.b.g = out.g.sum(0)


class Mse(Module):
    def forward(self, inp, targ): return (inp.squeeze() - targ).pow(2).mean()
    def bwd(self, out, inp, targ): inp.g = 2 * (inp.squeeze() - targ).unsqueeze(-1) / targ.shape[0]


class Model():
    def __init__(self):
        self.layers = [Lin(w1, b1), Relu(), Lin(w2, b2)]
        self.loss = Mse()

    def __call__(self, x, targ):
        for l in self.layers: x = l(x)
        return self.loss(x, targ)

    def backward(self):
        self.loss.backward()
        for l in reversed(self.layers): l.backward()


w1.g, b1.g, w2.g, b2.g = [None] * 4
model2 = Model()
loss3 = model2(x_train, y_train)
model2.backward()
print(round(loss3.item(), 4), torch.allclose(w2g, w2.g, rtol=1e-3, atol=1e-5),
      torch.allclose(w1g, w1.g, rtol=1e-3, atol=1e-5), torch.allclose(ig, x_train.g, rtol=1e-3, atol=1e-5))

# 03_minibatch_training: cross entropy by hand, then a training loop
y_cls = torch.tensor(rng.randint(0, 10, 64))
net = nn.Sequential(nn.Linear(m, nh), nn.ReLU(), nn.Linear(nh, 10))
with torch.no_grad():
    for p in net.parameters():
        p.copy_(torch.tensor(rng.randn(*p.shape).astype(np.float32) * 0.1))


def log_softmax(x): return x - x.exp().sum(-1, keepdim=True).log()
def logsumexp(x):
    mx = x.max(-1)[0]
    return mx + (x - mx[:, None]).exp().sum(-1).log()
def nll(inp, target): return -inp[range(target.shape[0]), target].mean()


pred = net(x_train)
sm_pred = log_softmax(pred)
print(round(nll(sm_pred, y_cls).item(), 4), round(F.nll_loss(F.log_softmax(pred, -1), y_cls).item(), 4),
      round(F.cross_entropy(pred, y_cls).item(), 4))
print(torch.allclose(logsumexp(pred), pred.logsumexp(-1)))


def accuracy(out, yb): return (torch.argmax(out, dim=1) == yb).float().mean()


bs, lr = 16, 0.5
for epoch in range(3):
    for i in range((n - 1) // bs + 1):
        xb, yb = x_train[i * bs:i * bs + bs], y_cls[i * bs:i * bs + bs]
        loss = F.cross_entropy(net(xb), yb)
        loss.backward()
        with torch.no_grad():
            for p in net.parameters(): p -= p.grad * lr
            net.zero_grad()
    print(epoch, round(loss.item(), 4), round(accuracy(net(x_train), y_cls).item(), 4))
print([p.grad for p in net.parameters()][:1])
