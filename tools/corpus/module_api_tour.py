"""The nn.Module API tutorials lean on: registration, traversal, buffers, modes, hooks, freezing, repr."""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)
        self.norm = nn.BatchNorm1d(n_out)
        self.drop = nn.Dropout(0.25)
        self.register_buffer('calls', torch.zeros((), dtype=torch.long))
        self.register_buffer('scratch', torch.ones(2), persistent=False)
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x):
        self.calls += 1
        return self.drop(torch.relu(self.norm(self.fc(x)))) * self.scale

    def extra_repr(self):
        return 'custom=yes'


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(4, 8), Block(8, 8)])
        self.heads = nn.ModuleDict({'cls': nn.Linear(8, 3), 'reg': nn.Linear(8, 1)})
        self.act = nn.Identity()

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return {k: head(self.act(x)) for k, head in self.heads.items()}


torch.manual_seed(0)
net = Net()
print(net)
print([n for n, _ in net.named_children()])
print([n for n, _ in net.named_modules()])
print([(n, tuple(p.shape)) for n, p in net.named_parameters()])
print([n for n, _ in net.named_buffers()])
print(list(net.state_dict().keys()))
print(sum(p.numel() for p in net.parameters()), sum(p.numel() for p in net.parameters() if p.requires_grad))
print(net.training, net.blocks[0].training)
net.eval()
print(net.training, net.blocks[0].drop.training)
net.train()
print(net.blocks[1].norm.training)
out = net(torch.ones(5, 4))
print({k: v.shape for k, v in out.items()})
print(net.blocks[0].calls, net.blocks[0].norm.num_batches_tracked)
print(net.get_submodule('blocks.1.fc'))
print(net.get_parameter('heads.cls.bias').shape)
print(net.get_buffer('blocks.0.calls'))

for p in net.blocks.parameters():
    p.requires_grad = False
print('trainable after freezing', sum(p.numel() for p in net.parameters() if p.requires_grad))
net.blocks.requires_grad_(True)
print('trainable after unfreezing', sum(p.numel() for p in net.parameters() if p.requires_grad))

shapes = []
hook = net.blocks[0].fc.register_forward_hook(lambda m, inp, out: shapes.append((inp[0].shape, out.shape)))
pre = net.blocks[0].register_forward_pre_hook(lambda m, inp: None)
net(torch.ones(3, 4))
print('forward hook', shapes)
hook.remove()
pre.remove()
net(torch.ones(3, 4))
print('hook removed', len(shapes))


def count_linear(m):
    if isinstance(m, nn.Linear):
        count_linear.n += 1


count_linear.n = 0
net.apply(count_linear)
print('linear layers', count_linear.n)

net.zero_grad()
out = net(torch.ones(3, 4))
(out['cls'].sum() + out['reg'].sum()).backward()
print('grads exist', all(p.grad is not None for p in net.parameters()))
net.zero_grad()
print('set_to_none', all(p.grad is None for p in net.parameters()))
net.zero_grad(set_to_none=False)
print('kept as zeros', all(p.grad is None for p in net.parameters()))

seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
print(seq[0], seq[-1], len(seq), seq[:2])
seq.append(nn.Sigmoid())
print(len(seq), seq[-1])
named = nn.Sequential()
named.add_module('first', nn.Linear(2, 2))
named.add_module('act', nn.Tanh())
print(named, named.first)
from collections import OrderedDict
od = nn.Sequential(OrderedDict([('conv', nn.Linear(1, 1)), ('out', nn.Softmax(dim=1))]))
print(od)
print(isinstance(net.blocks[0].scale, nn.Parameter), isinstance(net.blocks[0].scale, torch.Tensor))
print(nn.Parameter(torch.zeros(2)), nn.Parameter(torch.zeros(2), requires_grad=False))
net.heads['extra'] = nn.Linear(8, 2)
print(list(net.heads.keys()), 'cls' in net.heads, len(net.heads))
net.blocks.append(Block(8, 8))
print(len(net.blocks), type(net.blocks[-1]).__name__)
del net.heads['extra']
print(list(net.heads))
sd = net.state_dict()
fresh = Net()
missing = fresh.load_state_dict({k: v for k, v in sd.items() if not k.startswith('blocks.2')}, strict=False)
print('missing', missing.missing_keys, 'unexpected', missing.unexpected_keys)
try:
    fresh.load_state_dict({'nope': torch.zeros(1)})
except RuntimeError as e:
    print('strict load: RuntimeError', 'Unexpected key(s)' in str(e), 'Missing key(s)' in str(e))
net.float()
net.double()
print(net.heads['cls'].weight.dtype)
net.to(torch.float32)
print(net.heads['cls'].weight.dtype, next(net.parameters()).device)
