"""After the torch.func docs' "UX Limitations": the errors users hit with torch.func -- in-place
writes into captured tensors under vmap, .item() and data-dependent control flow under vmap and
grad, backward() inside a transform, functional_call's key errors -- and their fixes."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import vmap, grad, jacrev, functional_call

def report(fn):
    try:
        r = fn()
        print('ok', r if not torch.is_tensor(r) else tuple(r.shape))
    except Exception as e:
        msg = str(e).split('\n')[0]
        print(type(e).__name__ + ':', msg[:90])

# 1. in-place into a captured (unbatched) tensor
def inplace_captured(x):
    y = torch.zeros(3)
    y.copy_(x)
    return y
report(lambda: vmap(inplace_captured)(torch.ones(4, 3)))
def fixed(x):
    y = torch.zeros_like(x)
    y.copy_(x)
    return y
report(lambda: vmap(fixed)(torch.ones(4, 3)))
def add_into(x):
    acc = torch.zeros(3)
    acc += x
    return acc
report(lambda: vmap(add_into)(torch.ones(4, 3)))
def add_from(x):
    x = x.clone()
    x += torch.ones(3)
    return x
report(lambda: vmap(add_from)(torch.ones(4, 3)))
captured = torch.zeros(3)
report(lambda: vmap(lambda x: captured.add_(x))(torch.ones(4, 3)))
report(lambda: vmap(lambda x: x.mul_(2))(torch.ones(4, 3)))
report(lambda: vmap(lambda x: captured.index_add_(0, torch.tensor([0]), x[:1]))(torch.ones(4, 3)))

# 2. .item() / data-dependent Python control flow
report(lambda: vmap(lambda x: x.sum().item())(torch.ones(4, 3)))
def relu_branch(x):
    if x.sum() > 0:
        return x
    return -x
report(lambda: vmap(relu_branch)(torch.ones(4, 3)))
report(lambda: vmap(lambda x: torch.where(x.sum() > 0, x, -x))(torch.ones(4, 3)))
report(lambda: vmap(lambda x: x.tolist())(torch.ones(4, 3)))
report(lambda: vmap(lambda x: float(x.sum()))(torch.ones(4, 3)))
report(lambda: vmap(lambda x: x[x > 0])(torch.ones(4, 3)))
report(lambda: vmap(lambda x: torch.nonzero(x))(torch.ones(4, 3)))
# control flow is fine under grad when it is not batched
report(lambda: grad(relu_branch_sum)(torch.ones(3)) if False else grad(lambda x: x.sum() if x.sum() > 0 else -x.sum())(torch.ones(3)))
report(lambda: grad(lambda x: x.sum().item())(torch.ones(3)))

# 3. torch.no_grad inside grad: the outer transform still differentiates (documented behaviour)
def f(x):
    with torch.no_grad():
        c = x ** 2
    return (c * x).sum()
print(grad(f)(torch.tensor([1., 2.])))
# .detach() inside grad cuts the gradient
print(grad(lambda x: (x.detach() * x).sum())(torch.tensor([1., 2.])))
# backward() inside a transform
def uses_backward(x):
    y = (x ** 2).sum()
    y.backward()
    return y
report(lambda: grad(uses_backward)(torch.ones(3)))
# jacrev of a function returning a python float
report(lambda: jacrev(lambda x: 1.0)(torch.ones(3)))
# functional_call with a missing or unexpected key
model = nn.Linear(2, 2)
report(lambda: functional_call(model, {'weight': torch.ones(2, 2)}, (torch.ones(1, 2),)))
report(lambda: functional_call(model, {'weight': torch.ones(2, 2)}, (torch.ones(1, 2),), strict=True))
report(lambda: functional_call(model, {'weight': torch.ones(2, 2), 'bias': torch.ones(2), 'extra': torch.ones(1)}, (torch.ones(1, 2),), strict=True))
report(lambda: functional_call(model, ({'weight': torch.ones(2, 2)}, {'weight': torch.ones(2, 2)}), (torch.ones(1, 2),)))
# vmap over a module call with batchnorm in train mode
bn = nn.BatchNorm1d(3)
report(lambda: vmap(bn)(torch.ones(4, 2, 3)))
bn.eval()
report(lambda: vmap(bn)(torch.ones(4, 2, 3)))
