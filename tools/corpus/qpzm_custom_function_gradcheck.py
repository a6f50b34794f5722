"""Custom autograd.Function exercises (inspired by qpzm's MyReLU tutorial copy): hand-written
backward functions that log each call, checked with gradcheck / gradgradcheck and
torch.autograd.functional.jacobian, including the classic mistakes gradcheck is meant to catch
(a backward that forgets grad_output, a wrong derivative, a wrong gradient count), a Function
returning a non-differentiable index output (mark_non_differentiable, once_differentiable), and
set_materialize_grads(False) with an output that is not used."""
import torch
from torch.autograd import Function, gradcheck, gradgradcheck
from torch.autograd.function import once_differentiable
from torch.autograd.functional import jacobian, hessian

calls = []


class MyReLU(Function):
    @staticmethod
    def forward(ctx, x):
        calls.append("relu.f")
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        calls.append("relu.b")
        x, = ctx.saved_tensors
        grad = grad_output.clone()
        grad[x < 0] = 0
        return grad


class SoftplusSq(Function):
    """f(x, y) = log(1 + exp(x * y)) ** 2, with a hand-written backward for both inputs."""

    @staticmethod
    def forward(ctx, x, y):
        calls.append("sp.f")
        s = torch.log1p(torch.exp(x * y))
        ctx.save_for_backward(x, y)
        return s * s

    @staticmethod
    def backward(ctx, g):
        calls.append("sp.b")
        x, y = ctx.saved_tensors
        # (recomputed from the inputs, so that this backward is itself differentiable)
        common = g * 2 * torch.log1p(torch.exp(x * y)) * torch.sigmoid(x * y)
        return common * y, common * x


class ForgetsGradOutput(Function):
    """A sum of squares whose backward ignores grad_output."""

    @staticmethod
    def forward(ctx, x):
        calls.append("fg.f")
        ctx.save_for_backward(x)
        return (x * x).sum()

    @staticmethod
    def backward(ctx, g):
        calls.append("fg.b")
        x, = ctx.saved_tensors
        return 2 * x


class WrongDerivative(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * x.cos() * 1.01


class TooManyGrads(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g * 3, g


class SortWithIndex(Function):
    @staticmethod
    def forward(ctx, x):
        calls.append("sort.f")
        values, index = x.sort()
        ctx.mark_non_differentiable(index)
        ctx.save_for_backward(index)
        return values, index

    @staticmethod
    @once_differentiable
    def backward(ctx, g_values, g_index):
        calls.append("sort.b")
        index, = ctx.saved_tensors
        grad = torch.zeros_like(g_values)
        grad.index_add_(0, index, g_values)
        return grad


class PairNoMaterialize(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2, x * x

    @staticmethod
    def backward(ctx, g_double, g_square):
        x, = ctx.saved_tensors if ctx.saved_tensors else (None,)
        print("  pair backward got", "None" if g_double is None else "grad",
              "None" if g_square is None else "grad")
        result = torch.zeros(ctx.shape, dtype=torch.float64)
        if g_double is not None:
            result = result + 2 * g_double
        return result


def flush(title):
    print(title, " ".join(calls))
    calls.clear()


def check(title, fn, inputs, **kw):
    try:
        print(title, gradcheck(fn, inputs, **kw))
    except RuntimeError as e:
        print(title, type(e).__name__, str(e).split("\n")[0])


x = torch.tensor([-1.5, -0.25, 0.5, 2.0], dtype=torch.float64, requires_grad=True)
y = torch.tensor([0.3, -0.7, 1.1, 0.9], dtype=torch.float64, requires_grad=True)

out = MyReLU.apply(x)
print(out, out.grad_fn.__class__.__name__)
out.backward(torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64))
print("relu grad", x.grad)
flush("calls:")

check("gradcheck relu", MyReLU.apply, (x,))
flush("calls:")
check("gradcheck softplus_sq", SoftplusSq.apply, (x, y))
flush("calls:")
print("gradgradcheck softplus_sq", gradgradcheck(lambda a, b: SoftplusSq.apply(a, b) ** 2,
                                                 (x, y), torch.ones(4, dtype=torch.float64)))
flush("calls:")

check("forgets grad_output", ForgetsGradOutput.apply, (x,))
check("forgets grad_output, no undefined check", ForgetsGradOutput.apply, (x,),
      check_undefined_grad=False)
print("forgets grad_output, no raise",
      gradcheck(ForgetsGradOutput.apply, (x,), raise_exception=False))
flush("calls:")
check("wrong derivative", WrongDerivative.apply, (x,))
print("wrong derivative, loose tolerance",
      gradcheck(WrongDerivative.apply, (x,), atol=0.05, rtol=0.05))
check("too many grads", TooManyGrads.apply, (x,))

values, index = SortWithIndex.apply(x)
print(values, index, values.requires_grad, index.requires_grad, index.grad_fn)
(values * torch.arange(4, dtype=torch.float64)).sum().backward()
flush("calls:")
print("sorted grad into x", x.grad)
print("jacobian of sort", jacobian(lambda t: SortWithIndex.apply(t)[0],
                                   torch.tensor([3.0, 1.0, 2.0], dtype=torch.float64)))
flush("calls:")
g, = torch.autograd.grad(SortWithIndex.apply(x)[0].sum(), x, create_graph=True)
print("once_differentiable result requires grad:", g.requires_grad)
try:
    g.sum().backward()
except RuntimeError as e:
    print("double backward:", str(e).split("\n")[0][:70])
flush("calls:")

print("jacobian relu", jacobian(MyReLU.apply, x.detach()))
print("jacobian pair", jacobian(SoftplusSq.apply, (x.detach(), y.detach())))
print("hessian of sum", hessian(lambda a: SoftplusSq.apply(a, y.detach()).sum(), x.detach()))
flush("calls:")


class Pair(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        ctx.shape = x.shape
        return x * 2, x * x

    backward = PairNoMaterialize.backward


doubled, squared = Pair.apply(x)
doubled.sum().backward()
print("pair grad", x.grad)
