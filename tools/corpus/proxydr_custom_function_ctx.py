"""Custom autograd.Function features as tutorials show them: mark_dirty for an in-place
forward, mark_non_differentiable indices, set_materialize_grads(False), setup_context with a
vmap staticmethod, a double-backward Function with gradgradcheck, and the errors a wrong
backward raises (too many gradients, a wrong shape, no backward, a non-tensor saved)."""
import torch
from torch.autograd import Function

class Inplace(Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x
    @staticmethod
    def backward(ctx, g):
        return g * 2

class Sort(Function):
    @staticmethod
    def forward(ctx, x):
        vals, idx = x.sort()
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(x, idx)
        return vals, idx
    @staticmethod
    def backward(ctx, g, g_idx):
        x, idx = ctx.saved_tensors
        print("g_idx is", g_idx if g_idx is None else tuple(g_idx.shape))
        grad = torch.zeros_like(x)
        grad.index_add_(0, idx, g)
        return grad

class Simple(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x.clone(), x.clone()
    @staticmethod
    def backward(ctx, g1, g2):
        print("g1", g1, "g2", g2)
        res = x.new_zeros(x.shape) if False else None
        if g1 is not None:
            res = g1.clone()
        if g2 is not None:
            res = g2.clone() if res is None else res + g2
        return res

class Mat(Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone(), x.clone()
    @staticmethod
    def backward(ctx, g1, g2):
        print("materialized", g1, g2)
        return g1 + g2

a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a.clone()
c = Inplace.apply(b)
print(c is b, c.grad_fn.name() if hasattr(c.grad_fn, "name") else c.grad_fn, b._version)
c.sum().backward()
print(a.grad)
try:
    Inplace.apply(a)
except RuntimeError as e:
    print("RuntimeError:", e)

x = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)
v, i = Sort.apply(x)
print(v.requires_grad, i.requires_grad, i.dtype)
(v * torch.tensor([1.0, 10.0, 100.0])).sum().backward()
print(x.grad)

x = torch.tensor([1.0, 2.0], requires_grad=True)
o1, o2 = Simple.apply(x)
o1.sum().backward()
print(x.grad)
x.grad = None
p1, p2 = Mat.apply(x)
p2.sum().backward()
print(x.grad)

class SetupCtx(Function):
    @staticmethod
    def forward(x, k):
        return x * k
    @staticmethod
    def setup_context(ctx, inputs, output):
        x, k = inputs
        ctx.k = k
        ctx.save_for_backward(x)
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * ctx.k, None
    @staticmethod
    def vmap(info, in_dims, x, k):
        return x * k, in_dims[0]

y = torch.tensor([1.0, 2.0], requires_grad=True)
out = SetupCtx.apply(y, 3.0)
out.sum().backward()
print(y.grad, type(out.grad_fn).__name__)
print(torch.vmap(lambda t: SetupCtx.apply(t, 2.0))(torch.ones(3, 2)))

class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 3 * x ** 2
z = torch.tensor(2.0, requires_grad=True)
y1 = Cube.apply(z)
g1, = torch.autograd.grad(y1, z, create_graph=True)
g2, = torch.autograd.grad(g1, z)
print(g1, g2)
print(torch.autograd.gradgradcheck(Cube.apply, (torch.tensor([1.5, 2.0], dtype=torch.double, requires_grad=True),)))

class Bad(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2
    @staticmethod
    def backward(ctx, g):
        return g, g
try:
    Bad.apply(torch.ones(2, requires_grad=True)).sum().backward()
except RuntimeError as e:
    print("RuntimeError:", e)
class BadShape(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2
    @staticmethod
    def backward(ctx, g):
        return g.sum()
try:
    BadShape.apply(torch.ones(2, 3, requires_grad=True)).sum().backward()
except RuntimeError as e:
    print("RuntimeError:", e)
class NoBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2
try:
    NoBackward.apply(torch.ones(2, requires_grad=True)).sum().backward()
except NotImplementedError as e:
    print("NotImplementedError:", e)
try:
    Cube()(torch.ones(2))
except RuntimeError as e:
    print("RuntimeError:", str(e)[:90])
class SaveNonTensor(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x, 3)
        return x
    @staticmethod
    def backward(ctx, g):
        return g
try:
    SaveNonTensor.apply(torch.ones(2, requires_grad=True))
except TypeError as e:
    print("TypeError:", e)
class RetInput(Function):
    @staticmethod
    def forward(ctx, x):
        return x
    @staticmethod
    def backward(ctx, g):
        return g * 5
q = torch.ones(2, requires_grad=True)
r = RetInput.apply(q)
print(r is q, r.grad_fn is not None, r.is_leaf)
r.sum().backward()
print(q.grad)
