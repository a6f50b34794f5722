import torch
from torch.amp import custom_fwd, custom_bwd

class MyMM(torch.autograd.Function):
    @staticmethod
    @custom_fwd(device_type="cpu")
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        print("fwd dtypes", a.dtype, b.dtype, torch.is_autocast_enabled("cpu"))
        return a.mm(b)
    @staticmethod
    @custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        print("bwd dtypes", grad.dtype, a.dtype, torch.is_autocast_enabled("cpu"))
        return grad.mm(b.t()), a.t().mm(grad)

class F32Op(torch.autograd.Function):
    @staticmethod
    @custom_fwd(device_type="cpu", cast_inputs=torch.float32)
    def forward(ctx, x):
        print("f32 fwd", x.dtype, torch.is_autocast_enabled("cpu"))
        ctx.save_for_backward(x)
        return x.exp()
    @staticmethod
    @custom_bwd(device_type="cpu")
    def backward(ctx, g):
        x, = ctx.saved_tensors
        print("f32 bwd", g.dtype)
        return g * x.exp()

a = torch.linspace(-1, 1, 6).reshape(2, 3).requires_grad_()
b = torch.linspace(0.5, 1.5, 12).reshape(3, 4).requires_grad_()
with torch.autocast("cpu", dtype=torch.bfloat16):
    out = MyMM.apply(a, b)
    print(out.dtype)
    h = a @ b
    print(h.dtype)
    e = F32Op.apply(h)
    print(e.dtype)
    loss = e.sum() + out.float().sum()
loss.backward()
print(a.grad.dtype, a.grad)
print(b.grad.dtype, b.grad)
