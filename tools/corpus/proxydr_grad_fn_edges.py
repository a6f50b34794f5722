"""Inspecting the autograd graph: grad_fn names, next_functions walks, _saved_* attributes,
Node and GradientEdge (gradients with respect to an edge, backward(inputs=...)), node pre/post
hooks on AccumulateGrad, output_nr, and the grad_fn names of common nn.functional ops."""
import torch
from torch.autograd.graph import Node, get_gradient_edge, GradientEdge, increment_version
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x.exp()
z = y.sum()
print(issubclass(type(z.grad_fn), Node), isinstance(x.grad_fn, type(None)))
edge = get_gradient_edge(y)
print(type(edge).__name__, edge.node.name(), edge.output_nr)
g = None
print(g)
e2 = get_gradient_edge(x)
print(e2.node.name(), type(e2.node).__name__)
a = torch.tensor([1.0], requires_grad=True)
b = a * 2
print(b._version)
increment_version(b)
print(b._version)
z2 = (x * x).sum()
z2.backward(inputs=[x])
print(x.grad)
w = torch.tensor([3.0], requires_grad=True)
l = (x * w).sum()
l.backward(inputs=[w])
print(w.grad, x.grad)
x.grad = None
torch.autograd.backward([(x ** 2).sum(), (x * 3).sum()])
print(x.grad)
x.grad.zero_()
torch.autograd.backward((x * 2), grad_tensors=torch.tensor([1.0, 0.5]))
print(x.grad)
out = torch.autograd.grad(x * 2, x, grad_outputs=torch.eye(2), is_grads_batched=True)
print(out)
print([(type(n).__name__, k) for n, k in z.grad_fn.next_functions[0][0].next_functions])
fn = (x * 2).grad_fn
print(fn._saved_other, fn._saved_self)
print(type(fn).__name__, type(fn).__module__ if False else "")
q = x.sin()
print(q.grad_fn._saved_self is x, torch.equal(q.grad_fn._saved_self, x))
print(q.output_nr, x.output_nr, x.split(1)[1].output_nr)
mx = x.max(dim=0)
print(mx.values.grad_fn.name(), mx.indices.grad_fn, mx.values.grad_fn._saved_indices if hasattr(mx.values.grad_fn, "_saved_indices") else "n/a")
print(x.grad_fn, x.is_leaf, (x*1).is_leaf, x.detach().is_leaf, x.detach().requires_grad)
acc = (x * 2).grad_fn.next_functions[0][0]
acc.register_prehook(lambda gos: print("acc pre", gos[0].tolist()))
acc.register_hook(lambda gis, gos: print("acc post", gis, gos[0].tolist()))
(x * 2).sum().backward()
print(x.grad)
print(x.sum().grad_fn._saved_self_sym_sizes, x.view(2, 1).grad_fn._saved_self_sym_sizes)
print(x.mean().grad_fn._saved_self_sym_numel if hasattr(x.mean().grad_fn, "_saved_self_sym_numel") else "n/a")
print(torch.nn.functional.linear(torch.ones(1, 2), torch.ones(3, 2, requires_grad=True)).grad_fn.name())
print(torch.nn.functional.relu(x).grad_fn.name(), torch.nn.functional.gelu(x).grad_fn.name(), torch.softmax(x, 0).grad_fn.name())
print(torch.nn.functional.cross_entropy(torch.ones(1, 2, requires_grad=True), torch.tensor([0])).grad_fn.name())
print(torch.nn.functional.mse_loss(x, torch.zeros(2)).grad_fn.name(), x.norm().grad_fn.name(), x[None].grad_fn.name(), x.expand(3, 2).grad_fn.name())
from torch.autograd.graph import get_gradient_edge
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x.exp()
z = (y * 3).sum()
e = get_gradient_edge(y)
print(torch.autograd.grad(z, e, retain_graph=True))
print(torch.autograd.grad(z, [e, get_gradient_edge(x)], retain_graph=True))
print(torch.autograd.grad(z, (x, e), retain_graph=True))
class Two(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        return t * 2, t * 3
    @staticmethod
    def backward(ctx, a, b):
        return a * 2 + b * 3
p, q = Two.apply(x)
print(torch.autograd.grad((p * q).sum(), [get_gradient_edge(q), get_gradient_edge(p)]))
a, b = x.split(1)
print(torch.autograd.grad((a * 5 + b).sum(), get_gradient_edge(b)))
w = x * 1
l = (w * w).sum()
l.backward(inputs=[get_gradient_edge(x)])
print(x.grad)
x.grad = None
u = x.sin()
v = (u * 2).sum()
v.backward(inputs=get_gradient_edge(u))
