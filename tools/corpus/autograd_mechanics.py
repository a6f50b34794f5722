"""Autograd mechanics notes and the autograd tutorial's extras: requires_grad propagation,
freezing a pretrained-style backbone, grad_fn names and next_functions, saved tensors
(_saved_self), retain_grad, tensor hooks modifying gradients, no_grad / enable_grad /
set_grad_enabled / inference_mode, in-place correctness checks, torch.autograd.grad with
create_graph for a second derivative, Jacobian-vector products and torch.autograd.functional."""
import torch
import torch.nn as nn
from torch.autograd.functional import jacobian, hessian

x = torch.randn(5, 5)
y = torch.randn(5, 5)
z = torch.randn((5, 5), requires_grad=True)
a = x + y
print(f"Does `a` require gradients?: {a.requires_grad}")
b = x + z
print(f"Does `b` require gradients?: {b.requires_grad}")

model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))
for param in model.parameters():
    param.requires_grad = False
model[2] = nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
print([n for n, p in model.named_parameters() if p.requires_grad])

a = torch.tensor([2., 3.], requires_grad=True)
b = torch.tensor([6., 4.], requires_grad=True)
Q = 3 * a ** 3 - b ** 2
print(Q.grad_fn.name(), type(Q.grad_fn).__name__)
print([type(fn).__name__ if fn is not None else None for fn, _ in Q.grad_fn.next_functions])
external_grad = torch.tensor([1., 1.])
Q.backward(gradient=external_grad)
print(9 * a ** 2 == a.grad, -2 * b == b.grad)

x = torch.randn(5, requires_grad=True)
y = x.pow(2)
print(x.equal(y.grad_fn._saved_self), x is y.grad_fn._saved_self)
y = x.exp()
print(y.equal(y.grad_fn._saved_result), y is y.grad_fn._saved_result)

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
h = x * 2
h.retain_grad()
seen = []
handle = h.register_hook(lambda grad: seen.append(grad.clone()))
x.register_hook(lambda grad: grad * 10)
(h ** 2).sum().backward()
print(h.grad, seen, x.grad, h.is_leaf, x.is_leaf)
handle.remove()

with torch.no_grad():
    w = x * 2
print(w.requires_grad)
with torch.no_grad():
    with torch.enable_grad():
        w = x * 2
print(w.requires_grad)
torch.set_grad_enabled(False)
print((x * 2).requires_grad)
torch.set_grad_enabled(True)
with torch.set_grad_enabled(False):
    print((x * 2).requires_grad, torch.is_grad_enabled())
print(torch.is_grad_enabled())


@torch.no_grad()
def doubler(t):
    return t * 2


print(doubler(x).requires_grad)
with torch.inference_mode():
    inf = x * 2
print(inf.requires_grad, inf.is_inference(), torch.is_inference_mode_enabled())

a = torch.tensor([1.0, 2.0], requires_grad=True)
b = a.sigmoid()
b.mul_(2)
try:
    b.sum().backward()
except RuntimeError as e:
    print('RuntimeError:', 'modified by an inplace operation' in str(e))
leaf = torch.zeros(2, requires_grad=True)
try:
    leaf.add_(1)
except RuntimeError as e:
    print('RuntimeError:', 'a leaf Variable that requires grad' in str(e))

x = torch.tensor(2.0, requires_grad=True)
y = x ** 3
(dy,) = torch.autograd.grad(y, x, create_graph=True)
(d2y,) = torch.autograd.grad(dy, x)
print(dy, d2y)
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x * x
v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
y.backward(v)
print(x.grad)


def f(inp):
    return inp ** 2 + inp.sum()


print(jacobian(f, torch.tensor([1.0, 2.0])))
print(hessian(lambda t: (t ** 3).sum(), torch.tensor([1.0, 2.0])))
out = torch.eye(4, 5, requires_grad=True)
o = (out + 1).pow(2).t()
o.backward(torch.ones_like(o), retain_graph=True)
print(out.grad)
o.backward(torch.ones_like(o), retain_graph=True)
print(out.grad)
out.grad.zero_()
o.backward(torch.ones_like(o))
print(out.grad)
try:
    o.backward(torch.ones_like(o))
except RuntimeError as e:
    print('second backward:', 'backward through the graph a second time' in str(e))
print(torch.autograd.grad((x * 3).sum(), x, retain_graph=False)[0])
z = torch.tensor(1.0, requires_grad=True)
print(z.detach().requires_grad, z.detach().data_ptr() == z.data_ptr(), z.requires_grad_(False).requires_grad)
