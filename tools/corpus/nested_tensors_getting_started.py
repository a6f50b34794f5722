"""The "Getting started with nested tensors" tutorial, both layouts: construction, printing,
sizes, padding, the ops it shows, and gradients through a nested tensor."""
import torch
import torch.nn.functional as F

nt = torch.nested.nested_tensor([torch.arange(12).reshape(2, 6), torch.arange(18).reshape(3, 6)],
                                dtype=torch.float)
print(f"{nt=}")
print(f"{nt.is_nested=} {nt.dim()=} {nt.size(0)=} {nt.size(2)=} {nt.layout=} {nt.dtype=}")
try:
    nt.size(1)
except RuntimeError as error:
    print(f"RuntimeError: {error}")
for i, t in enumerate(nt.unbind()):
    print(f"component {i}: {t.shape}")

padded = torch.nested.to_padded_tensor(nt, padding=0.0)
print(f"{padded=}")
print(torch.nested.to_padded_tensor(nt, -1.0, (2, 4, 8)))

# ops on nested tensors: elementwise, linear, softmax, transpose, reshape, matmul
weight = torch.cos(torch.arange(24.0)).reshape(4, 6)
out = F.linear(nt, weight)
print(out)
print(F.softmax(out, -1))
print(nt.transpose(1, 2).reshape(2, 6, -1, 1).size(1))
print(torch.matmul(nt, nt.transpose(1, 2)))
print(torch.nested.to_padded_tensor(F.relu(nt - 6) * 0.5 + nt.sin(), 0.0))
try:
    nt.exp()
except NotImplementedError as error:
    print(f"NotImplementedError: {str(error).splitlines()[0][:80]}")
try:
    nt + torch.ones(6)
except RuntimeError as error:
    print(f"RuntimeError: {error}")

# gradients: a leaf nested tensor's .grad is a nested tensor
x = torch.nested.nested_tensor([torch.linspace(-1, 1, 6).reshape(2, 3),
                               torch.linspace(0, 2, 12).reshape(4, 3)], dtype=torch.float64,
                              requires_grad=True)
y = F.linear(x, torch.eye(3, dtype=torch.float64) * 2, torch.ones(3, dtype=torch.float64))
print(y)
z = torch.nested.to_padded_tensor(F.softmax(y, -1) * y, 0.0)
print(z.grad_fn.name())
z.sum().backward()
print(x.grad)

# the jagged layout: one ragged dim, values packed with offsets
jt = torch.nested.nested_tensor([torch.arange(6.0).reshape(2, 3), torch.arange(12.0).reshape(4, 3)],
                                layout=torch.jagged)
print(jt)
print(jt.shape[0], jt.shape[2], jt.dim(), jt.layout, jt.is_contiguous())
print(jt.values())
print(jt.offsets())
values = torch.sin(torch.arange(21.0)).reshape(7, 3)
jv = torch.nested.nested_tensor_from_jagged(values, torch.tensor([0, 2, 6, 7]))
print(jv.unbind()[1])
print(torch.nested.to_padded_tensor(jv.softmax(-1).mean(-1, keepdim=True), 0.0).squeeze(-1))
print(torch.nested.masked_select(values, values > 0.5).offsets())
