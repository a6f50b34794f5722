"""The DARTS second-order architect in the style of quark0/darts (written for this corpus, not a
copy): a tiny search network whose mixed op weights candidate ops by softmax(alphas), separate
optimizers for weights (SGD with momentum) and architecture (Adam), the unrolled model rebuilt
from the flat parameter vector (momentum buffer read from the weight optimizer's state) through
model.new() and load_state_dict, the finite-difference Hessian-vector product on the weights
moved in place through .data, the result written back into alpha.grad; the finite difference is
checked against the exact Hessian-vector product from create_graph=True, and the model is
deep-copied.  Weights are filled deterministically."""
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def _concat(xs):
    return torch.cat([x.view(-1) for x in xs])


class TinySearchNet(nn.Module):
    def __init__(self, d_in=6, hidden=8, n_cls=3, n_ops=3):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.ops = nn.ModuleList([nn.Linear(hidden, hidden), nn.Identity(), nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh())])
        self.fc2 = nn.Linear(hidden, n_cls)
        self.alphas = torch.zeros(n_ops).requires_grad_(True)
        self._criterion = nn.CrossEntropyLoss()

    def arch_parameters(self):
        return [self.alphas]

    def new(self):
        model_new = TinySearchNet()
        for x, y in zip(model_new.arch_parameters(), self.arch_parameters()):
            x.data.copy_(y.data)
        return model_new

    def forward(self, x):
        h = F.relu(self.fc1(x))
        w = F.softmax(self.alphas, dim=-1)
        h = sum(wi * op(h) for wi, op in zip(w, self.ops))
        return self.fc2(h)

    def _loss(self, x, y):
        return self._criterion(self(x), y)


class Architect(object):
    def __init__(self, model, momentum=0.9, weight_decay=3e-4, arch_lr=3e-4, arch_wd=1e-3):
        self.network_momentum = momentum
        self.network_weight_decay = weight_decay
        self.model = model
        self.optimizer = torch.optim.Adam(self.model.arch_parameters(), lr=arch_lr, betas=(0.5, 0.999), weight_decay=arch_wd)

    def _compute_unrolled_model(self, input, target, eta, network_optimizer):
        loss = self.model._loss(input, target)
        theta = _concat(self.model.parameters()).data
        try:
            moment = _concat(network_optimizer.state[v]['momentum_buffer'] for v in self.model.parameters()).mul_(self.network_momentum)
        except KeyError:
            moment = torch.zeros_like(theta)
        dtheta = _concat(torch.autograd.grad(loss, self.model.parameters())).data + self.network_weight_decay * theta
        unrolled_model = self._construct_model_from_theta(theta - eta * (moment + dtheta))
        return unrolled_model

    def step(self, input_train, target_train, input_valid, target_valid, eta, network_optimizer, unrolled):
        self.optimizer.zero_grad()
        if unrolled:
            self._backward_step_unrolled(input_train, target_train, input_valid, target_valid, eta, network_optimizer)
        else:
            self._backward_step(input_valid, target_valid)
        self.optimizer.step()

    def _backward_step(self, input_valid, target_valid):
        loss = self.model._loss(input_valid, target_valid)
        loss.backward()

    def _backward_step_unrolled(self, input_train, target_train, input_valid, target_valid, eta, network_optimizer):
        unrolled_model = self._compute_unrolled_model(input_train, target_train, eta, network_optimizer)
        unrolled_loss = unrolled_model._loss(input_valid, target_valid)
        unrolled_loss.backward()
        dalpha = [v.grad for v in unrolled_model.arch_parameters()]
        vector = [v.grad.data for v in unrolled_model.parameters()]
        implicit_grads = self._hessian_vector_product(vector, input_train, target_train)
        for g, ig in zip(dalpha, implicit_grads):
            g.data.sub_(ig.data, alpha=eta)
        for v, g in zip(self.model.arch_parameters(), dalpha):
            if v.grad is None:
                v.grad = g.data.clone()
            else:
                v.grad.data.copy_(g.data)
        self.last_unrolled_loss = unrolled_loss.item()

    def _construct_model_from_theta(self, theta):
        model_new = self.model.new()
        model_dict = self.model.state_dict()
        params, offset = {}, 0
        for k, v in self.model.named_parameters():
            v_length = np.prod(v.size())
            params[k] = theta[offset: offset + v_length].view(v.size())
            offset += v_length
        assert offset == len(theta)
        model_dict.update(params)
        model_new.load_state_dict(model_dict)
        return model_new

    def _hessian_vector_product(self, vector, input, target, r=1e-2):
        R = r / _concat(vector).norm()
        for p, v in zip(self.model.parameters(), vector):
            p.data.add_(v, alpha=R)
        loss = self.model._loss(input, target)
        grads_p = torch.autograd.grad(loss, self.model.arch_parameters())
        for p, v in zip(self.model.parameters(), vector):
            p.data.sub_(v, alpha=2 * R)
        loss = self.model._loss(input, target)
        grads_n = torch.autograd.grad(loss, self.model.arch_parameters())
        for p, v in zip(self.model.parameters(), vector):
            p.data.add_(v, alpha=R)
        return [(x - y).div_(2 * R) for x, y in zip(grads_p, grads_n)]


torch.manual_seed(0)
model = TinySearchNet()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(0.3 * torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 1.3 + i).view_as(p))
print(len(list(model.parameters())), _concat(model.parameters()).shape)
optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, weight_decay=3e-4)
architect = Architect(model, arch_lr=0.05)

xt = torch.linspace(-2, 2, 48).view(8, 6)
yt = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
xv = torch.linspace(2, -2, 48).view(8, 6).roll(1, dims=1)
yv = torch.tensor([2, 1, 0, 2, 1, 0, 1, 1])

for step in range(4):
    lr = 0.1
    architect.step(xt, yt, xv, yv, lr, optimizer, unrolled=True)
    print("step", step, "unrolled valid loss %.4f" % architect.last_unrolled_loss)
    print("  alpha grad", model.alphas.grad)
    optimizer.zero_grad()
    logits = model(xt)
    loss = model._loss(xt, yt)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    optimizer.step()
    print("  train loss %.4f" % loss.item())
    print("  alphas", F.softmax(model.alphas, dim=-1).detach().numpy().round(4))

# first-order check: exact hessian-vector product vs finite differences
loss = model._loss(xt, yt)
gw = torch.autograd.grad(loss, list(model.parameters()), create_graph=True)
v = [torch.ones_like(g) for g in gw]
dot = sum((g * vi).sum() for g, vi in zip(gw, v))
exact = torch.autograd.grad(dot, model.arch_parameters())[0]
fd = architect._hessian_vector_product(v, xt, yt, r=1e-2)[0]
print("exact", exact)
print("fd close", torch.allclose(exact, fd, atol=1e-2))
print("best op", model.alphas.argmax().item())
m2 = copy.deepcopy(model)
print(m2.alphas is model.alphas, torch.equal(m2.alphas, model.alphas), m2.alphas.requires_grad)
