import math
import copy
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(42)

class Identity(nn.Module):
    def forward(self, x):
        return x

class BaseNetwork(nn.Module):
    def __init__(self, act_fn, input_size=784, num_classes=10, hidden_sizes=[512, 256, 256, 128]):
        super().__init__()
        layers = []
        layer_sizes = [input_size] + hidden_sizes
        for layer_index in range(1, len(layer_sizes)):
            layers += [nn.Linear(layer_sizes[layer_index - 1], layer_sizes[layer_index]), act_fn]
        layers += [nn.Linear(layer_sizes[-1], num_classes)]
        self.layers = nn.ModuleList(layers)
        self.config = {"act_fn": act_fn.__class__.__name__, "input_size": input_size, "num_classes": num_classes, "hidden_sizes": hidden_sizes}

    def forward(self, x):
        x = x.view(x.size(0), -1)
        for l in self.layers:
            x = l(x)
        return x

def const_init(model, fill=0.0):
    for name, param in model.named_parameters():
        param.data.fill_(fill)

def const_variance_init(model, std=0.01):
    for name, param in model.named_parameters():
        param.data.normal_(mean=0.0, std=std)

def xavier_init(model):
    for name, param in model.named_parameters():
        if name.endswith(".bias"):
            param.data.fill_(0)
        else:
            bound = math.sqrt(6) / math.sqrt(param.shape[0] + param.shape[1])
            param.data.uniform_(-bound, bound)

def kaiming_init(model):
    for name, param in model.named_parameters():
        if name.endswith(".bias"):
            param.data.fill_(0)
        elif name.startswith("layers.0"):
            param.data.normal_(0, 1 / math.sqrt(param.shape[1]))
        else:
            param.data.normal_(0, math.sqrt(2) / math.sqrt(param.shape[1]))

imgs = torch.cos(torch.arange(256 * 784, dtype=torch.float64) * 0.001).float().reshape(256, 1, 28, 28)
labels = torch.arange(256) % 10

def grad_stats(net):
    net.zero_grad()
    preds = net(imgs)
    loss = F.cross_entropy(preds, labels)
    loss.backward()
    grads = {name: params.grad.view(-1) for name, params in net.named_parameters() if "weight" in name}
    net.zero_grad()
    return grads

def activation_stats(net):
    feats = imgs.view(imgs.shape[0], -1)
    activations = {}
    with torch.no_grad():
        for layer_index, layer in enumerate(net.layers):
            feats = layer(feats)
            if isinstance(layer, nn.Linear):
                activations[f"Layer {layer_index}"] = feats.view(-1)
    return activations

def weight_stats(net):
    weights = {}
    for name, param in net.named_parameters():
        if name.endswith(".bias"):
            continue
        key_name = f"Layer {name.split('.')[1]}"
        weights[key_name] = param.detach().view(-1)
    return weights

model = BaseNetwork(act_fn=Identity(), hidden_sizes=[64, 64, 32])
const_init(model, fill=0.005)
g = grad_stats(model)
for k, v in g.items():
    print(k, f"{v.std().item():.3e}", v.abs().max().item() > 0)
a = activation_stats(model)
for key in sorted(a.keys()):
    print(f"{key} - Variance: {torch.var(a[key]).item():.4e}")

# deterministic "random" init via a generator would differ: check shapes/statistics loosely
const_variance_init(model, std=0.01)
w = weight_stats(model)
for key in sorted(w.keys()):
    print(key, w[key].shape, w[key].dtype, abs(w[key].std().item() - 0.01) < 0.002)
xavier_init(model)
w = weight_stats(model)
for key in sorted(w.keys()):
    bound = math.sqrt(6) / math.sqrt(sum(model.layers[int(key.split()[1])].weight.shape))
    print(key, bool(w[key].abs().max() <= bound), round(bound, 5))

nn.init.constant_(model.layers[0].weight, 0.01)
nn.init.zeros_(model.layers[0].bias)
print(model.layers[0].weight[0, :4], model.layers[0].bias[:3])
print(nn.init.calculate_gain("relu"), nn.init.calculate_gain("tanh"), nn.init.calculate_gain("leaky_relu", 0.2), nn.init.calculate_gain("selu"))
t = torch.empty(3, 5)
print(nn.init.eye_(t))
print(nn.init.dirac_(torch.empty(2, 2, 3)))
print(nn.init._calculate_fan_in_and_fan_out(torch.empty(16, 8, 3, 3)))
print(nn.init.ones_(torch.empty(2, 2)).requires_grad)

# Optimizers written by hand
class OptimizerTemplate:
    def __init__(self, params, lr):
        self.params = list(params)
        self.lr = lr

    def zero_grad(self):
        for p in self.params:
            if p.grad is not None:
                p.grad.detach_()
                p.grad.zero_()

    @torch.no_grad()
    def step(self):
        for p in self.params:
            if p.grad is None:
                continue
            self.update_param(p)

    def update_param(self, p):
        raise NotImplementedError

class SGD(OptimizerTemplate):
    def __init__(self, params, lr):
        super().__init__(params, lr)

    def update_param(self, p):
        p_update = -self.lr * p.grad
        p.add_(p_update)

