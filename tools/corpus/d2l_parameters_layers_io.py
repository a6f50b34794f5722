"""d2l 'builders' guide': parameter management, initialization, tied parameters, custom layers, file I/O."""
import os
import tempfile

import torch
from torch import nn
from torch.nn import functional as F

net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(1))
X = torch.ones(2, 4)
print(net(X).shape)
print(list(net[2].state_dict().keys()))
print(type(net[2].bias).__name__, net[2].bias.data.shape, net[2].weight.grad is None)
print([(name, param.shape) for name, param in net.named_parameters()])


def init_constant(module):
    if type(module) == nn.Linear:
        nn.init.constant_(module.weight, 1)
        nn.init.zeros_(module.bias)


net.apply(init_constant)
print(net[0].weight.data[0], net[0].bias.data[0])
print(net(X))


def init_42(module):
    if type(module) == nn.Linear:
        nn.init.constant_(module.weight, 42)


net[2].apply(init_42)
print(net[2].weight.data[0, :3])
net[0].weight.data[:] += 1
net[0].weight.data[0, 0] = 42
print(net[0].weight.data[0])

shared = nn.LazyLinear(8)
tied = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.LazyLinear(1))
tied(X)
print(tied[2].weight.data[0] == tied[4].weight.data[0])
tied[2].weight.data[0, 0] = 100
print(tied[2].weight.data[0] == tied[4].weight.data[0])
print(len(list(tied.parameters())), len(list(tied.named_parameters())))
print(len(list(tied.named_parameters(remove_duplicate=False))))


class CenteredLayer(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, X):
        return X - X.mean()


layer = CenteredLayer()
print(layer(torch.tensor([1.0, 2, 3, 4, 5])))
net = nn.Sequential(nn.LazyLinear(128), CenteredLayer())
print(abs(net(torch.rand(4, 8)).mean().item()) < 1e-5)


class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(in_units, units) * 0.1)
        self.bias = nn.Parameter(torch.zeros(units,))

    def forward(self, X):
        linear = torch.matmul(X, self.weight.data) + self.bias.data
        return F.relu(linear)


linear = MyLinear(5, 3)
print(linear.weight)
print(linear(torch.ones(2, 5)))
net = nn.Sequential(MyLinear(64, 8), MyLinear(8, 1))
print(net(torch.ones(2, 64)))

tmp = tempfile.mkdtemp()
x = torch.arange(4)
torch.save(x, os.path.join(tmp, 'x-file'))
x2 = torch.load(os.path.join(tmp, 'x-file'))
print(x2)
y = torch.zeros(4)
torch.save([x, y], os.path.join(tmp, 'x-files'))
x2, y2 = torch.load(os.path.join(tmp, 'x-files'))
print(x2, y2)
mydict = {'x': x, 'y': y}
torch.save(mydict, os.path.join(tmp, 'mydict'))
print(torch.load(os.path.join(tmp, 'mydict')))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.LazyLinear(256)
        self.output = nn.LazyLinear(10)

    def forward(self, x):
        return self.output(F.relu(self.hidden(x)))


net = MLP()
X = torch.arange(40.0).reshape(2, 20) / 40
Y = net(X)
torch.save(net.state_dict(), os.path.join(tmp, 'mlp.params'))
clone = MLP()
clone.load_state_dict(torch.load(os.path.join(tmp, 'mlp.params')))
print(clone.eval())
print(clone(X) == Y)
print(sorted(os.listdir(tmp)))
