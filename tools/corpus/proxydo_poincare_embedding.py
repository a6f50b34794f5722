import torch
import torch.nn as nn
from torch.autograd import Function

eps = 1e-5

class Arcosh(Function):
    @staticmethod
    def forward(ctx, x):
        x = x.clamp(min=1 + eps)
        z = torch.sqrt(x * x - 1)
        ctx.save_for_backward(z)
        return torch.log(x + z)

    @staticmethod
    def backward(ctx, g):
        z, = ctx.saved_tensors
        z = torch.clamp(z, min=eps)
        return g / z

class PoincareDistance(Function):
    boundary = 1 - eps

    @staticmethod
    def grad(x, v, sqnormx, sqnormv, sqdist, eps):
        alpha = (1 - sqnormx)
        beta = (1 - sqnormv)
        z = 1 + 2 * sqdist / (alpha * beta)
        a = ((sqnormv - 2 * torch.sum(x * v, dim=-1) + 1) / torch.pow(alpha, 2)).unsqueeze(-1).expand_as(x)
        a = a * x - v / alpha.unsqueeze(-1).expand_as(v)
        z = torch.sqrt(torch.pow(z, 2) - 1)
        z = torch.clamp(z * beta, min=eps).unsqueeze(-1)
        return 4 * a / z.expand_as(x)

    @staticmethod
    def forward(ctx, u, v, eps=1e-5):
        squnorm = torch.clamp(torch.sum(u * u, dim=-1), 0, 1 - eps)
        sqvnorm = torch.clamp(torch.sum(v * v, dim=-1), 0, 1 - eps)
        sqdist = torch.sum(torch.pow(u - v, 2), dim=-1)
        ctx.eps = eps
        ctx.save_for_backward(u, v, squnorm, sqvnorm, sqdist)
        x = sqdist / ((1 - squnorm) * (1 - sqvnorm)) * 2 + 1
        z = torch.sqrt(torch.pow(x, 2) - 1)
        return torch.log(x + z)

    @staticmethod
    def backward(ctx, g):
        u, v, squnorm, sqvnorm, sqdist = ctx.saved_tensors
        g = g.unsqueeze(-1)
        gu = PoincareDistance.grad(u, v, squnorm, sqvnorm, sqdist, ctx.eps)
        gv = PoincareDistance.grad(v, u, sqvnorm, squnorm, sqdist, ctx.eps)
        return g.expand_as(gu) * gu, g.expand_as(gv) * gv, None


class Embedding(nn.Embedding):
    def __init__(self, size, dim, max_norm=1):
        super().__init__(size, dim, max_norm=max_norm)
        with torch.no_grad():
            self.weight.copy_(0.001 * torch.sin(torch.arange(size * dim, dtype=torch.float).view(size, dim)))

def rsgd_step(p, lr):
    d_p = p.grad.data
    sqnorm = torch.sum(p.data ** 2, dim=-1, keepdim=True)
    d_p.mul_((1 - sqnorm).pow(2) / 4).expand_as(d_p)
    p.data.add_(d_p, alpha=-lr)
    p.data.renorm_(2, 0, 1 - eps)

torch.manual_seed(0)
n, d = 6, 2
model = Embedding(n, d, max_norm=1)
print(model)
pairs = torch.tensor([[0, 1], [0, 2], [1, 3], [2, 4], [3, 5]])
negs = torch.tensor([[0, 5], [1, 4], [2, 5], [3, 0], [4, 1]])
for epoch in range(20):
    model.zero_grad()
    e = model(pairs)
    en = model(negs)
    dpos = PoincareDistance.apply(e[:, 0], e[:, 1])
    dneg = PoincareDistance.apply(en[:, 0], en[:, 1])
    logits = torch.stack([-dpos, -dneg], dim=1)
    loss = nn.functional.cross_entropy(logits, torch.zeros(5, dtype=torch.long))
    loss.backward()
    rsgd_step(model.weight, lr=0.3)
    if epoch % 5 == 0:
        print(epoch, round(loss.item(), 4))
print(model.weight.norm(dim=-1))
print(model.weight.grad.shape, model.weight.grad.dtype)

x = torch.linspace(1.0, 3.0, 5, dtype=torch.float64, requires_grad=True)
y = Arcosh.apply(x)
y.sum().backward()
print(y)
print(x.grad)
print(torch.acosh(x.detach()))

u = torch.tensor([[0.1, 0.2], [0.3, -0.1]], dtype=torch.float64, requires_grad=True)
v = torch.tensor([[0.0, 0.5], [-0.2, 0.4]], dtype=torch.float64, requires_grad=True)
print(torch.autograd.gradcheck(PoincareDistance.apply, (u, v)))
