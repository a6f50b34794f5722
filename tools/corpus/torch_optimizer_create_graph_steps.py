"""jettify/pytorch-optimizer idioms: optimizers written on torch.optim.Optimizer (an AdamP-style
step projecting the update per channel with grad.view(n, -1), a Yogi-style step, a Lookahead
wrapper), run on the repository's test functions (Rosenbrock, Beale) and on its two-layer
logistic regression with backward(create_graph=True), as its tests do; a state_dict round trip,
its argument validation, and a sparse parameter refused by a step. Weights and data from numpy:
both libraries see the same; the test functions run in float64 (no float32 rounding to amplify)."""
import copy
import math
import warnings

import numpy as np
import torch
from torch import nn
from torch.optim.optimizer import Optimizer

warnings.simplefilter("default")


class AdamP(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, delta=0.1,
                 wd_ratio=0.1):
        if lr <= 0.0:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError("Invalid beta parameter at index 0: {}".format(betas[0]))
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, delta=delta,
                        wd_ratio=wd_ratio)
        super(AdamP, self).__init__(params, defaults)

    @staticmethod
    def _channel_view(x):
        return x.view(x.size(0), -1)

    @staticmethod
    def _layer_view(x):
        return x.view(1, -1)

    def _projection(self, p, grad, perturb, delta, wd_ratio, eps):
        wd = 1
        for view_func in [self._channel_view, self._layer_view]:
            x, y = view_func(grad), view_func(p.data)
            cosine_sim = torch.nn.functional.cosine_similarity(x, y, dim=1, eps=eps).abs_()
            if cosine_sim.max() < delta / math.sqrt(view_func(p.data).size(1)):
                p_n = p.data / view_func(p.data).norm(dim=1).view(-1, *[1] * (len(p.shape) - 1)).add(eps)
                perturb -= p_n * view_func(p_n * perturb).sum(dim=1).view(-1, *[1] * (len(p.shape) - 1))
                wd = wd_ratio
                return perturb, wd
        return perturb, wd

    def step(self, closure=None):
        loss = None
        if closure is not None:
            loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.data
                if grad.is_sparse:
                    raise RuntimeError("AdamP does not support sparse gradients")
                beta1, beta2 = group["betas"]
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p.data)
                    state["exp_avg_sq"] = torch.zeros_like(p.data)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                state["step"] += 1
                bias_correction1 = 1 - beta1 ** state["step"]
                bias_correction2 = 1 - beta2 ** state["step"]
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = (exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(group["eps"])
                perturb = exp_avg / denom
                wd_ratio = 1
                if len(p.shape) > 1:
                    perturb, wd_ratio = self._projection(p, grad, perturb, group["delta"],
                                                         group["wd_ratio"], group["eps"])
                if group["weight_decay"] > 0:
                    p.data.mul_(1 - group["lr"] * group["weight_decay"] * wd_ratio)
                p.data.add_(perturb, alpha=-group["lr"] / bias_correction1)
        return loss


class Yogi(Optimizer):
    def __init__(self, params, lr=1e-2, betas=(0.9, 0.999), eps=1e-3, initial_accumulator=1e-6):
        if eps < 0.0:
            raise ValueError("Invalid epsilon value: {}".format(eps))
        defaults = dict(lr=lr, betas=betas, eps=eps, initial_accumulator=initial_accumulator)
        super(Yogi, self).__init__(params, defaults)

    def step(self, closure=None):
        loss = None if closure is None else closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.data
                if grad.is_sparse:
                    raise RuntimeError("Yogi does not support sparse gradients, please consider "
                                       "SparseAdam instead")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = nn.init.constant_(torch.empty_like(p.data, memory_format=torch.preserve_format), group["initial_accumulator"])
                    state["exp_avg_sq"] = nn.init.constant_(torch.empty_like(p.data, memory_format=torch.preserve_format), group["initial_accumulator"])
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                beta1, beta2 = group["betas"]
                state["step"] += 1
                bias_correction1 = 1 - beta1 ** state["step"]
                bias_correction2 = 1 - beta2 ** state["step"]
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                grad_squared = grad.mul(grad)
                exp_avg_sq.addcmul_(torch.sign(exp_avg_sq - grad_squared), grad_squared,
                                    value=-(1 - beta2))
                denom = (exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(group["eps"])
                p.data.addcdiv_(exp_avg, denom, value=-group["lr"] / bias_correction1)
        return loss


class Lookahead(Optimizer):
    def __init__(self, optimizer, k=5, alpha=0.5):
        self.optimizer, self.k, self.alpha = optimizer, k, alpha
        self._optimizer_step_pre_hooks = {}
        self._optimizer_step_post_hooks = {}
        self.param_groups = self.optimizer.param_groups
        self.state = self.optimizer.state
        self.defaults = self.optimizer.defaults
        self.slow_state = {}
        for group in self.param_groups:
            group["counter"] = 0

    def step(self, closure=None):
        loss = self.optimizer.step(closure=closure)
        for group in self.param_groups:
            if group["counter"] == 0:
                for fast in group["params"]:
                    slow = self.slow_state.setdefault(fast, fast.detach().clone())
                    slow.add_(fast.data - slow, alpha=self.alpha)
                    fast.data.copy_(slow)
            group["counter"] = (group["counter"] + 1) % self.k
        return loss


def rosenbrock(tensor):
    x, y = tensor
    return (1 - x) ** 2 + 100 * (y - x ** 2) ** 2


def beale(tensor):
    x, y = tensor
    return (1.5 - x + x * y) ** 2 + (2.25 - x + x * y ** 2) ** 2 + (2.625 - x + x * y ** 3) ** 2


for name, ctor in [("AdamP", lambda p: AdamP(p, lr=0.01, betas=(0.9, 0.95), eps=1e-3)),
                   ("Yogi", lambda p: Yogi(p, lr=0.1)),
                   ("Lookahead(Yogi)", lambda p: Lookahead(Yogi(p, lr=0.1), k=3))]:
    for func in (rosenbrock, beale):
        x = torch.tensor([1.5, 1.5], dtype=torch.float64, requires_grad=True)
        optimizer = ctor([x])
        for i in range(60):
            optimizer.zero_grad()
            f = func(x)
            f.backward(retain_graph=True, create_graph=True)
            optimizer.step()
        print(name, func.__name__, "%.6f" % f.item(), [round(v, 5) for v in x.tolist()],
              x.grad.requires_grad, x.grad.grad_fn is not None)
    print(type(optimizer).__name__, sorted(optimizer.state[x].keys()))


def make_dataset(seed=42):
    rng = np.random.RandomState(seed)
    X = rng.randn(100, 2) * 2
    X[:50] -= 2
    X[50:] += 2
    Y = np.array([0] * 50 + [1] * 50).reshape(100, 1)
    return torch.Tensor(X), torch.Tensor(Y)


class LogisticRegression(nn.Module):
    def __init__(self):
        super(LogisticRegression, self).__init__()
        self.linear1 = nn.Linear(2, 4)
        self.linear2 = nn.Linear(4, 1)

    def forward(self, x):
        return torch.sigmoid(self.linear2(torch.relu(self.linear1(x))))


x_data, y_data = make_dataset()
model = LogisticRegression()
rng = np.random.RandomState(0)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, size=tuple(p.shape)).astype(np.float32)))
loss_fn = nn.BCELoss()
optimizer = AdamP(model.parameters(), lr=0.045, weight_decay=1e-3)
for i in range(30):
    loss = loss_fn(model(x_data), y_data)
    optimizer.zero_grad()
    loss.backward(create_graph=True)
    if i == 0:
        g = model.linear1.weight.grad
        print(g.shape, g.stride(), g.is_contiguous(), g.view(g.size(0), -1).shape)
    optimizer.step()
    if i % 10 == 0:
        print(i, round(loss.item(), 3))
