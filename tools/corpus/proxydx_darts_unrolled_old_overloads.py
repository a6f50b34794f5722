"""DARTS second-order architect written the way the 2018/2019 code bases write it: the alphas a
plain leaf tensor made with requires_grad=True, the unrolled model from copy.deepcopy and
load_state_dict of a flat theta, and the pre-1.5 scale-first overloads throughout
(theta.sub(eta, moment + dtheta), g.data.sub_(eta, ig), the finite-difference Hessian-vector
product moving weights by p.data.add_(R, v) with R = r / ||v|| a 0-dim tensor).  Weights and data
are deterministic."""
import copy
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

def det_(module, scale=0.3):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(scale * torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.7 + i).view_as(p))

def _concat(xs):
    return torch.cat([x.view(-1) for x in xs])

class Net(nn.Module):
    def __init__(self, n_ops=4):
        super().__init__()
        self.fc = nn.Linear(5, 6)
        self.ops = nn.ModuleList([nn.Linear(6, 6), nn.Sequential(nn.Linear(6, 6), nn.ReLU()), nn.Identity(), nn.Tanh()])
        self.head = nn.Linear(6, 3)
        self._arch = torch.zeros(n_ops, requires_grad=True)
        self._criterion = nn.CrossEntropyLoss()
    def arch_parameters(self):
        return [self._arch]
    def forward(self, x):
        h = F.relu(self.fc(x))
        w = F.softmax(self._arch, dim=0)
        h = sum(w[i] * op(h) for i, op in enumerate(self.ops))
        return self.head(h)
    def _loss(self, x, y):
        return self._criterion(self(x), y)

class Architect:
    def __init__(self, model, eta_momentum=0.9, wd=3e-4):
        self.network_momentum = eta_momentum
        self.network_weight_decay = wd
        self.model = model
        self.optimizer = torch.optim.Adam(self.model.arch_parameters(), lr=3e-3, betas=(0.5, 0.999), weight_decay=1e-3)

    def _compute_unrolled_model(self, input, target, eta, network_optimizer):
        loss = self.model._loss(input, target)
        theta = _concat(self.model.parameters()).data
        try:
            moment = _concat(network_optimizer.state[v]['momentum_buffer'] for v in self.model.parameters()).mul_(self.network_momentum)
        except:
            moment = torch.zeros_like(theta)
        dtheta = _concat(torch.autograd.grad(loss, self.model.parameters())).data + self.network_weight_decay * theta
        unrolled_model = self._construct_model_from_theta(theta.sub(eta, moment + dtheta))
        return unrolled_model

    def step(self, input_train, target_train, input_valid, target_valid, eta, network_optimizer):
        self.optimizer.zero_grad()
        unrolled_model = self._compute_unrolled_model(input_train, target_train, eta, network_optimizer)
        unrolled_loss = unrolled_model._loss(input_valid, target_valid)
        unrolled_loss.backward()
        dalpha = [v.grad for v in unrolled_model.arch_parameters()]
        vector = [v.grad.data for v in unrolled_model.parameters()]
        implicit_grads = self._hessian_vector_product(vector, input_train, target_train)
        for g, ig in zip(dalpha, implicit_grads):
            g.data.sub_(eta, ig.data)
        for v, g in zip(self.model.arch_parameters(), dalpha):
            if v.grad is None:
                v.grad = g.data.clone()
            else:
                v.grad.data.copy_(g.data)
        self.optimizer.step()
        return unrolled_loss.item()

    def _construct_model_from_theta(self, theta):
        model_new = copy.deepcopy(self.model)
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
            p.data.add_(R, v)
        loss = self.model._loss(input, target)
        grads_p = torch.autograd.grad(loss, self.model.arch_parameters())
        for p, v in zip(self.model.parameters(), vector):
            p.data.sub_(2 * R, v)
        loss = self.model._loss(input, target)
        grads_n = torch.autograd.grad(loss, self.model.arch_parameters())
        for p, v in zip(self.model.parameters(), vector):
            p.data.add_(R, v)
        return [(x - y).div_(2 * R) for x, y in zip(grads_p, grads_n)]

model = Net()
det_(model)
print([n for n, _ in model.named_parameters()])
print(len(model.state_dict()), "_arch" in model.state_dict())
opt = torch.optim.SGD(model.parameters(), 0.05, momentum=0.9, weight_decay=3e-4)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, 4, eta_min=0.001)
arch = Architect(model)
xt = torch.sin(torch.arange(40, dtype=torch.float32)).view(8, 5)
yt = torch.arange(8) % 3
xv = torch.cos(torch.arange(40, dtype=torch.float32)).view(8, 5)
yv = (torch.arange(8) + 1) % 3
for epoch in range(4):
    lr = sched.get_last_lr()[0]
    ul = arch.step(xt, yt, xv, yv, lr, opt)
    opt.zero_grad()
    logits = model(xt)
    loss = model._criterion(logits, yt)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 5.)
    opt.step()
    sched.step()
    prec = (logits.argmax(1) == yt).float().mean()
    print(f"epoch {epoch} lr {lr:.5f} loss {loss.item():.5f} unrolled {ul:.5f} acc {prec.item():.3f}")
    print("alpha", np.round(F.softmax(model._arch, dim=-1).detach().numpy(), 4))
print(model._arch.grad)
print(type(opt.state[model.fc.weight]['momentum_buffer']), opt.state[model.fc.weight]['momentum_buffer'].shape)
