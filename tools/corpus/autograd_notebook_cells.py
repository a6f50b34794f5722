"""Cells of a Chinese-language PyTorch book's autograd chapter, as a notebook displays them:
is_leaf/requires_grad tuples, grad_fn and next_functions (addresses masked), grads of a leaf
after backward with retain_graph, `t.set_grad_enabled(True)` displayed by its repr, no_grad /
enable_grad used as decorators, guards imported from torch.autograd.grad_mode, and the `.data`
trick to change a value without tracking.  Inputs are fixed, so nothing depends on the random
stream."""
import re

import torch as t
from torch.autograd.grad_mode import enable_grad, no_grad, set_grad_enabled


def show(obj):
    # a notebook displays the repr; addresses differ from run to run
    print(re.sub(r"0x[0-9a-fA-F]+", "0x...", repr(obj)))


x = t.ones(1)
b = t.tensor([0.5], requires_grad=True)
w = t.tensor([2.0], requires_grad=True)
y = w * x
z = y + b
show((x.requires_grad, b.requires_grad, w.requires_grad, y.requires_grad))
show((x.is_leaf, w.is_leaf, y.is_leaf))
show(z.grad_fn)
show(z.grad_fn.next_functions)
show(z.grad_fn.next_functions[0][0] == y.grad_fn)
show(y.grad_fn.next_functions)
show((w.grad_fn, x.grad_fn))
z.backward(retain_graph=True)
show(w.grad)
z.backward()
show(w.grad)

x = t.ones(3, requires_grad=True)
w = t.tensor([0.25, 0.5, 0.75], requires_grad=True)
y = x * w
show((x.requires_grad, w.requires_grad, y.requires_grad))
with t.no_grad():
    x = t.ones(3)
    w = t.tensor([0.25, 0.5, 0.75], requires_grad=True)
    y = x * w
show((x.requires_grad, w.requires_grad, y.requires_grad))
show(t.set_grad_enabled(False))
y = x * w
show(y.requires_grad)
show(t.set_grad_enabled(True))
show(t.is_grad_enabled())
show(t.no_grad())
show(t.enable_grad())
show(set_grad_enabled(True))


@no_grad()
def doubled(v):
    return v * 2


@enable_grad()
def tripled(v):
    return v * 3


a = t.tensor([1.0, 2.0], requires_grad=True)
show(doubled(a))
with no_grad():
    show(tripled(a))
show(no_grad is t.no_grad and enable_grad is t.enable_grad)

a = t.ones(3, 4, requires_grad=True)
b = t.full((3, 4), 0.5, requires_grad=True)
c = a * b
show(a.data)
show(a.data.requires_grad)
d = a.data.sigmoid_()
show(d.requires_grad)
show(a)
tensor = a.detach()
show(tensor.requires_grad)
mean = tensor.mean()
std = tensor.std()
maximum = tensor.max()
show((mean, std, maximum))
tensor[0] = 1
show(a)
