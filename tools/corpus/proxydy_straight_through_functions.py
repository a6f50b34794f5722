"""Straight-through estimators as tutorials write them: round / sign / binarize autograd
Functions (save_for_backward, needs_input_grad, once_differentiable, setup_context, mark_dirty,
mark_non_differentiable, set_materialize_grads), x + (hard - x).detach(), 4-bit weight
quantisation, gradient hooks, gradcheck and gradgradcheck."""
import torch

class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output

class SignSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.sign()

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input.abs() > 1] = 0
        return grad_input

class Binarize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, threshold=0.5):
        ctx.threshold = threshold
        ctx.save_for_backward(x)
        return (x > threshold).float()

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        gx = None
        if ctx.needs_input_grad[0]:
            gx = g * (1 - torch.tanh(x - ctx.threshold) ** 2)
        print("needs_input_grad", ctx.needs_input_grad)
        return gx, None

torch.manual_seed(0)
x = torch.tensor([1.7, -0.3, -2.2, 0.6, -1.1, -1.4], requires_grad=True)
y = RoundSTE.apply(x * 3)
print(y)
y.sum().backward()
print(x.grad)

x.grad = None
s = SignSTE.apply(x * 2)
print(s)
(s * torch.arange(6.)).sum().backward()
print(x.grad)

x.grad = None
b = Binarize.apply(torch.sigmoid(x), 0.5)
print(b, b.dtype, b.grad_fn.__class__.__name__)
b.sum().backward()
print(x.grad)

# straight-through with detach
x2 = torch.linspace(-2, 2, 9, requires_grad=True)
hard = (x2 > 0).float()
st = x2 + (hard - x2).detach()
print(st)
(st ** 2).sum().backward()
print(x2.grad)

# quantization with STE
def quantize(w, bits=4):
    scale = w.abs().max() / (2 ** (bits - 1) - 1)
    q = torch.clamp(torch.round(w / scale), -(2 ** (bits - 1)), 2 ** (bits - 1) - 1) * scale
    return w + (q - w).detach()

w = torch.sin(torch.arange(12.)).view(3, 4).requires_grad_()
qw = quantize(w)
print(torch.unique(qw.detach() / (w.detach().abs().max() / 7)).round())
qw.pow(2).mean().backward()
print(torch.allclose(w.grad, 2 * qw.detach() / 12))

# gradcheck on a custom function
class Clip(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return x.clamp(lo, hi)
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        mask = (x >= ctx.lo) & (x <= ctx.hi)
        return g * mask, None, None

xx = torch.tensor([-0.7, 0.2, 0.35, 1.5], dtype=torch.double, requires_grad=True)
print(torch.autograd.gradcheck(lambda t: Clip.apply(t, -0.5, 1.0), (xx,)))
try:
    RoundSTE.apply(torch.ones(2), 3)
except Exception as e:
    print(type(e).__name__, str(e)[:70])

# --- newer autograd.Function features ---
from torch.autograd.function import once_differentiable
import torch.nn.functional as F

class STEFunc(torch.autograd.Function):
    @staticmethod
    def forward(x, threshold):
        return (x > threshold).to(x.dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, threshold = inputs
        ctx.save_for_backward(x)
        ctx.threshold = threshold

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return F.hardtanh(grad_output), None

x = torch.tensor([-0.5, 0.2, 0.8, 1.4], requires_grad=True)
y = STEFunc.apply(x, 0.5)
print(y, y.grad_fn.name() if hasattr(y.grad_fn, 'name') else None)
(y * 3).sum().backward()
print(x.grad)

class BinActive(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        size = input.size()
        input = input.sign()
        return input

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input.ge(1)] = 0
        grad_input[input.le(-1)] = 0
        return grad_input

z = torch.tensor([-1.5, -0.3, 0.0, 0.7, 2.0], requires_grad=True)
b = BinActive.apply(z)
print(b)
g, = torch.autograd.grad(b.sum(), z, create_graph=True)
print(g, g.requires_grad)
try:
    g.sum().backward()
except RuntimeError as e:
    print("RuntimeError", str(e)[:80])

class ArgmaxOneHot(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits):
        idx = logits.argmax(-1)
        ctx.mark_non_differentiable(idx)
        oh = F.one_hot(idx, logits.shape[-1]).to(logits.dtype)
        ctx.save_for_backward(F.softmax(logits, -1))
        return oh, idx

    @staticmethod
    def backward(ctx, g_oh, g_idx):
        p, = ctx.saved_tensors
        print("g_idx", g_idx)
        return p * (g_oh - (g_oh * p).sum(-1, keepdim=True))

lg = torch.tensor([[0.1, 2.0, -1.0], [1.0, 0.0, 0.5]], requires_grad=True)
oh, idx = ArgmaxOneHot.apply(lg)
print(oh, idx, idx.requires_grad, oh.requires_grad)
(oh * torch.tensor([1., 2., 3.])).sum().backward()
print(lg.grad)

class NoMaterialize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x.clone(), x.clone() * 2

    @staticmethod
    def backward(ctx, g1, g2):
        print("grads None?", g1 is None, g2 is None)
        out = torch.zeros_like(g1 if g1 is not None else g2)
        if g1 is not None:
            out = out + g1
        if g2 is not None:
            out = out + 2 * g2
        return out

w = torch.ones(3, requires_grad=True)
a, bb = NoMaterialize.apply(w)
bb.sum().backward()
print(w.grad)

class InplaceClamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.mark_dirty(x)
        return x.clamp_(0, 1)

    @staticmethod
    def backward(ctx, g):
        return g

leaf = torch.tensor([-0.5, 0.5, 1.5], requires_grad=True)
t = leaf * 1.0
out = InplaceClamp.apply(t)
print(out is t, out, t._version)
out.sum().backward()
print(leaf.grad)

# double backward through a custom function with differentiable backward
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 3 * x ** 2 * g

c = torch.tensor([1.0, 2.0], requires_grad=True)
y = Cube.apply(c)
g1, = torch.autograd.grad(y.sum(), c, create_graph=True)
g2, = torch.autograd.grad(g1.sum(), c)
print(g1, g2)
print(torch.autograd.gradgradcheck(Cube.apply, (torch.tensor([0.3, -1.2], dtype=torch.double, requires_grad=True),)))

# hooks for straight-through gradient clipping
h = torch.tensor([0.2, -3.0, 0.9], requires_grad=True)
q = h.round()
hq = h + (q - h).detach()
hq.register_hook(lambda g: g.clamp(-0.5, 0.5))
(hq * torch.tensor([1., 2., -3.])).sum().backward()
print(h.grad)
print(torch.autograd.functional.jacobian(lambda t: F.softmax(t / 0.5, -1), torch.tensor([0.1, 0.2, 0.3])))
