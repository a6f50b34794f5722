"""d2l 'Numerical Stability and Initialization': vanishing sigmoid gradients, exploding products, Xavier and fan sizes."""
import math

import torch
from torch import nn

x = torch.arange(-8.0, 8.0, 0.1, requires_grad=True)
y = torch.sigmoid(x)
y.backward(torch.ones_like(x))
print(x.shape, x.grad.max(), x.grad[0], x.grad[-1])
print('gradient at |x| > 6 is tiny:', bool((x.grad[(x.detach().abs() > 6)] < 0.0025).all()))

M = torch.ones(4, 4) * 1.5
prod = torch.eye(4)
for i in range(30):
    prod = prod @ M
print('product after 30 matmuls', prod[0, 0], prod.max() > 1e20)
M = torch.ones(4, 4) * 0.1
prod = torch.eye(4)
for i in range(30):
    prod = prod @ M
print('vanishing product', prod[0, 0], prod.max() < 1e-10)

big = torch.tensor([1000.0, 1001.0, 1002.0])
print('naive softmax', big.exp() / big.exp().sum())
print('stable softmax', torch.softmax(big, dim=0))
shifted = big - big.max()
print('shifted', shifted.exp() / shifted.exp().sum())
print('logsumexp', torch.logsumexp(big, dim=0), (big.exp().sum()).log())
print('log_softmax', torch.log_softmax(big, 0), torch.softmax(big, 0).log())
print('log1p vs log', torch.log1p(torch.tensor(1e-10)), torch.log(1 + torch.tensor(1e-10)))
print('expm1 vs exp', torch.expm1(torch.tensor(1e-10)), torch.exp(torch.tensor(1e-10)) - 1)
print('float16 overflow', torch.tensor(70000.0).half(), torch.tensor(1e-8).half())
print('float32 epsilon', torch.tensor(1.0) + 1e-8 == torch.tensor(1.0), torch.tensor(1.0, dtype=torch.float64) + 1e-8 == 1.0)
print('sigmoid extremes', torch.sigmoid(torch.tensor([-100.0, 100.0])), torch.tanh(torch.tensor([-50.0, 50.0])))
print('BCE with logits stable', nn.functional.binary_cross_entropy_with_logits(torch.tensor([100.0]), torch.tensor([0.0])))
print('softplus large', nn.functional.softplus(torch.tensor([100.0, -100.0])))

layer = nn.Linear(256, 128)
fan_in, fan_out = nn.init._calculate_fan_in_and_fan_out(layer.weight)
print('fans', fan_in, fan_out)
nn.init.xavier_uniform_(layer.weight)
bound = math.sqrt(6 / (fan_in + fan_out))
print('xavier uniform bound', round(bound, 4), layer.weight.abs().max().item() <= bound)
nn.init.xavier_normal_(layer.weight, gain=2.0)
print('xavier normal std close', abs(layer.weight.std().item() - 2 * math.sqrt(2 / (fan_in + fan_out))) < 0.01)
nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5))
print('default linear init bound', layer.weight.abs().max().item() <= 1 / math.sqrt(fan_in))
nn.init.kaiming_normal_(layer.weight, mode='fan_out', nonlinearity='relu')
print('kaiming normal std close', abs(layer.weight.std().item() - math.sqrt(2 / fan_out)) < 0.01)
print('gains', nn.init.calculate_gain('relu'), nn.init.calculate_gain('tanh'), nn.init.calculate_gain('leaky_relu', 0.2),
      nn.init.calculate_gain('sigmoid'), nn.init.calculate_gain('selu'), nn.init.calculate_gain('linear'))
conv_w = torch.empty(16, 3, 5, 5)
print('conv fans', nn.init._calculate_fan_in_and_fan_out(conv_w))
nn.init.uniform_(conv_w, -0.1, 0.1)
print('uniform range', conv_w.min().item() >= -0.1, conv_w.max().item() <= 0.1)
nn.init.normal_(conv_w, mean=1.0, std=0.01)
print('normal mean', round(conv_w.mean().item(), 1))
nn.init.constant_(conv_w, 0.3)
print('constant', conv_w.unique())
eye = torch.empty(3, 5)
nn.init.eye_(eye)
print(eye)
dirac = torch.empty(2, 2, 3)
nn.init.dirac_(dirac)
print(dirac)
nn.init.ones_(eye)
nn.init.zeros_(dirac)
print(eye.sum(), dirac.sum())
sparse = torch.empty(10, 4)
nn.init.sparse_(sparse, sparsity=0.5)
print('sparse zeros per column', (sparse == 0).sum(0))
o = torch.empty(4, 6)
nn.init.orthogonal_(o)
print('orthogonal rows', torch.allclose(o @ o.T, torch.eye(4), atol=1e-5))


def deep_std(init, depth=20, width=64):
    torch.manual_seed(0)
    h = torch.randn(512, width)
    for _ in range(depth):
        w = torch.empty(width, width)
        init(w)
        h = torch.tanh(h @ w.T)
    return h.std().item()


print('tanh activations stay alive with xavier:', deep_std(nn.init.xavier_normal_) > 0.1)
print('tanh activations vanish with tiny init:', deep_std(lambda w: nn.init.normal_(w, std=0.01)) < 1e-5)
