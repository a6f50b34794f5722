"""thop-style FLOP/parameter counting with forward hooks and float64 total_ops buffers, activation
capture by name with hook removal, pre-hooks and hooks that replace inputs/outputs, with_kwargs
hooks, prepend ordering, full backward hooks reporting grad_input shapes and grad_output norms."""
import numpy as np
import torch
import torch.nn as nn
from collections import OrderedDict

def count_conv2d(m, x, y):
    x = x[0]
    cin = m.in_channels
    kh, kw = m.kernel_size
    batch_size = x.size()[0]
    out_h = y.size(2)
    out_w = y.size(3)
    kernel_ops = kh * kw * cin // m.groups
    bias_ops = 1 if m.bias is not None else 0
    ops_per_element = kernel_ops + bias_ops
    output_elements = batch_size * out_w * out_h * m.out_channels
    total_ops = output_elements * ops_per_element
    m.total_ops += torch.DoubleTensor([int(total_ops)])

def count_bn(m, x, y):
    x = x[0]
    nelements = x.numel()
    total_ops = 2 * nelements
    m.total_ops += torch.DoubleTensor([int(total_ops)])

def count_relu(m, x, y):
    m.total_ops += torch.DoubleTensor([int(x[0].numel())])

def count_linear(m, x, y):
    total_mul = m.in_features
    num_elements = y.numel()
    m.total_ops += torch.DoubleTensor([int(total_mul * num_elements)])

def count_adap_avgpool(m, x, y):
    kernel = torch.Tensor([*(x[0].shape[2:])]) // torch.Tensor(list((m.output_size,))).squeeze()
    total_add = torch.prod(kernel)
    total_div = 1
    kernel_ops = total_add + total_div
    num_elements = y.numel()
    m.total_ops += torch.DoubleTensor([int(kernel_ops * num_elements)])

register_hooks = {nn.Conv2d: count_conv2d, nn.BatchNorm2d: count_bn, nn.ReLU: count_relu,
                  nn.Linear: count_linear, nn.AdaptiveAvgPool2d: count_adap_avgpool}

def profile(model, input_size):
    handler_collection = []
    def add_hooks(m):
        if len(list(m.children())) > 0:
            return
        m.register_buffer('total_ops', torch.zeros(1, dtype=torch.float64))
        m.register_buffer('total_params', torch.zeros(1, dtype=torch.float64))
        for p in m.parameters():
            m.total_params += torch.DoubleTensor([p.numel()])
        fn = register_hooks.get(type(m))
        if fn is not None:
            handler = m.register_forward_hook(fn)
            handler_collection.append(handler)
    model.eval()
    model.apply(add_hooks)
    x = torch.zeros(input_size)
    with torch.no_grad():
        model(x)
    total_ops = 0
    total_params = 0
    for m in model.modules():
        if len(list(m.children())) > 0:
            continue
        total_ops += m.total_ops
        total_params += m.total_params
    total_ops = total_ops.item()
    total_params = total_params.item()
    for handler in handler_collection:
        handler.remove()
    return total_ops, total_params

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ('conv1', nn.Conv2d(3, 16, 3, padding=1, bias=False)),
            ('bn1', nn.BatchNorm2d(16)),
            ('relu1', nn.ReLU(inplace=True)),
            ('conv2', nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16)),
            ('relu2', nn.ReLU()),
        ]))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)
    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))

model = Net()
flops, params = profile(model, (1, 3, 32, 32))
print(f"FLOPs: {flops:.0f} params: {params:.0f}")
print("%.2fM" % (flops / 1e6), type(flops).__name__)
print(model.features.conv1.total_ops, model.features.conv1.total_ops.dtype)
print(len(model.state_dict()), [k for k in model.state_dict() if 'total' in k][:3])

# activation counting with named hooks and hook removal
activations = {}
def get_activation(name):
    def hook(model, input, output):
        activations[name] = output.detach()
    return hook
handles = []
for name, m in model.named_modules():
    if isinstance(m, (nn.Conv2d, nn.Linear)):
        handles.append(m.register_forward_hook(get_activation(name)))
rs = np.random.RandomState(0)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rs.randn(*p.shape).astype(np.float32) * 0.3))
x = torch.from_numpy(rs.randn(2, 3, 32, 32).astype(np.float32))
out = model(x)
for k, v in activations.items():
    print(k, tuple(v.shape), v.numel())
print("total activations:", sum(v.numel() for v in activations.values()))
for h in handles:
    h.remove()
activations.clear()
model(x)
print(len(activations))

# pre-hooks that modify inputs, hooks that modify outputs, with_kwargs
def pre(m, args):
    return (args[0] * 0,)
h = model.fc.register_forward_pre_hook(pre)
print(torch.equal(model(x), model.fc.bias.expand(2, 10)))
h.remove()
def post(m, args, out):
    return out + 1
h = model.fc.register_forward_hook(post)
print(torch.allclose(model(x), out + 1))
h.remove()
class Scale(nn.Module):
    def forward(self, x, scale=1.0):
        return x * scale
s = Scale()
def kpre(m, args, kwargs):
    kwargs = dict(kwargs); kwargs['scale'] = 3.0
    return args, kwargs
def kpost(m, args, kwargs, output):
    print("kwargs seen:", kwargs)
    return output
s.register_forward_pre_hook(kpre, with_kwargs=True)
s.register_forward_hook(kpost, with_kwargs=True)
print(s(torch.ones(2), scale=2.0))
# hook order with prepend
order = []
lin = nn.Linear(2, 2)
lin.register_forward_hook(lambda m, i, o: order.append('a'))
lin.register_forward_hook(lambda m, i, o: order.append('b'), prepend=True)
lin(torch.ones(1, 2)); print(order)
# full backward hooks: grad norms per module
grads = {}
def bhook(name):
    def fn(module, grad_input, grad_output):
        grads[name] = (tuple(g.shape) if g is not None else None for g in grad_input), grad_output[0].norm().item()
    return fn
for name, m in model.named_modules():
    if isinstance(m, (nn.Linear, nn.Conv2d)):
        m.register_full_backward_hook(bhook(name))
model.train()
y = model(x)
y.sum().backward()
for k in sorted(grads):
    gi, go = grads[k]
    print(k, list(gi), round(go, 4))
