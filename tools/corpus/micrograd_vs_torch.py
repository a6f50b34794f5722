"""micrograd-style test: a tiny scalar autograd engine checked against PyTorch's values and gradients."""
import math

import torch


class Scalar:
    """A scalar that remembers how it was computed, for a reverse sweep."""

    def __init__(self, data, parents=(), local_grads=()):
        self.data = data
        self.grad = 0.0
        self.parents = parents
        self.local_grads = local_grads

    @staticmethod
    def lift(x):
        return x if isinstance(x, Scalar) else Scalar(x)

    def __add__(self, other):
        other = Scalar.lift(other)
        return Scalar(self.data + other.data, (self, other), (1.0, 1.0))

    def __mul__(self, other):
        other = Scalar.lift(other)
        return Scalar(self.data * other.data, (self, other), (other.data, self.data))

    def __pow__(self, k):
        return Scalar(self.data ** k, (self,), (k * self.data ** (k - 1),))

    def relu(self):
        return Scalar(max(0.0, self.data), (self,), (float(self.data > 0),))

    def tanh(self):
        t = math.tanh(self.data)
        return Scalar(t, (self,), (1 - t * t,))

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-Scalar.lift(other))

    def __truediv__(self, other):
        return self * Scalar.lift(other) ** -1

    __radd__ = __add__
    __rmul__ = __mul__

    def __rsub__(self, other):
        return Scalar.lift(other) - self

    def __rtruediv__(self, other):
        return Scalar.lift(other) / self

    def backward(self):
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
            elif id(node) not in seen:
                seen.add(id(node))
                stack.append((node, True))
                stack.extend((p, False) for p in node.parents)
        self.grad = 1.0
        for node in reversed(order):
            for parent, local in zip(node.parents, node.local_grads):
                parent.grad += local * node.grad


def test_sanity_check():
    x = Scalar(-4.0)
    z = 2 * x + 2 + x
    q = z.relu() + z * x
    h = (z * z).relu()
    y = h + q + q * x
    y.backward()
    xmg, ymg = x, y

    x = torch.Tensor([-4.0]).double()
    x.requires_grad = True
    z = 2 * x + 2 + x
    q = z.relu() + z * x
    h = (z * z).relu()
    y = h + q + q * x
    y.backward()
    xpt, ypt = x, y

    assert ymg.data == ypt.data.item()
    assert xmg.grad == xpt.grad.item()
    print('sanity forward', ypt.data.item(), 'grad', xpt.grad.item())


def test_more_ops():
    a = Scalar(-4.0)
    b = Scalar(2.0)
    c = a + b
    d = a * b + b ** 3
    c += c + 1
    c += 1 + c + (-a)
    d += d * 2 + (b + a).relu()
    d += 3 * d + (b - a).relu()
    e = c - d
    f = e ** 2
    g = f / 2.0
    g += 10.0 / f
    g.backward()
    amg, bmg, gmg = a, b, g

    a = torch.Tensor([-4.0]).double()
    b = torch.Tensor([2.0]).double()
    a.requires_grad = True
    b.requires_grad = True
    c = a + b
    d = a * b + b ** 3
    c = c + c + 1
    c = c + 1 + c + (-a)
    d = d + d * 2 + (b + a).relu()
    d = d + 3 * d + (b - a).relu()
    e = c - d
    f = e ** 2
    g = f / 2.0
    g = g + 10.0 / f
    g.backward()
    apt, bpt, gpt = a, b, g

    tol = 1e-6
    assert abs(gmg.data - gpt.data.item()) < tol
    assert abs(amg.grad - apt.grad.item()) < tol
    assert abs(bmg.grad - bpt.grad.item()) < tol
    print(f'more ops forward {gpt.data.item():.4f} grads {apt.grad.item():.4f} {bpt.grad.item():.4f}')


def test_neuron():
    w = [Scalar(0.3), Scalar(-0.7), Scalar(0.2)]
    x = [Scalar(1.5), Scalar(0.5), Scalar(-2.0)]
    b = Scalar(0.1)
    act = sum((wi * xi for wi, xi in zip(w, x)), b).tanh()
    act.backward()

    wt = torch.tensor([0.3, -0.7, 0.2], dtype=torch.float64, requires_grad=True)
    xt = torch.tensor([1.5, 0.5, -2.0], dtype=torch.float64, requires_grad=True)
    bt = torch.tensor(0.1, dtype=torch.float64, requires_grad=True)
    out = torch.tanh((wt * xt).sum() + bt)
    out.backward()
    assert abs(out.item() - act.data) < 1e-12
    assert all(abs(wi.grad - g) < 1e-12 for wi, g in zip(w, wt.grad.tolist()))
    assert abs(bt.grad.item() - b.grad) < 1e-12
    print('neuron', round(out.item(), 6), [round(v, 6) for v in xt.grad.tolist()])


test_sanity_check()
test_more_ops()
test_neuron()
print('all micrograd checks agree with torch')
