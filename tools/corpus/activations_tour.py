"""Activation modules and their functional forms on one fixed input, with the gradients they pass back."""
import torch
import torch.nn as nn
import torch.nn.functional as F

x = torch.linspace(-3.0, 3.0, 7)
modules = [nn.ReLU(), nn.ReLU6(), nn.LeakyReLU(0.1), nn.ELU(), nn.ELU(alpha=0.5), nn.SELU(), nn.CELU(),
           nn.GELU(), nn.GELU(approximate='tanh'), nn.SiLU(), nn.Mish(), nn.Sigmoid(), nn.Tanh(),
           nn.Softplus(), nn.Softplus(beta=2.0, threshold=1.0), nn.Softsign(), nn.Hardtanh(),
           nn.Hardtanh(-2.0, 2.0), nn.Hardswish(), nn.Hardsigmoid(), nn.Tanhshrink(),
           nn.Softshrink(0.5), nn.Hardshrink(0.5), nn.Threshold(0.5, -1.0), nn.LogSigmoid()]
for m in modules:
    print(m, m(x))

print(nn.Softmax(dim=0)(x))
print(nn.LogSoftmax(dim=0)(x))
print(nn.Softmin(dim=0)(x))
m2 = torch.tensor([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
print(nn.Softmax(dim=1)(m2), nn.Softmax(dim=-1))
print(nn.GLU()(torch.tensor([[1.0, 2.0, 0.0, -1.0]])))
prelu = nn.PReLU()
print(prelu, prelu.weight, prelu(x))
prelu3 = nn.PReLU(num_parameters=3, init=0.1)
print(prelu3(torch.tensor([[-1.0, -2.0, 3.0]])))
rrelu = nn.RReLU()
rrelu.eval()
print(rrelu(x))

print(F.relu(x), F.relu6(x * 3))
print(F.leaky_relu(x, negative_slope=0.2), F.elu(x), F.gelu(x), F.silu(x), F.mish(x))
print(F.softplus(x), F.hardtanh(x, -1.5, 1.5), F.logsigmoid(x), F.softsign(x))
print(F.hardswish(x), F.hardsigmoid(x), F.selu(x), F.celu(x, alpha=2.0))
print(torch.sigmoid(x), torch.tanh(x), torch.relu(x), x.sigmoid(), x.relu(), x.tanh())
print(F.threshold(x, 1.0, 0.0), F.glu(m2.repeat(1, 2), dim=1))

inp = torch.tensor([-1.0, -0.0, 0.5, 2.0], requires_grad=True)
for name, fn in [('relu', F.relu), ('leaky', lambda t: F.leaky_relu(t, 0.1)), ('elu', F.elu),
                 ('gelu', F.gelu), ('silu', F.silu), ('softplus', F.softplus), ('tanh', torch.tanh),
                 ('sigmoid', torch.sigmoid), ('hardtanh', F.hardtanh), ('mish', F.mish),
                 ('hardswish', F.hardswish), ('selu', F.selu)]:
    inp.grad = None
    fn(inp).sum().backward()
    print(name, 'grad', inp.grad)

y = torch.tensor([-1.0, 2.0])
nn.ReLU(inplace=True)(y)
print('inplace relu', y, nn.ReLU(inplace=True))
z = torch.tensor([-1.0, 2.0])
F.relu_(z)
print(z, F.leaky_relu_(torch.tensor([-1.0, 1.0]), 0.5), torch.relu_(torch.tensor([-3.0])))
