"""d2l.ai chapter 2, preliminaries: data manipulation (arange, reshape, zeros/ones/randn, tensor
literals, elementwise ops, cat, comparison, sum, broadcasting, indexing and slicing, in-place
saving memory with id(), numpy conversion), linear algebra (transpose, symmetric matrices, hadamard
product, reductions with axis/keepdims, cumsum, dot, mv, mm, norms) and automatic
differentiation (backward, grad zeroing, non-scalar backward, detach, Python control flow)."""
import numpy as np
import torch

x = torch.arange(12, dtype=torch.float32)
print(x, x.numel(), x.shape)
X = x.reshape(3, 4)
print(X, x.reshape(-1, 4).shape, x.reshape(3, -1).shape)
print(torch.zeros((2, 3, 4)).shape, torch.ones((2, 3, 4)).sum(), torch.randn(3, 4).shape)
print(torch.tensor([[2, 1, 4, 3], [1, 2, 3, 4], [4, 3, 2, 1]]))
print(X[-1], X[1:3])
X[1, 2] = 17
print(X)
X[:2, :] = 12
print(X)
print(torch.exp(x[:3]))
x = torch.tensor([1.0, 2, 4, 8])
y = torch.tensor([2, 2, 2, 2])
print(x + y, x - y, x * y, x / y, x ** y)
X = torch.arange(12, dtype=torch.float32).reshape((3, 4))
Y = torch.tensor([[2.0, 1, 4, 3], [1, 2, 3, 4], [4, 3, 2, 1]])
print(torch.cat((X, Y), dim=0), torch.cat((X, Y), dim=1))
print(X == Y, X.sum())
a = torch.arange(3).reshape((3, 1))
b = torch.arange(2).reshape((1, 2))
print(a, b, a + b)
before = id(Y)
Y = Y + X
print(id(Y) == before)
Z = torch.zeros_like(Y)
print('id(Z):', id(Z) == id(Z))
before_z = id(Z)
Z[:] = X + Y
print(id(Z) == before_z)
before = id(X)
X += Y
print(id(X) == before)
A = X.numpy()
B = torch.from_numpy(A)
print(type(A).__name__, type(B).__name__)
a = torch.tensor([3.5])
print(a, a.item(), float(a), int(a))

x = torch.tensor(3.0)
y = torch.tensor(2.0)
print(x + y, x * y, x / y, x ** y)
x = torch.arange(3)
print(x, x[2], len(x), x.shape)
A = torch.arange(6).reshape(3, 2)
print(A, A.T)
A = torch.tensor([[1, 2, 3], [2, 0, 4], [3, 4, 5]])
print(A == A.T)
print(torch.arange(24).reshape(2, 3, 4))
A = torch.arange(6, dtype=torch.float32).reshape(2, 3)
B = A.clone()
print(A, A + B, A * B)
a = 2
X = torch.arange(24).reshape(2, 3, 4)
print(a + X, (a * X).shape)
x = torch.arange(3, dtype=torch.float32)
print(x, x.sum())
print(A.shape, A.sum(), A.sum(axis=0), A.sum(axis=0).shape, A.sum(axis=1), A.sum(axis=1).shape)
print(A.sum(axis=[0, 1]) == A.sum())
print(A.mean(), A.sum() / A.numel(), A.mean(axis=0), A.sum(axis=0) / A.shape[0])
sum_A = A.sum(axis=1, keepdims=True)
print(sum_A, sum_A.shape, A / sum_A)
print(A.cumsum(axis=0))
y = torch.ones(3, dtype=torch.float32)
print(x, y, torch.dot(x, y), torch.sum(x * y))
print(A.shape, x.shape, torch.mv(A, x), A @ x)
B = torch.ones(3, 4)
print(torch.mm(A, B), A @ B)
u = torch.tensor([3.0, -4.0])
print(torch.norm(u), torch.abs(u).sum(), torch.norm(torch.ones((4, 9))))

x = torch.arange(4.0)
x.requires_grad_(True)
print(x.grad)
y = 2 * torch.dot(x, x)
print(y)
y.backward()
print(x.grad, x.grad == 4 * x)
x.grad.zero_()
y = x.sum()
y.backward()
print(x.grad)
x.grad.zero_()
y = x * x
y.backward(gradient=torch.ones(len(y)))
print(x.grad)
x.grad.zero_()
y = x * x
u = y.detach()
z = u * x
z.sum().backward()
print(x.grad == u)
x.grad.zero_()
y.sum().backward()
print(x.grad == 2 * x)


def f(a):
    b = a * 2
    while b.norm() < 1000:
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return c


a = torch.tensor(0.7, requires_grad=True)
d = f(a)
d.backward()
print(a.grad, a.grad == d / a)
print(np.allclose(torch.arange(4.).numpy(), np.arange(4.)))
