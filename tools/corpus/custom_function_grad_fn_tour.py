"""Custom autograd Functions as lecture notebooks print them: grad_fn reprs, names, ctx
attributes, next_functions, and gradients of a function with a hand-written backward."""
import re

import torch


def no_address(obj):
    return re.sub(r"0x[0-9a-f]+", "0x?", repr(obj))


class AddAndAverage(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x1, x2, alpha):
        ctx.alpha = alpha
        return (x1 + x2) / 2 * alpha

    @staticmethod
    def backward(ctx, grad_output):
        g = grad_output / 2 * ctx.alpha
        return g, g, None


class ClampedExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.clamp(max=3.0).exp()
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y * (x <= 3.0).to(g.dtype)


x1 = torch.tensor([1.0, -2.0, 3.5], requires_grad=True)
x2 = torch.tensor([0.5, 4.0, -1.0], requires_grad=True)
z = AddAndAverage.apply(x1, x2, 3.0)
print("z:", z)
print("z.grad_fn:", no_address(z.grad_fn))
print("str:", re.sub(r"0x[0-9a-f]+", "0x?", str(z.grad_fn)))
print("type:", type(z.grad_fn), "name:", z.grad_fn.name())
print("ctx alpha:", z.grad_fn.alpha)
print("next:", [(type(f).__name__, i) for f, i in z.grad_fn.next_functions])
z.sum().backward()
print("grads:", x1.grad, x2.grad)

w = torch.tensor([0.0, 2.0, 5.0], dtype=torch.float64, requires_grad=True)
y = ClampedExp.apply(w)
print("y:", y, no_address(y.grad_fn))
(y * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
print("w.grad:", w.grad)
print("gradcheck:", torch.autograd.gradcheck(ClampedExp.apply, (torch.tensor([0.3, -1.2], dtype=torch.float64, requires_grad=True),)))

u = torch.tensor([2.0], requires_grad=True)
v = (u * 3 - 1).exp()
print(no_address(v.grad_fn), no_address(v.grad_fn.next_functions[0][0]))
with torch.no_grad():
    print("no_grad:", AddAndAverage.apply(x1, x2, 1.0).grad_fn)
