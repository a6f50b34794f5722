"""A PyTorch-basics notebook's autograd tour as the NLP workshop notebooks give it: describe()
helpers printing type, shape and values, grad_fn names and next_functions, a leaf's .grad after
backward(create_graph=True) (a copy, CopyBackwards), whole-tensor writes (copy_, x[:] = v,
x[...] = a 0-d value) beside writes through a view (CopySlices), and a second derivative through
them.  Every value is fixed: nothing depends on the random stream."""
import warnings

import torch


def describe(x):
    print("Type: {}".format(x.type()))
    print("Shape/size: {}".format(x.shape))
    print("Values: \n{}".format(x))


def describe_grad(x):
    if x.grad is None:
        print("No gradient information")
    else:
        print("Gradient: \n{}".format(x.grad))
        print("Gradient Function: {}".format(type(x.grad_fn).__name__ if x.grad_fn else None))


def edges(fn):
    return [None if f is None else type(f).__name__ for f, _ in fn.next_functions]


x = torch.ones(2, 2, requires_grad=True)
describe(x)
describe_grad(x)
y = (x + 2) * (x + 5) + 3
describe(y)
z = y.mean()
describe(z)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")          # the reference-cycle warning of create_graph
    z.backward(create_graph=True, retain_graph=True)
describe_grad(x)
print("x.grad.grad_fn:", type(x.grad.grad_fn).__name__, edges(x.grad.grad_fn))
(gg,) = torch.autograd.grad(x.grad.sum(), x)
print("d(sum of x.grad)/dx:", gg)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    (x * x).sum().backward(create_graph=True)
print("after a second backward:", x.grad, type(x.grad.grad_fn).__name__)

# -- writes: of the whole tensor itself, or through a view ---------------------------------------
a = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], requires_grad=True)
cases = {}
t = torch.zeros(2, 3)
t.copy_(a * 2)
cases["copy_"] = t
t = torch.zeros(2, 3, dtype=torch.float64)
t.copy_(a.exp())
cases["copy_ to float64"] = t
t = torch.zeros(2, 3)
t[:] = a.sin()
cases["t[:] = v"] = t
t = torch.zeros(2, 3)
t[...] = a.sum()
cases["t[...] = 0-d"] = t
t = torch.ones(2, 3) * a
t[:, :] = a * 3
cases["t[:, :] = v onto history"] = t
t = torch.zeros(2, 3)
t[1] = a[0] * a[1]
cases["t[1] = row (a view)"] = t
t = torch.zeros(2, 3)
t[:, 1:].copy_(a[:, :2] ** 2)
cases["t[:, 1:].copy_ (a view)"] = t
for name, t in cases.items():
    print(f"{name:26s} {type(t.grad_fn).__name__:14s} {edges(t.grad_fn)} {t.dtype}")

weights = torch.arange(6.0).reshape(2, 3) - 2.5
total = sum((t.float() * weights).sum() for t in cases.values())
(g,) = torch.autograd.grad(total, a, create_graph=True)
print("gradient:\n", g)
(h,) = torch.autograd.grad((g * g).sum(), a)
print("second derivative:\n", h)

# -- an in-place write that a saved value needed ----------------------------------------------------
b = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
c = b * 1
d = c * c
c.copy_(b * 4)
try:
    d.sum().backward()
except RuntimeError as e:
    print("RuntimeError:", str(e).split(";")[0])
c.sum().backward()
print("b.grad after c.copy_(b * 4):", b.grad)
