# `higher`-style manual weight dicts: a functional module wrapper with fast weights by name
import torch
import torch.nn as nn
import torch.nn.functional as F
from collections import OrderedDict

torch.manual_seed(0)

class MetaModule(nn.Module):
    def meta_named_parameters(self, prefix='', recurse=True):
        gen = self._named_members(lambda module: module._parameters.items() if isinstance(module, MetaModule) else [],
                                  prefix=prefix, recurse=recurse)
        for elem in gen:
            yield elem

    def meta_parameters(self, recurse=True):
        for name, param in self.meta_named_parameters(recurse=recurse):
            yield param

    def get_subdict(self, params, key=None):
        if params is None:
            return None
        all_names = tuple(params.keys())
        if key is None or key == '':
            return params
        return OrderedDict([(name[len(key) + 1:], params[name]) for name in all_names if name.startswith(key + '.')])

class MetaLinear(nn.Linear, MetaModule):
    __doc__ = nn.Linear.__doc__
    def forward(self, input, params=None):
        if params is None:
            params = OrderedDict(self.named_parameters())
        bias = params.get('bias', None)
        return F.linear(input, params['weight'], bias)

class MetaSequential(nn.Sequential, MetaModule):
    def forward(self, input, params=None):
        for name, module in self._modules.items():
            if isinstance(module, MetaModule):
                input = module(input, params=self.get_subdict(params, name))
            elif isinstance(module, nn.Module):
                input = module(input)
        return input

def gradient_update_parameters(model, loss, params=None, step_size=0.5, first_order=False):
    if params is None:
        params = OrderedDict(model.meta_named_parameters())
    grads = torch.autograd.grad(loss, params.values(), create_graph=not first_order)
    updated_params = OrderedDict()
    for (name, param), grad in zip(params.items(), grads):
        updated_params[name] = param - step_size * grad
    return updated_params

model = MetaSequential(MetaLinear(3, 10), nn.ReLU(), MetaLinear(10, 2))
with torch.no_grad():
    for name, p in model.named_parameters():
        p.copy_(torch.sin(torch.arange(p.numel()).float() * 1.7).view_as(p) * 0.5)
print(model)
print([name for name, _ in model.meta_named_parameters()])
x = torch.linspace(-1, 1, 18).view(6, 3)
y = torch.tensor([0, 1, 0, 1, 1, 0])
for first_order in (False, True):
    model.zero_grad()
    params = None
    for step in range(2):
        inner = F.cross_entropy(model(x, params=params), y)
        params = gradient_update_parameters(model, inner, params=params, step_size=0.4, first_order=first_order)
    outer = F.cross_entropy(model(x, params=params), y)
    outer.backward()
    print(first_order, round(inner.item(), 5), round(outer.item(), 5),
          [round(p.grad.norm().item(), 5) for p in model.parameters()])
print(list(params.keys()), params['0.weight'].requires_grad)
print(model.get_subdict(params, '2').keys())
