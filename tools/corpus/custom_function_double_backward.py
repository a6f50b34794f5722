"""Custom autograd Functions that support double backward, in the style of the intermediate
tutorial: saving inputs, saving outputs, returning intermediates as extra outputs (kept
referenced), and a backward that is itself a custom Function; gradcheck and gradgradcheck on
each, then the first and second derivatives printed."""
import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        result, = ctx.saved_tensors
        return result * grad_out


class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.save_for_backward(expx, expnegx)
        return (expx - expnegx) / 2, expx, expnegx

    @staticmethod
    def backward(ctx, grad_out, grad_out_exp, grad_out_negexp):
        expx, expnegx = ctx.saved_tensors
        grad_input = grad_out * (expx + expnegx) / 2
        grad_input += grad_out_exp * expx
        grad_input -= grad_out_negexp * expnegx
        return grad_input


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return CubeBackward.apply(grad_out, x)


class CubeBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, grad_out, x):
        ctx.save_for_backward(x, grad_out)
        return grad_out * 3 * x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, saved_grad_out = ctx.saved_tensors
        return grad_out * 3 * x ** 2, grad_out * saved_grad_out * 6 * x


x = torch.linspace(0.1, 0.9, 9, dtype=torch.double).reshape(3, 3).requires_grad_()
for fn in (Square.apply, Exp.apply, Sinh.apply, Cube.apply):   # Sinh: all three outputs checked
    print(torch.autograd.gradcheck(fn, x), torch.autograd.gradgradcheck(fn, x))

for name, fn in (("square", Square.apply), ("exp", Exp.apply), ("cube", Cube.apply)):
    x = torch.tensor(1.5, requires_grad=True, dtype=torch.double).clone()
    out = fn(x)
    grad_x, = torch.autograd.grad(out, x, create_graph=True)
    grad2_x, = torch.autograd.grad(grad_x, x)
    print(name, out, grad_x, grad2_x)

x = torch.tensor([0.5, -1.0], dtype=torch.double, requires_grad=True)
out, expx, expnegx = Sinh.apply(x)          # every output kept referenced
grad_x, = torch.autograd.grad(out.sum(), x, create_graph=True)
print(out, grad_x, torch.allclose(grad_x, torch.cosh(x)))
grad2_x, = torch.autograd.grad(grad_x.sum(), x)
print(grad2_x, torch.allclose(grad2_x, torch.sinh(x)))
print(type(out.grad_fn).__name__, expx.grad_fn is out.grad_fn)