class SGDMomentum(OptimizerTemplate):
    def __init__(self, params, lr, momentum=0.0):
        super().__init__(params, lr)
        self.momentum = momentum
        self.param_momentum = {p: torch.zeros_like(p.data) for p in self.params}

    def update_param(self, p):
        self.param_momentum[p] = (1 - self.momentum) * p.grad + self.momentum * self.param_momentum[p]
        p_update = -self.lr * self.param_momentum[p]
        p.add_(p_update)

class Adam(OptimizerTemplate):
    def __init__(self, params, lr, beta1=0.9, beta2=0.999, eps=1e-8):
        super().__init__(params, lr)
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.param_step = {p: 0 for p in self.params}
        self.param_momentum = {p: torch.zeros_like(p.data) for p in self.params}
        self.param_2nd_momentum = {p: torch.zeros_like(p.data) for p in self.params}

    def update_param(self, p):
        self.param_step[p] += 1
        self.param_momentum[p] = (1 - self.beta1) * p.grad + self.beta1 * self.param_momentum[p]
        self.param_2nd_momentum[p] = (1 - self.beta2) * (p.grad) ** 2 + self.beta2 * self.param_2nd_momentum[p]
        bias_correction_1 = 1 - self.beta1 ** self.param_step[p]
        bias_correction_2 = 1 - self.beta2 ** self.param_step[p]
        p_2nd_mom = self.param_2nd_momentum[p] / bias_correction_2
        p_mom = self.param_momentum[p] / bias_correction_1
        p_lr = self.lr / (torch.sqrt(p_2nd_mom) + self.eps)
        p_update = -p_lr * p_mom
        p.add_(p_update)

def pathological_curve_loss(w1, w2):
    x1_loss = torch.tanh(w1) ** 2 + 0.01 * torch.abs(w1)
    x2_loss = torch.sigmoid(w2)
    return x1_loss + x2_loss

def train_curve(optimizer_func, curve_func=pathological_curve_loss, num_updates=100, init=[5, 5]):
    weights = nn.Parameter(torch.FloatTensor(init), requires_grad=True)
    optimizer = optimizer_func([weights])
    list_points = []
    for _ in range(num_updates):
        loss = curve_func(weights[0], weights[1])
        list_points.append(torch.cat([weights.data.detach(), loss.unsqueeze(dim=0).detach()], dim=0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    points = torch.stack(list_points, dim=0).numpy()
    return points

SGD_points = train_curve(lambda params: SGD(params, lr=10), num_updates=20)
SGDMom_points = train_curve(lambda params: SGDMomentum(params, lr=10, momentum=0.9))
Adam_points = train_curve(lambda params: Adam(params, lr=1))
for name, pts in [("SGD", SGD_points), ("SGDMom", SGDMom_points), ("Adam", Adam_points)]:
    print(name, pts.shape, pts.dtype, pts[-1].round(4), pts[::5, 2].round(4))

# compare hand-written against torch.optim
for hand, ref in [(lambda p: SGDMomentum(p, lr=0.1, momentum=0.0), lambda p: torch.optim.SGD(p, lr=0.1)),
                  (lambda p: Adam(p, lr=0.1), lambda p: torch.optim.Adam(p, lr=0.1))]:
    a = train_curve(hand, num_updates=20, init=[1.5, -0.5])
    b = train_curve(ref, num_updates=20, init=[1.5, -0.5])
    print(abs(a - b).max() < 1e-4, b[-1].round(5))

def bivar_gaussian(w1, w2, x_mean=0.0, y_mean=0.0, x_sig=1.0, y_sig=1.0):
    norm = 1 / (2 * math.pi * x_sig * y_sig)
    x_exp = (-1 * (w1 - x_mean) ** 2) / (2 * x_sig ** 2)
    y_exp = (-1 * (w2 - y_mean) ** 2) / (2 * y_sig ** 2)
    return norm * torch.exp(x_exp + y_exp)

def comb_func(w1, w2):
    z = -bivar_gaussian(w1, w2, x_mean=1.0, y_mean=-0.5, x_sig=0.2, y_sig=0.2)
    z -= bivar_gaussian(w1, w2, x_mean=-1.0, y_mean=0.5, x_sig=0.2, y_sig=0.2)
    z -= bivar_gaussian(w1, w2, x_mean=-0.5, y_mean=-0.8, x_sig=0.2, y_sig=0.2)
    return z

for name, f in [("SGD", lambda p: SGD(p, lr=0.5)), ("SGDMom", lambda p: SGDMomentum(p, lr=1, momentum=0.9)), ("Adam", lambda p: Adam(p, lr=0.2))]:
    pts = train_curve(f, comb_func, init=[0, 0])
    print(name, pts[-1].round(4))
x = torch.linspace(-2, 2, 5)
xx, yy = torch.meshgrid(x, x, indexing="xy")
print(comb_func(xx, yy))
p = nn.Parameter(torch.FloatTensor([1, 2]))
print(p, torch.FloatTensor(2, 3).shape, torch.FloatTensor([[1, 2]]).dtype)
