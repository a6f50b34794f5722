"""Learn-the-basics 'Automatic Differentiation': grad_fn, backward, no_grad/detach, Jacobian products."""
import torch

torch.manual_seed(0)
x = torch.ones(5)
y = torch.zeros(3)
w = torch.randn(5, 3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
z = torch.matmul(x, w) + b
loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
print(f"Gradient function for z = {type(z.grad_fn).__name__}")
print(f"Gradient function for loss = {type(loss.grad_fn).__name__}")

loss.backward()
print(w.grad.shape, b.grad.shape)
expected_b = torch.sigmoid(z.detach()) / 3
print("b.grad is sigmoid(z)/3:", torch.allclose(b.grad, expected_b))
print("rows of w.grad equal b.grad:", torch.allclose(w.grad, b.grad.expand(5, 3)))

z = torch.matmul(x, w) + b
print(z.requires_grad)
with torch.no_grad():
    z = torch.matmul(x, w) + b
print(z.requires_grad)
z = torch.matmul(x, w) + b
z_det = z.detach()
print(z_det.requires_grad)

inp = torch.eye(4, 5, requires_grad=True)
out = (inp + 1).pow(2).t()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"First call\n{inp.grad}")
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nSecond call\n{inp.grad}")
inp.grad.zero_()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nCall after zeroing gradients\n{inp.grad}")

a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
c = (a * a).sum()
g, = torch.autograd.grad(c, a, create_graph=True)
print(g.detach())
g.sum().backward()
print(a.grad)

t = torch.tensor(2.0, requires_grad=True)
u = t * 3
u.retain_grad()
v = u ** 2
v.backward()
print(u.grad, t.grad, u.is_leaf, t.is_leaf)

try:
    v.backward()
except RuntimeError as e:
    print("RuntimeError:", "second time" in str(e))