print(optimizer)

# state_dict round trip (tests/test_optimizer.py)
w0 = np.random.RandomState(3).randn(10, 5)
b0 = np.random.RandomState(4).randn(10)
inp = torch.tensor(np.random.RandomState(5).randn(5))


def make():
    weight = torch.tensor(w0, requires_grad=True)
    bias = torch.tensor(b0, requires_grad=True)
    return weight, bias, Yogi([weight, bias], lr=1e-3)


def fn(optimizer, weight, bias):
    optimizer.zero_grad()
    loss = (weight.mv(inp) + bias).pow(2).sum()
    loss.backward()
    return loss


weight, bias, optimizer = make()
for _ in range(5):
    optimizer.step(lambda: fn(optimizer, weight, bias))
weight_c, bias_c, optimizer_c = make()
with torch.no_grad():
    weight_c.copy_(weight)
    bias_c.copy_(bias)
optimizer_c.load_state_dict(copy.deepcopy(optimizer.state_dict()))
for _ in range(5):
    optimizer.step(lambda: fn(optimizer, weight, bias))
    optimizer_c.step(lambda: fn(optimizer_c, weight_c, bias_c))
print(torch.equal(weight, weight_c), torch.equal(bias, bias_c), optimizer_c.state_dict()["state"][0]["step"])

# argument validation and a sparse parameter (tests/test_param_validation.py)
for bad in (dict(lr=-0.1), dict(betas=(1.1, 0.99))):
    try:
        AdamP([torch.randn(2, requires_grad=True)], **bad)
    except ValueError as e:
        print("ValueError:", e)
for ctor in (Yogi, AdamP, torch.optim.Adam, torch.optim.RMSprop):
    param = torch.randn(1, 1).to_sparse().requires_grad_(True)
    optimizer = ctor([param])
    optimizer.zero_grad()
    optimizer.step()
    param.grad = torch.randn(1, 1).to_sparse()
    try:
        optimizer.step()
    except RuntimeError as e:
        print(type(e).__name__ + ":", e)
