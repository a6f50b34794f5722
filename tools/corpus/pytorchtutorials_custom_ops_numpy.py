"""Written for the corpus after pytorch/tutorials' "Python custom operators" pages: a numpy
kernel wrapped with torch.library.custom_op (fake kernel, autograd formula with setup_context,
keyword-only arguments), an op that writes its argument (mutates_args), a Library("DEF") op
with define/impl, torch.ops calls, opcheck, and a small training loop through the custom op."""
import numpy as np
import torch
from torch import Tensor

torch.manual_seed(0)


@torch.library.custom_op("corpuslib::numpy_tanh", mutates_args=())
def numpy_tanh(x: Tensor, *, scale: float = 1.0) -> Tensor:
    return torch.from_numpy(np.tanh(x.detach().numpy()) * scale)


@numpy_tanh.register_fake
def _(x, *, scale=1.0):
    return torch.empty_like(x)


def setup_context(ctx, inputs, keyword_only_inputs, output):
    ctx.save_for_backward(output)
    ctx.scale = keyword_only_inputs["scale"]


def backward(ctx, grad):
    y, = ctx.saved_tensors
    # d/dx scale * tanh(x) = scale * (1 - tanh^2) = scale - y^2 / scale
    return grad * (ctx.scale - y * y / ctx.scale)


numpy_tanh.register_autograd(backward, setup_context=setup_context)

print(numpy_tanh)
print(torch.ops.corpuslib.numpy_tanh.default)
print(torch.ops.corpuslib.numpy_tanh.default._schema)

x = torch.linspace(-2, 2, 7, dtype=torch.float64, requires_grad=True)
y = numpy_tanh(x, scale=2.0)
print(y)
y.sum().backward()
print(x.grad)
expected = 2.0 * (1 - torch.tanh(x.detach()) ** 2)
print("grad ok:", torch.allclose(x.grad, expected))
print("gradcheck:", torch.autograd.gradcheck(lambda t: numpy_tanh(t, scale=0.5), (x,)))
print(torch.library.opcheck(numpy_tanh, (torch.randn(3, requires_grad=True),), {"scale": 3.0}))


@torch.library.custom_op("corpuslib::numpy_clip_", mutates_args={"x"})
def numpy_clip_(x: Tensor, lo: float, hi: float) -> None:
    np.clip(x.numpy(), lo, hi, out=x.numpy())


t = torch.tensor([-3.0, -0.5, 0.25, 4.0])
before = t._version
numpy_clip_(t, -1.0, 1.0)
print(t, "version bumped:", t._version > before)
print(torch.ops.corpuslib.numpy_clip_.default._schema)

lib = torch.library.Library("corpusdef", "DEF")
lib.define("axpy(Tensor x, Tensor y, float a=1.0) -> Tensor")
lib.impl("axpy", lambda x, y, a=1.0: a * x + y, "CompositeImplicitAutograd")
u = torch.ones(3, requires_grad=True)
v = torch.arange(3.0)
w = torch.ops.corpusdef.axpy(u, v, a=3.0)
print(w, w.grad_fn is not None)
w.sum().backward()
print(u.grad)
try:
    torch.ops.corpusdef.axpy(u, v, 1.0, 2.0)
except RuntimeError as e:
    print("RuntimeError:", str(e).split(".")[0])
print(torch.ops.aten.add.Tensor(v, v, alpha=2), torch.ops.aten.sum.dim_IntList(v.view(3, 1), [0]))

# a tiny regression through the custom op
model = torch.nn.Linear(3, 1).double()
with torch.no_grad():               # (fixed weights: the two libraries' random streams differ)
    model.weight.copy_(torch.tensor([[0.1, 0.2, -0.3]]))
    model.bias.fill_(0.05)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.sin(torch.arange(96, dtype=torch.float64)).reshape(32, 3) * 2
target = numpy_tanh(data @ torch.tensor([[0.5], [-1.0], [0.25]], dtype=torch.float64)).detach()
for step in range(30):
    opt.zero_grad()
    loss = ((numpy_tanh(model(data)) - target) ** 2).mean()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(step, f"{loss.item():.6f}")
print("final loss below 0.05:", loss.item() < 0.05)
