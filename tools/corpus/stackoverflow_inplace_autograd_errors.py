"""Forum and Stack Overflow snippets about in-place operations and autograd, pasted as asked and
answered: "a leaf Variable that requires grad is being used in an in-place operation", "one of the
variables needed for gradient computation has been modified by an inplace operation", the manual
SGD update that turns w into a non-leaf, ReLU(inplace=True) after sigmoid, clone() as the fix,
and the version counter the error message quotes."""
import torch

w = torch.randn(3, requires_grad=True)
try:
    w += 1
except RuntimeError as e:
    print(type(e).__name__ + ":", e)
try:
    w.zero_()
except RuntimeError as e:
    print(e)
try:
    w[0] = 5.0
except RuntimeError as e:
    print(e)
try:
    w.data[0] = 5.0
    print("data write ok", w[0].item())
except RuntimeError as e:
    print(e)

with torch.no_grad():
    w.fill_(1.0)
    w -= 0.1 * torch.ones(3)
print(w, w.is_leaf, w.requires_grad)

# manual SGD: w = w - lr * grad turns w into a non-leaf
w = torch.ones(2, requires_grad=True)
for i in range(2):
    loss = (w * torch.tensor([1.0, 2.0])).sum()
    loss.backward()
    print(i, w.grad, w.is_leaf)
    if w.grad is None:
        print("grad is None")
        break
    w = w - 0.1 * w.grad
print(w, w.is_leaf, type(w.grad_fn).__name__)

w = torch.ones(2, requires_grad=True)
for i in range(3):
    loss = (w * torch.tensor([1.0, 2.0])).sum()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    w.grad.zero_()
print(w)

# in-place on a view of a leaf
base = torch.zeros(4, requires_grad=True)
try:
    base[:2].add_(1)
except RuntimeError as e:
    print(e)
v = base.view(2, 2)
try:
    v.mul_(2)
except RuntimeError as e:
    print(e)



a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a.sigmoid()
b.mul_(2)
try:
    b.sum().backward()
except RuntimeError as e:
    print(type(e).__name__)
    print(e)

a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a * 2
c = b ** 2
b += 1
try:
    c.sum().backward()
except RuntimeError as e:
    print(str(e).split("Hint")[0])

# ReLU(inplace=True) after a sigmoid
x = torch.tensor([-1.0, 0.5, 2.0], requires_grad=True)
s = torch.sigmoid(x)
r = torch.nn.ReLU(inplace=True)(s)
print(r is s, r)
try:
    r.sum().backward()
except RuntimeError as e:
    print("relu inplace:", "modified by an inplace operation" in str(e))

# exp saves its output; in-place on the output breaks it, clone() fixes it
x = torch.tensor([0.0, 1.0], requires_grad=True)
y = x.exp()
y2 = y.clone()
y2[0] = 0.0
y.sum().backward()
print(x.grad)

x = torch.tensor([0.0, 1.0], requires_grad=True)
y = x.exp()
y[0] = 0.0
try:
    y.sum().backward()
except RuntimeError as e:
    print("exp output modified:", "version" in str(e), "output 0 of ExpBackward0" in str(e))

# the version counter
t = torch.zeros(3)
print(t._version)
t.add_(1)
t[0] = 3
print(t._version)
v = t[1:]
v.mul_(2)
print(t._version, v._version, t)
