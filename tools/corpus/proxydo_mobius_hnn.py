import torch
import torch.nn as nn
import torch.nn.functional as F
import math

MIN_NORM = 1e-15

class Artanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.clamp(-1 + 1e-15, 1 - 1e-15)
        ctx.save_for_backward(x)
        z = x.double()
        return (torch.log_(1 + z).sub_(torch.log_(1 - z))).mul_(0.5).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output / (1 - input ** 2)

def artanh(x):
    return Artanh.apply(x)

def tanh(x, clamp=15):
    return x.clamp(-clamp, clamp).tanh()

def mobius_add(x, y, c):
    x2 = x.pow(2).sum(dim=-1, keepdim=True)
    y2 = y.pow(2).sum(dim=-1, keepdim=True)
    xy = (x * y).sum(dim=-1, keepdim=True)
    num = (1 + 2 * c * xy + c * y2) * x + (1 - c * x2) * y
    denom = 1 + 2 * c * xy + c ** 2 * x2 * y2
    return num / denom.clamp_min(MIN_NORM)

def expmap0(u, c):
    sqrt_c = c ** 0.5
    u_norm = torch.clamp_min(u.norm(dim=-1, p=2, keepdim=True), MIN_NORM)
    gamma_1 = tanh(sqrt_c * u_norm) * u / (sqrt_c * u_norm)
    return gamma_1

def logmap0(p, c):
    sqrt_c = c ** 0.5
    p_norm = p.norm(dim=-1, p=2, keepdim=True).clamp_min(MIN_NORM)
    scale = 1. / sqrt_c * artanh(sqrt_c * p_norm) / p_norm
    return scale * p

def proj(x, c):
    norm = torch.clamp_min(x.norm(dim=-1, keepdim=True, p=2), MIN_NORM)
    maxnorm = (1 - 4e-3) / (c ** 0.5)
    cond = norm > maxnorm
    projected = x / norm * maxnorm
    return torch.where(cond, projected, x)

def mobius_matvec(m, x, c):
    sqrt_c = c ** 0.5
    x_norm = x.norm(dim=-1, keepdim=True, p=2).clamp_min(MIN_NORM)
    mx = x @ m.transpose(-1, -2)
    mx_norm = mx.norm(dim=-1, keepdim=True, p=2).clamp_min(MIN_NORM)
    res_c = tanh(mx_norm / x_norm * artanh(sqrt_c * x_norm)) * mx / (mx_norm * sqrt_c)
    cond = (mx == 0).prod(-1, keepdim=True, dtype=torch.uint8)
    res_0 = torch.zeros(1, dtype=res_c.dtype, device=res_c.device)
    res = torch.where(cond.bool(), res_0, res_c)
    return res

def sqdist(p1, p2, c):
    sqrt_c = c ** 0.5
    dist_c = artanh(sqrt_c * mobius_add(-p1, p2, c).norm(dim=-1, p=2, keepdim=False))
    dist = dist_c * 2 / sqrt_c
    return dist ** 2

class HypLinear(nn.Module):
    def __init__(self, in_features, out_features, c, use_bias=True):
        super().__init__()
        self.c = c
        self.weight = nn.Parameter(torch.Tensor(out_features, in_features))
        self.bias = nn.Parameter(torch.Tensor(out_features))
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.xavier_uniform_(self.weight, gain=math.sqrt(2))
        nn.init.constant_(self.bias, 0)
        with torch.no_grad():
            n = self.weight.numel()
            self.weight.copy_(0.3 * torch.cos(torch.arange(n, dtype=torch.float32)).reshape(self.weight.shape))

    def forward(self, x):
        drop_weight = F.dropout(self.weight, 0.0, training=self.training)
        mv = mobius_matvec(drop_weight, x, self.c)
        res = proj(mv, self.c)
        bias = proj(expmap0(self.bias.view(1, -1), self.c), self.c)
        res = proj(mobius_add(res, bias, self.c), self.c)
        return res

    def extra_repr(self):
        return 'in_features={}, out_features={}, c={}'.format(self.weight.shape[1], self.weight.shape[0], self.c)

x = torch.linspace(-0.5, 0.5, 12).view(4, 3)
y = torch.sin(torch.arange(12.)).view(4, 3) * 0.3
print(mobius_add(x, y, 1.0))
print(mobius_add(x, -x, 1.0).abs().max())
print(expmap0(y, 1.0))
print((logmap0(expmap0(y, 1.0), 1.0) - y).abs().max() < 1e-6)
layer = HypLinear(3, 2, c=1.0)
print(layer)
out = layer(expmap0(x, 1.0))
print(out, out.shape)
loss = sqdist(out, torch.zeros_like(out), 1.0).mean()
loss.backward()
print(loss)
print(layer.weight.grad)
print(layer.bias.grad)
a = torch.tensor([0.3, -0.9999999, 0.5], dtype=torch.float64, requires_grad=True)
r = artanh(a)
r.sum().backward()
print(r, a.grad)
print(torch.atanh(torch.tensor([0.5, 1.0, -1.0, 2.0])))
