"""Snippets of vahidk/EffectivePyTorch's README run together: autograd.grad basics, broadcasting
(with a Merge module), operator overloading vs the torch functions, batch gather (loop, jit.script
and vectorised), numerically stable softmax / cross entropy and its gradient, and the legacy
ScriptModule + script_method checkerboard fit.

Adapted: `.cuda()` removed; random inputs drawn from numpy (tensors from torch.rand in the README);
the checkerboard is 16x16 with 64 channels and 15 Adam steps (512x512, 256 channels, 500 steps);
printed values are rounded summaries; the convolutions before BatchNorm have no bias (its gradient
is rounding noise, which Adam's first steps amplify into library-dependent values).
"""
import warnings
import numpy as np
import torch

rng = np.random.RandomState(0)
T = lambda *shape: torch.from_numpy(rng.rand(*shape).astype(np.float32))

x = torch.tensor(1.0, requires_grad=True)
def u(x):
  return x * x
def g(u):
  return -u
print(torch.autograd.grad(g(u(x)), x)[0])

a = torch.tensor([[1., 2.], [3., 4.]])
b = torch.tensor([[1.], [2.]])
print(a + b)
a, b = T(5, 3, 5), T(5, 1, 6)
class Merge(torch.nn.Module):
    def __init__(self, in_features1, in_features2, out_features, activation=None):
        super().__init__()
        self.linear1 = torch.nn.Linear(in_features1, out_features)
        self.linear2 = torch.nn.Linear(in_features2, out_features)
        self.activation = activation
    def forward(self, a, b):
        pa = self.linear1(a)
        pb = self.linear2(b)
        c = pa + pb
        if self.activation is not None:
            c = self.activation(c)
        return c
merge = Merge(5, 6, 10, torch.nn.functional.relu)
linear = torch.nn.Linear(11, 10)
with torch.no_grad():
    for p in list(merge.parameters()) + list(linear.parameters()):
        p.copy_(torch.from_numpy(rng.randn(*p.shape).astype(np.float32) * 0.3))
tiled_b = b.repeat([1, 3, 1])
c = torch.cat([a, tiled_b], 2)
d = torch.nn.functional.relu(linear(c))
print(d.shape, merge(a, b).shape, round(merge(a, b).sum().item(), 3))
a = torch.tensor([[1.], [2.]])
b = torch.tensor([1., 2.])
print(torch.sum(a + b), torch.sum(a + b, 0))

x = torch.from_numpy(rng.randint(1, 9, (4, 4)))
y = torch.from_numpy(rng.randint(1, 9, (4, 4)))
pairs = [(-x, torch.neg(x)), (x + y, torch.add(x, y)), (x - y, torch.sub(x, y)), (x * y, torch.mul(x, y)),
         (x / y, torch.div(x, y)), (x // y, torch.floor_divide(x, y)), (x % y, torch.remainder(x, y)),
         (x ** y, torch.pow(x, y)), (x @ y, torch.matmul(x, y)), (x > y, torch.gt(x, y)), (x >= y, torch.ge(x, y)),
         (x < y, torch.lt(x, y)), (x <= y, torch.le(x, y)), (abs(x), torch.abs(x)), (x & y, torch.bitwise_and(x, y)),
         (x | y, torch.bitwise_or(x, y)), (x ^ y, torch.bitwise_xor(x, y)), (~x, torch.bitwise_not(x)),
         (x == y, torch.eq(x, y)), (x != y, torch.ne(x, y))]
for p, q in pairs:
    print(p.dtype, torch.equal(p, q), round(p.double().sum().item(), 4))

def batch_gather(tensor, indices):
    output = []
    for i in range(tensor.size(0)):
        output += [tensor[i][indices[i]]]
    return torch.stack(output)
@torch.jit.script
def batch_gather_jit(tensor, indices):
    output = []
    for i in range(tensor.size(0)):
        output += [tensor[i][indices[i]]]
    return torch.stack(output)
def batch_gather_vec(tensor, indices):
    shape = list(tensor.shape)
    flat_first = torch.reshape(
        tensor, [shape[0] * shape[1]] + shape[2:])
    offset = torch.reshape(
        torch.arange(shape[0]) * shape[1],
        [shape[0]] + [1] * (len(indices.shape) - 1))
    output = flat_first[indices + offset]
    return output
t = T(4, 6, 3).requires_grad_()
idx = torch.from_numpy(rng.randint(0, 6, (4, 5)))
ga, gb, gc = batch_gather(t, idx), batch_gather_jit(t, idx), batch_gather_vec(t, idx)
print(ga.shape, torch.allclose(ga, gb), torch.allclose(ga, gc))
(gc * torch.arange(3.0)).sum().backward()
print(t.grad.sum(dim=2))

def softmax(logits):
    exp = torch.exp(logits - torch.max(logits))
    return exp / torch.sum(exp)
def unstable_softmax(logits):
    exp = torch.exp(logits)
    return exp / torch.sum(exp)
print(unstable_softmax(torch.tensor([1000., 0.])).numpy(), softmax(torch.tensor([1000., 0.])).numpy())
def softmax_cross_entropy(labels, logits, dim=-1):
    scaled_logits = logits - torch.max(logits)
    normalized_logits = scaled_logits - torch.logsumexp(scaled_logits, dim)
    return -torch.sum(labels * normalized_logits)
labels = torch.tensor([0.5, 0.5])
logits = torch.tensor([1000., 0.])
print(-torch.sum(labels * torch.log(softmax(logits))), softmax_cross_entropy(labels, logits))
logits.requires_grad_(True)
xe = softmax_cross_entropy(labels, logits)
print(torch.autograd.grad(xe, logits)[0].numpy())

def grid(width, height):
  hrange = torch.arange(width).unsqueeze(0).repeat([height, 1]).div(width)
  vrange = torch.arange(height).unsqueeze(1).repeat([1, width]).div(height)
  return torch.stack([hrange, vrange], 0)
def checker(width, height, freq):
  hrange = torch.arange(width).reshape([1, width]).mul(freq / width / 2.0).fmod(1.0).gt(0.5)
  vrange = torch.arange(height).reshape([height, 1]).mul(freq / height / 2.0).fmod(1.0).gt(0.5)
  return hrange.logical_xor(vrange).float()
inputs = grid(16, 16).unsqueeze(0)
targets = checker(16, 16, 4).unsqueeze(0).unsqueeze(1)
print(inputs.dtype, targets.sum())
with warnings.catch_warnings():
  warnings.simplefilter("ignore", DeprecationWarning)     # (script_method is deprecated)
  class Net(torch.jit.ScriptModule):
    def __init__(self):
      super().__init__()
      self.net = torch.nn.Sequential(
        torch.nn.Conv2d(2, 64, 1, bias=False), torch.nn.BatchNorm2d(64), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 64, 1, bias=False), torch.nn.BatchNorm2d(64), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 1, 1))
    @torch.jit.script_method
    def forward(self, x):
      return self.net(x)
net = Net()
with torch.no_grad():
    for p in net.parameters():
        scale = 1 / np.sqrt(p.shape[1]) if p.dim() > 1 else 0.1
        p.copy_(torch.from_numpy((rng.randn(*p.shape) * scale).astype(np.float32)))
loss_fn = torch.nn.MSELoss()
opt = torch.optim.Adam(net.parameters(), 0.001)
for i in range(15):
  opt.zero_grad()
  outputs = net(inputs)
  loss = loss_fn(outputs, targets)
  loss.backward()
  opt.step()
  if i % 5 == 4:
    print(i, round(loss.item(), 4))
