"""In the style of the pytorch/tutorials recipes swap_tensors.py, module_load_state_dict_tips.py and
changing_default_device.py (written for this corpus): torch.utils.swap_tensors on plain tensors,
Parameters and graph outputs; torch.__future__'s swap and overwrite switches seen through an
optimizer built before a dtype conversion; load_state_dict on the swap path (a meta skeleton
loaded with assign=True, Tensor.module_load and a subclass overriding it through
__torch_function__); checkpoints loaded with mmap=True; the default device inside
`with torch.device('meta')`."""
import os
import tempfile

import torch
import torch.nn as nn


def fill(module):
    # weights that do not depend on the random stream
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.linspace(-1.0, 1.0, p.numel()).reshape(p.shape) * (0.5 + 0.25 * i))
    return module


print("-- swap_tensors")
a = torch.arange(4)
b = torch.tensor([[0.5, -1.5], [2.0, 3.0]], dtype=torch.float64)
a_id = id(a)
torch.utils.swap_tensors(a, b)
print(id(a) == a_id, a, b, a.dtype, b.dtype, a.shape, b.stride())

p = nn.Parameter(torch.tensor([1.0, 2.0, 3.0]))
p.note = "was a parameter"
t = torch.tensor([4.0, 5.0], requires_grad=True)
(t ** 2).sum().backward()
torch.utils.swap_tensors(p, t)
print(type(p).__name__, type(t).__name__, p.note if hasattr(p, "note") else "-", t.note)
print(p, p.grad, t.grad)

x = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
u = torch.tensor([0.25, 0.75, -1.0], requires_grad=True)
y1, y2 = x.exp(), u * 3
torch.utils.swap_tensors(y1, y2)
print(y1.grad_fn.name(), y2.grad_fn.name())
(y1 * y2).sum().backward()
print(x.grad, u.grad)

keep = torch.zeros(2)
import weakref
ref = weakref.ref(keep)
try:
    torch.utils.swap_tensors(keep, torch.ones(2))
except RuntimeError as e:
    print("RuntimeError:", e)
del ref

print("-- optimizer built before a conversion")
for swap in (False, True):
    torch.__future__.set_swap_module_params_on_conversion(swap)
    model = fill(nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = [id(q) for q in model.parameters()]
    model(torch.ones(2, 3)).sum().backward()
    grad_obj = model[0].weight.grad
    model.double()
    print(swap, [id(q) for q in model.parameters()] == before, model[0].weight.dtype,
          model[0].weight.grad.dtype, model[0].weight.grad is grad_obj)
    opt.step()
    print(model[2].weight, opt.param_groups[0]["params"][2] is model[2].weight)
torch.__future__.set_swap_module_params_on_conversion(False)
print(torch.__future__.get_swap_module_params_on_conversion(),
      torch.__future__.get_overwrite_module_params_on_conversion())

torch.__future__.set_overwrite_module_params_on_conversion(True)
model = fill(nn.Linear(2, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
old = model.weight
model.double()
print(model.weight is old, old.dtype, model.weight.dtype, opt.param_groups[0]["params"][0] is old)
torch.__future__.set_overwrite_module_params_on_conversion(False)

print("-- load_state_dict on the swap path")
src = fill(nn.Linear(3, 2))
torch.__future__.set_swap_module_params_on_conversion(True)
dst = nn.Linear(3, 2)
w = dst.weight
print(dst.load_state_dict(src.state_dict()))
print(dst.weight is w, dst.weight, dst.bias)
with torch.device("meta"):
    skeleton = nn.Linear(3, 2)
    print(torch.get_default_device(), skeleton.weight.device, torch.ones(1, device="cpu").device)
print(skeleton.load_state_dict(src.state_dict(), assign=True))
print(skeleton.weight.device, skeleton.weight.is_leaf, skeleton.weight.requires_grad,
      type(skeleton.weight).__name__)
print(skeleton(torch.ones(1, 3)))


class Halved(torch.Tensor):
    """A tensor type that stores half of what a state dict gives it."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.module_load:
            return args[1].detach() / 2
        return super().__torch_function__(func, types, args, kwargs)


h = torch.zeros(2).as_subclass(Halved)
print(h.module_load(torch.tensor([2.0, 6.0])), torch.zeros(2).module_load(torch.tensor([1.0, 2.0])))
buf_model = nn.Module()
buf_model.register_buffer("scale", torch.zeros(2).as_subclass(Halved))
print(buf_model.load_state_dict({"scale": torch.tensor([4.0, 8.0])}))
print(type(buf_model.scale).__name__, buf_model.scale.as_subclass(torch.Tensor))
torch.__future__.set_swap_module_params_on_conversion(False)

print("-- checkpoint tips")
folder = tempfile.mkdtemp()
path = os.path.join(folder, "ckpt.pt")
big = fill(nn.Sequential(*[nn.Linear(2, 2) for _ in range(3)]))
torch.save(big.state_dict(), path)
state = torch.load(path, mmap=True, weights_only=True)
print(list(state)[:3], state["2.bias"])
with torch.device("meta"):
    shell = nn.Sequential(*[nn.Linear(2, 2) for _ in range(3)])
with __import__("warnings").catch_warnings(record=True) as caught:
    __import__("warnings").simplefilter("always")
    print(shell.load_state_dict(state))
print(len(caught), "copying from a non-meta parameter" in str(caught[0].message), shell[0].weight.is_meta)
print(shell.load_state_dict(state, assign=True), shell[2].bias)
opt = torch.optim.SGD(shell.parameters(), lr=0.5)
shell(torch.ones(1, 2)).sum().backward()
opt.step()
print(shell[2].bias)
os.remove(path)
os.rmdir(folder)
torch.set_default_device("meta")
print(torch.get_default_device(), torch.empty(2).is_meta)
torch.set_default_device(None)
print(torch.get_default_device())
