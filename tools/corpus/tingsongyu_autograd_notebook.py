"""The autograd notebook of a PyTorch course: retain_graph and the second-backward error, a
weighted backward through torch.cat, second derivatives with autograd.grad, custom Functions
(Exp, a gradient-scaling GradCoeff that returns its input, a third-order Legendre polynomial
applied to plain Python numbers, a conv2d whose backward is written with conv2d and
conv_transpose2d and checked by gradcheck), gradient accumulation, leaf flags, in-place
rebinding, the in-place-modified-leaf error and detach sharing storage.

Source: TingsongYu/PyTorch-Tutorial-2nd, code/chapter-2/06_autograd.ipynb (code cells in order;
a cell that raises prints the exception's type and the notebook goes on, as a notebook does).
Adapted: torch.rand / randn_like are replaced by values drawn with numpy; ids are not printed.
"""
import numpy as np
import torch
import torch.nn.functional as F
from torch.autograd.function import Function, once_differentiable

rng = np.random.default_rng(6)


def cell(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the notebook shows the error and continues
        print("raised", type(e).__name__)


def graph():
    w = torch.tensor([1.], requires_grad=True)
    x = torch.tensor([2.], requires_grad=True)
    a = torch.add(w, x)
    b = torch.add(w, 1)
    return w, x, a, b, torch.mul(a, b)


def retain_graph_true():
    w, x, a, b, y = graph()
    y.backward(retain_graph=True)
    print(w.grad)
    y.backward()
    print(w.grad)


def retain_graph_false():
    w, x, a, b, y = graph()
    y.backward()
    print(w.grad)
    y.backward()
    print(w.grad)


def weighted_backward():
    w, x, a, b, y0 = graph()
    y1 = torch.add(a, b)
    loss = torch.cat([y0, y1], dim=0)
    loss.backward(gradient=torch.tensor([1., 2.]))
    print(w.grad)


def second_derivative():
    x = torch.tensor([3.], requires_grad=True)
    y = torch.pow(x, 2)
    grad_1 = torch.autograd.grad(y, x, create_graph=True)
    print(grad_1)
    grad_2 = torch.autograd.grad(grad_1[0], x)
    print(grad_2)


class Exp(Function):
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result


def exp_function():
    x = torch.tensor([1.], requires_grad=True)
    y = Exp.apply(x)
    print(y)
    y.backward()
    print(x.grad)


class GradCoeff(Function):
    @staticmethod
    def forward(ctx, x, coeff):
        ctx.coeff = coeff
        x.view_as(x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        return ctx.coeff * grad_output, None


def grad_coeff():
    x = torch.tensor([2.], requires_grad=True)
    ret = GradCoeff.apply(x, -0.1)
    ret = ret ** 2
    print(ret)
    ret.backward()
    print(x.grad)


class LegendrePolynomial3(Function):
    @staticmethod
    def forward(ctx, x):
        y = 0.5 * (5 * x ** 3 - 3 * x)
        ctx.save_for_backward(x)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        ret, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * ret ** 2 - 1)


def legendre():
    a, b, c, d = 1, 2, 1, 2
    P3 = LegendrePolynomial3.apply
    y_pred = a + b * P3(c + d * 1)          # plain numbers: nothing is recorded
    print(y_pred, type(y_pred).__name__)
    x = torch.tensor([0.5, 1.0], requires_grad=True)
    y_pred = a + b * P3(c + d * x)
    print(y_pred)
    y_pred.sum().backward()
    print(x.grad)
    with torch.no_grad():
        print(P3(torch.tensor([0.25], requires_grad=True)))


def convolution_backward(grad_out, X, weight):
    grad_input = F.conv2d(X.transpose(0, 1), grad_out.transpose(0, 1)).transpose(0, 1)
    grad_X = F.conv_transpose2d(grad_out, weight)
    return grad_X, grad_input


class MyConv2D(Function):
    @staticmethod
    def forward(ctx, X, weight):
        ctx.save_for_backward(X, weight)
        return F.conv2d(X, weight)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        X, weight = ctx.saved_tensors
        return convolution_backward(grad_out, X, weight)


def my_conv2d():
    weight = torch.tensor(rng.random((5, 3, 3, 3)), requires_grad=True)
    X = torch.tensor(rng.random((4, 3, 7, 7)), requires_grad=True)
    print("gradcheck:", torch.autograd.gradcheck(MyConv2D.apply, (X, weight)))
    y = MyConv2D.apply(X, weight)
    label = torch.tensor(rng.standard_normal(tuple(y.shape)))
    loss = F.mse_loss(y, label)
    print("weight.grad before backward:", weight.grad)
    loss.backward()
    print("weight.grad after backward:", weight.grad[0, 0], weight.grad.sum())
    expected = torch.autograd.grad(F.mse_loss(F.conv2d(X, weight), label), weight)[0]
    print(torch.allclose(weight.grad, expected), y.grad_fn is not None)


def accumulation():
    w = torch.tensor([1.], requires_grad=True)
    x = torch.tensor([2.], requires_grad=True)
    for i in range(4):
        a = torch.add(w, x)
        b = torch.add(w, 1)
        y = torch.mul(a, b)
        y.backward()
        print(w.grad)


def flags():
    w, x, a, b, y = graph()
    print(a.requires_grad, b.requires_grad, y.requires_grad)
    print(a.is_leaf, b.is_leaf, y.is_leaf)


def rebinding():
    a = torch.ones((1, ))
    first = id(a)
    a = a + torch.ones((1, ))
    second = id(a)
    print(second != first, a)
    a += torch.ones((1, ))
    print(id(a) == second, a)


def inplace_on_leaf():
    w, x, a, b, y = graph()
    w.add_(1)
    y.backward()


def detach_shares_storage():
    w, x, a, b, y = graph()
    y.backward()
    w_detach = w.detach()
    w_detach.data[0] = 999
    print(w)


for step in (retain_graph_true, retain_graph_false, weighted_backward, second_derivative,
             exp_function, grad_coeff, legendre, my_conv2d, accumulation, flags, rebinding,
             inplace_on_leaf, detach_shares_storage):
    print("--", step.__name__)
    cell(step)
