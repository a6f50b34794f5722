"""torch.autograd beyond .backward(): autograd.grad, higher derivatives, jacobians/hessians, hooks, grad modes."""
import torch
from torch.autograd.functional import hessian, jacobian, vjp, jvp, hvp

x = torch.tensor(2.0, requires_grad=True)
y = x ** 3
(dy,) = torch.autograd.grad(y, x, create_graph=True)
(d2y,) = torch.autograd.grad(dy, x, create_graph=True)
(d3y,) = torch.autograd.grad(d2y, x)
print('derivatives of x^3 at 2:', dy, d2y, d3y)
print(dy.requires_grad, d3y.requires_grad)

w = torch.tensor([1.0, -1.0, 2.0], requires_grad=True)
loss = (w ** 2).sum()
g, = torch.autograd.grad(loss, w, retain_graph=True)
print('grad', g, 'leaf grad untouched:', w.grad)
loss.backward()
print('after backward', w.grad)
a = torch.tensor(1.0, requires_grad=True)
b = torch.tensor(5.0, requires_grad=True)
ga, gb = torch.autograd.grad(a * 3, [a, b], allow_unused=True)
print('allow_unused', ga, gb)
print('materialize', torch.autograd.grad(a * 3, [a, b], allow_unused=True, materialize_grads=True))

v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
out = v * 2
out.backward(torch.tensor([1.0, 0.1, 0.01]))
print('vector-Jacobian product', v.grad)


def f(t):
    return torch.stack([t[0] * t[1], t[0] ** 2, torch.sin(t[1])])


pt = torch.tensor([1.0, 2.0])
print('jacobian\n', jacobian(f, pt))
print('hessian\n', hessian(lambda t: (t[0] ** 2) * t[1] + t[1] ** 3, pt))
print('vjp', vjp(f, pt, torch.tensor([1.0, 1.0, 1.0]))[1])
print('jvp', jvp(f, pt, torch.tensor([1.0, 0.0]))[1])
print('hvp', hvp(lambda t: (t ** 3).sum(), pt, torch.tensor([1.0, 1.0]))[1])
print('jacobian of two inputs', [j.shape for j in jacobian(lambda p, q: p * q, (torch.ones(2), torch.ones(2)))])

seen = []
h = torch.tensor([1.0, 2.0], requires_grad=True)
handle = h.register_hook(lambda grad: seen.append(grad.clone()))
(h * 3).sum().backward()
print('hook saw', seen)
handle.remove()
h.grad = None
doubler = h.register_hook(lambda grad: grad * 2)
(h * 3).sum().backward()
print('hook doubled', h.grad)
doubler.remove()

mid_grads = {}
i = torch.tensor([1.0, 2.0], requires_grad=True)
mid = i * i
mid.retain_grad()
mid.register_hook(lambda g: mid_grads.setdefault('mid', g))
(mid * torch.tensor([1.0, 10.0])).sum().backward()
print('retain_grad', mid.grad, mid_grads['mid'], mid.is_leaf, i.is_leaf)

acc = torch.tensor(1.0, requires_grad=True)
for _ in range(3):
    (acc * 2).backward()
print('accumulated', acc.grad)
acc.grad.zero_()
print('zeroed', acc.grad)

with torch.no_grad():
    print('no_grad', (acc * 2).requires_grad, torch.is_grad_enabled())
with torch.enable_grad():
    print('enable_grad', (acc * 2).requires_grad)
with torch.set_grad_enabled(False):
    print('set_grad_enabled(False)', (acc * 2).requires_grad)
torch.set_grad_enabled(True)


@torch.no_grad()
def evaluate(t):
    return t * 2


print('decorated', evaluate(acc).requires_grad)
d = acc.detach()
print('detach', d.requires_grad, d.is_leaf)
r = torch.zeros(2).requires_grad_()
print('requires_grad_', r.requires_grad, r.is_leaf)

q = torch.tensor([0.5, 1.5], requires_grad=True)
yq = (q ** 2).sum()
yq.backward(retain_graph=True)
yq.backward()
print('retain_graph twice', q.grad)
try:
    yq2 = (q * q).sum()
    yq2.backward()
    yq2.backward()
except RuntimeError as e:
    print('second backward: RuntimeError', 'second time' in str(e))
try:
    torch.tensor([1.0, 2.0], requires_grad=True).sum().backward(torch.ones(2))
except RuntimeError as e:
    print('mismatched grad shape: RuntimeError')
try:
    (q * 2).backward()
except RuntimeError as e:
    print('non-scalar backward: RuntimeError', 'grad can be implicitly created only for scalar outputs' in str(e))
try:
    torch.tensor([1, 2], requires_grad=True)
except RuntimeError as e:
    print('integer requires_grad: RuntimeError', 'floating point' in str(e))
print(torch.autograd.grad((q * q).sum(), q)[0])
z = torch.tensor([3.0], requires_grad=True)
gz, = torch.autograd.grad(z.exp().sum(), z, grad_outputs=torch.tensor(2.0))
print('grad_outputs', gz)
