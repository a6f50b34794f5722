"""Hooks for autograd saved tensors, in the style of PyTorch's tutorial: what grad_fn saves,
hooks on one saved tensor, default hooks for everything saved in a block (printing, counting,
changing what backward sees, saving to disk, save_on_cpu), and disabling them."""
import os
import tempfile
import uuid

import torch

# -- saved tensors -----------------------------------------------------------------------------
x = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], requires_grad=True)
y = x.pow(2)
print(y.grad_fn._saved_self)
print(x.equal(y.grad_fn._saved_self))
print(x is y.grad_fn._saved_self)

y = x.exp()
print(y.equal(y.grad_fn._saved_result))
print(y is y.grad_fn._saved_result)
print(type(y.grad_fn._raw_saved_result).__name__)


# -- hooks on one saved tensor -----------------------------------------------------------------
def pack_hook(x):
    print("Packing", x)
    return x


def unpack_hook(x):
    print("Unpacking", x)
    return x


x = torch.ones(5, requires_grad=True)
y = x.pow(2)
y.grad_fn._raw_saved_self.register_hooks(pack_hook, unpack_hook)
print(y.grad_fn._saved_self)
y.sum().backward()
print(x.grad)
try:
    y.grad_fn._raw_saved_self.register_hooks(pack_hook, unpack_hook)
except RuntimeError as e:
    print("RuntimeError:", str(e)[:60])

# -- default hooks: everything saved inside the block ---------------------------------------------
a = torch.ones(5, requires_grad=True)
b = torch.ones(5, requires_grad=True) * 2
with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
    y = a * b
y.sum().backward()
print(a.grad)

# counting
packed, unpacked = [], []


def counting_pack(t):
    packed.append(tuple(t.shape))
    return t


def counting_unpack(t):
    unpacked.append(tuple(t.shape))
    return t


w = torch.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
v = torch.tensor([1.0, -2.0])
with torch.autograd.graph.saved_tensors_hooks(counting_pack, counting_unpack):
    z = (w * v).sin().exp().sum()
print("packed", len(packed), "unpacked", len(unpacked))
z.backward(retain_graph=True)
print("after backward: unpacked", len(unpacked))
z.backward()
print("after a second backward: unpacked", len(unpacked))
print(w.grad)


# what unpack returns is what backward uses
def pack_numel(t):
    return t.numel()


def unpack_twos(n):
    return torch.full((n,), 2.0)


c = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
d = torch.tensor([4.0, 5.0, 6.0], requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(pack_numel, unpack_twos):
    e = c * d
e.sum().backward()
print(c.grad, d.grad)

try:
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: "not a tensor"):
        e = c * d
    e.sum().backward()
except TypeError as err:
    print("TypeError:", err)

# -- saving on disk ------------------------------------------------------------------------------
tmp_dir_obj = tempfile.TemporaryDirectory()
tmp_dir = tmp_dir_obj.name


class SelfDeletingTempFile:
    def __init__(self):
        self.name = os.path.join(tmp_dir, str(uuid.uuid4()))

    def __del__(self):
        os.remove(self.name)


def pack_to_disk(tensor):
    temp_file = SelfDeletingTempFile()
    torch.save(tensor.detach(), temp_file.name)
    return temp_file


def unpack_from_disk(temp_file):
    return torch.load(temp_file.name)


x = torch.tensor([0.1, 0.2, 0.3, 0.4], requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(pack_to_disk, unpack_from_disk):
    y = x.pow(2).tanh() * x.sigmoid()
print("files on disk:", len(os.listdir(tmp_dir)) > 0)
y.sum().backward()
print(x.grad)
del y
print("files left:", len(os.listdir(tmp_dir)))

# -- save_on_cpu on a small network ----------------------------------------------------------------
net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
with torch.no_grad():
    for i, p in enumerate(net.parameters()):
        p.copy_(torch.linspace(-1.0, 1.0, p.numel()).reshape(p.shape) * (0.5 + 0.1 * i))
inp = torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]])
with torch.autograd.graph.save_on_cpu(pin_memory=False):
    loss = net(inp).pow(2).mean()
loss.backward()
print(round(loss.item(), 5))
print(net[0].weight.grad)

# -- disabling them --------------------------------------------------------------------------------
with torch.autograd.graph.disable_saved_tensors_hooks("saved tensor hooks are off here"):
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
            pass
    except RuntimeError as err:
        print("RuntimeError:", err)

# -- the graph's nodes --------------------------------------------------------------------------
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 3
print(isinstance(y.grad_fn, torch.autograd.graph.Node))
edge = torch.autograd.graph.get_gradient_edge(y)
print(edge.node.name(), edge.output_nr)
print(torch.autograd.graph.get_gradient_edge(x).node.name())
