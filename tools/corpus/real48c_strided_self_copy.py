"""Copies between overlapping strided views of one tensor (every other element, a column slice of
a wider matrix, a transposed view), written with indexing and with copy_, as ring buffers and
hand-rolled shift registers do.  PyTorch copies such a source element by element."""
import torch

buf = torch.arange(10.)
buf[::2][1:] = buf[::2][:4]
print("step-2 shift:", buf.tolist())

m = torch.arange(30.).reshape(5, 6)
cols = m[:, :3]
cols[1:] = cols[:4]
print("row shift in a column slice:\n", m)

r = torch.arange(12.).reshape(2, 6)
r[:, 2:5].copy_(r[:, 1:4])
print("copy_ shift:", r.tolist())

t = torch.arange(20.).reshape(4, 5)[:, :3].t()
t[:, 1:] = t[:, :3]
print("transposed shift:\n", t)

# reading the data first (clone) gives the buffered result instead
s = torch.arange(10.)
s[::2][1:] = s[::2][:4].clone()
print("cloned step-2 shift:", s.tolist())

w = torch.linspace(-1, 1, 12, requires_grad=True)
h = (w * 2).reshape(3, 4)
h[:, :2] = h[:, 1:3].clone()
g = h[1:, ::2]
g[1:] = g[:1]
h.sum().backward()
print("values:", [round(v, 3) for v in h.detach().flatten().tolist()])
print("grad:", w.grad.tolist())
