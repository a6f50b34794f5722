"""Looking inside an nn.Module as pytorch-book chapter 4 does: the registries PyTorch 2 keeps in
plain dicts (_modules, _parameters, _buffers) and the state dict it keeps in an OrderedDict."""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.param1 = nn.Parameter(torch.arange(6.0).view(2, 3))
        self.submodel1 = nn.Linear(3, 4)
        self.register_buffer("steps", torch.tensor(0))

    def forward(self, x):
        return self.submodel1(x.mm(self.param1))


net = Net()
with torch.no_grad():
    net.submodel1.weight.fill_(0.5)
    net.submodel1.bias.zero_()
print(net)
print(net._modules)
print(net._parameters)
print(net._buffers)
print(type(net._modules).__name__, type(net._parameters).__name__, type(net._buffers).__name__)
print(type(net.state_dict()).__name__, list(net.state_dict()))
print(type(net._forward_hooks).__name__, net._forward_hooks)

bn = nn.BatchNorm1d(2)
bn(torch.tensor([[1.0, 2.0], [3.0, 6.0]]))
print(bn._buffers)
print("_modules: ", nn.Linear(2, 2)._modules)
seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
print("_modules: ", seq._modules)
for name, module in seq._modules.items():
    print(name, module)
print(net(torch.ones(1, 2)))
